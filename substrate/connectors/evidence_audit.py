"""Audit the evidence of git-sourced edges against the repository (issue 9).

Every ``evidence_ref`` (and every ref in ``evidence_refs``) of a relationship a git source
asserted, live or closed, must resolve: ``path#L<line>@<commit>`` names a file that exists at
that commit (``git show <commit>:<path>``), the line is in range, and the line states the fact
- at least one key token of the fact (a name of either end, or an address/host/port/value
property) is on it. Document-to-chunk structure edges cite ``path#chunkN`` (a segment of a
document, not a line stating a fact): they are counted apart (``chunk_refs``). Lines are
compared case-insensitively with punctuation removed, so
``BALANCES_API_ADDR: "balancereader:8080"`` states ``DEPENDS_ON service:balancereader``.
A folder's membership (``module:src-e2e -[PART_OF]-> repo:...`` cited by the first line of
``src/e2e/README.md``) is stated by where the cited file lives, not by its line: such a ref
resolves when the file's folder is the member's path (counted in ``by_location``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from substrate.connectors.gitcmd import GitError, run_git

REF = re.compile(r"^(?P<path>.+)#L(?P<line>\d+)@(?P<commit>[0-9a-f]{4,40})$")
CHUNK_REF = re.compile(r"^.+#chunk\d+(-chunk\d+)?$")  # chunk structure, not a stated fact
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_FACT_PROPS = ("address", "host", "port", "var", "configmap", "api", "handle", "pattern", "section",
               "value", "image", "name", "url", "path")
EXAMPLES = 10
LOCATION_FACTS = frozenset({"PART_OF"})  # a folder's membership: stated by the file's place


def squash(text: str) -> str:
    """Lower case without punctuation or spaces: how a token and a line are compared."""
    return _NON_ALNUM.sub("", text.lower())


def key_tokens(edge: dict[str, Any]) -> set[str]:
    """What a line proving the edge may name: either end (ceid tail and name, each part of a
    dotted/slashed name too) and the scalar fact properties."""
    out: set[str] = set()
    for end in ("src", "dst"):
        ceid = str(edge.get(end) or "")
        tail = ceid.split(":", 1)[-1]
        for text in (tail, str(edge.get(f"{end}_name") or "")):
            out.add(text)
            out.update(p for p in re.split(r"[/.@:]", text) if len(p) >= 2)
    props = edge.get("props") or {}
    for key in _FACT_PROPS:
        value = props.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            out.add(str(value))
    return {s for s in (squash(t) for t in out) if len(s) >= 2}


def stated_by_location(edge: dict[str, Any], path: str) -> bool:
    """A membership fact whose cited file lies in (or below) the member's folder (the
    member's ceid is the folder path as a slug: ``module:src-e2e`` for ``src/e2e/README.md``
    or ``src/e2e/tests/run.py``)."""
    tail = squash(str(edge.get("src") or "").split(":", 1)[-1])
    folder = posixpath.dirname(path)
    folders = set()
    while folder:
        folders.add(squash(folder))
        folder = posixpath.dirname(folder)
    return edge.get("type") in LOCATION_FACTS and bool(tail) and tail in folders


@dataclass
class Failure:
    ref: str
    reason: str
    fact: str
    line: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"ref": self.ref, "reason": self.reason, "fact": self.fact, "line": self.line}


@dataclass
class AuditReport:
    source: str
    refs: int = 0
    resolved: int = 0
    edges: int = 0
    chunk_refs: int = 0  # ``path#chunkN`` of document/chunk structure edges: counted apart
    by_location: int = 0  # resolved refs whose file's folder states the fact (PART_OF)
    failures: list[Failure] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def share(self) -> float:
        return self.resolved / self.refs if self.refs else 1.0

    def fail(self, failure: Failure) -> None:
        self.reasons[failure.reason] = self.reasons.get(failure.reason, 0) + 1
        if len(self.failures) < EXAMPLES:
            self.failures.append(failure)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "edges": self.edges, "refs": self.refs,
                "chunk_refs": self.chunk_refs, "by_location": self.by_location,
                "resolved": self.resolved, "share": round(self.share, 6),
                "failure_reasons": self.reasons,
                "examples": [f.as_dict() for f in self.failures]}


def read_blobs(repo: Path, specs: Iterable[str]) -> dict[str, str | None]:
    """``commit:path -> text`` (``None`` when missing) with one ``git cat-file --batch``."""
    todo = list(dict.fromkeys(specs))
    if not todo:
        return {}
    out = run_git(repo, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in todo).encode())
    texts: dict[str, str | None] = {}
    pos = 0
    for spec in todo:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("utf-8", "replace")
        pos = end + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            texts[spec] = None
            continue
        parts = header.split()
        size = int(parts[2])
        texts[spec] = (out[pos:pos + size].decode("utf-8", "replace")
                       if parts[1] == "blob" else None)
        pos += size + 1
    return texts


def audit_edges(repo: Path, source: str, edges: list[dict[str, Any]]) -> AuditReport:
    """Check every ref of ``edges`` (rows of ``temporal/evidence_edges``) against ``repo``."""
    report = AuditReport(source=source, edges=len(edges))
    checks: list[tuple[str, dict[str, Any]]] = []
    for edge in edges:
        refs = [edge.get("evidence_ref"), *(edge.get("evidence_refs") or [])]
        for ref in dict.fromkeys(str(r) for r in refs if r):
            if CHUNK_REF.match(ref):
                report.chunk_refs += 1
            else:
                checks.append((ref, edge))
    parsed = {ref: REF.match(ref) for ref, _ in checks}
    texts = read_blobs(repo, (f"{m['commit']}:{m['path']}" for m in parsed.values() if m))
    for ref, edge in checks:
        report.refs += 1
        fact = f"{edge['src']} -[{edge['type']}]-> {edge['dst']}"
        match = parsed[ref]
        if match is None:
            report.fail(Failure(ref, "not path#L<line>@<commit>", fact))
            continue
        text = texts.get(f"{match['commit']}:{match['path']}")
        if text is None:
            report.fail(Failure(ref, "no such path at that commit", fact))
            continue
        lines = text.splitlines()
        line = int(match["line"])
        if not 1 <= line <= len(lines):
            report.fail(Failure(ref, "line out of range", fact, f"the file has {len(lines)}"))
            continue
        said = squash(lines[line - 1])
        if stated_by_location(edge, match["path"]):
            report.by_location += 1
        elif not any(token in said for token in key_tokens(edge)):
            report.fail(Failure(ref, "line does not state the fact", fact,
                                lines[line - 1].strip()[:160]))
            continue
        report.resolved += 1
    return report


def source_of(repo: Path) -> str:
    """The source id a replay of ``repo`` writes (see :func:`git_ingest.ingest_git`)."""
    return f"git:{repo.resolve().name}"


def check_repo(repo: Path) -> None:
    """Raise :class:`GitError` unless ``repo`` is a git checkout."""
    run_git(repo, "rev-parse", "--git-dir")


__all__ = ["AuditReport", "GitError", "audit_edges", "check_repo", "key_tokens", "source_of"]
