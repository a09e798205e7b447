"""The devset question set (``tests/data/devset_qa/<repo>.jsonl``, issue 8): loading, the clone
of each bundle, resolving ``path#Lline@commit`` references in it, and scoring an answer of
``POST /search`` against the gold (exact answer and evidence), shared by the unit test, the
benchmark and the smoke test.

Gold answers were written by reading the repositories (git log -p / show / blame), never by
running the product. Answer kinds:

* ``entities``: every name of ``all`` is mentioned (an item may be a list of aliases), none of
  ``none`` is;
* ``value``: one of ``any`` is mentioned (a password inside a URL counts in the masked form the
  connectors store, ``postgres://user:***@db/app``: a credential is never served);
* ``date``: a date within ``tolerance_days`` of ``date`` is mentioned (ISO or "Month D, YYYY");
* ``rationale``: the ADR (``adr``, e.g. "0005" or "ADR 5") and at least ``min_phrases`` of
  ``phrases`` are mentioned (the reason, not only the title);
* ``nobody``: the answer says no owner is recorded and mentions none of ``none``.

An answer is never right (nor counted as answered) when it is empty, "No grounded answer", a
bare listing of retrieval hits ("Most relevant evidence: ...") or a sentence ending on a blank.
Evidence is right when a citation's ``evidence_ref`` is a gold ``path`` + ``line`` (any commit),
or resolves in the bundle (``git show commit:path``) to a line holding a gold ``token``; a range
``path#L12-L14@commit`` (a quoted sentence wrapped over three lines) names each of its lines.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from substrate.connectors.endpoints import URL_PASSWORD
from substrate.settings import PROJECT_ROOT
from tests.support.devset import DEVSET, clone

__all__ = ["DEVSET", "clone"]

DATA = PROJECT_ROOT / "tests" / "data" / "devset_qa"
REPOS = ("bank-of-anthos", "retail-store-sample-app", "manage.get.gov", "fac")
FAMILIES = ("dependencies", "callers", "ownership", "attributes", "decisions", "changes", "when")
KINDS = ("entities", "value", "date", "rationale", "nobody")
REF = re.compile(r"^(?P<path>.+?)#L(?P<line>\d+)(?:-L?(?P<last>\d+))?"
                 r"@(?P<commit>[0-9a-fA-F]{7,40})$")
EMPTY = re.compile(r"(no grounded answer|\b(by|on|is|are|of|to|from)\s+[.,;]|^\s*$)", re.I)
# retrieval hits are not an answer: "Most relevant evidence: ..." or the composer's fallback
LISTING = re.compile(r"^\s*(most relevant evidence:|no family answered)", re.I)
NOTHING = re.compile(r"^\s*no\b[^.]*\b(?:is|are)\s+recorded\b", re.I)
CITE_MARK = re.compile(r"\[\d+\]")  # "ledger-db[1]": the marker is not part of the name
NOBODY = re.compile(r"\b(no (code )?owners?|nobody|no one|not recorded|unowned|none recorded"
                    r"|no ownership)\b", re.I)
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]


def load(repo: str | None = None) -> list[dict[str, Any]]:
    """Every question (of one repository)."""
    rows: list[dict[str, Any]] = []
    for name in REPOS if repo is None else (repo,):
        text = (DATA / f"{name}.jsonl").read_text()
        rows += [json.loads(line) for line in text.splitlines() if line.strip()]
    return rows


@lru_cache(maxsize=4096)
def blob_lines(repo: Path, commit: str, path: str) -> tuple[str, ...] | None:
    """The lines of ``path`` at ``commit`` in ``repo``, None if either does not exist."""
    out = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                         capture_output=True, text=True, errors="replace")
    return tuple(out.stdout.splitlines()) if out.returncode == 0 else None


def parse_ref(ref: str) -> tuple[str, int, str] | None:
    m = REF.match(ref.strip())
    return (m["path"], int(m["line"]), m["commit"]) if m else None


def ref_lines(ref: str) -> range:
    """The lines a reference names: ``#L12`` one, ``#L12-L14`` (a wrapped sentence) three."""
    m = REF.match(ref.strip())
    if not m:
        return range(0)
    first = int(m["line"])
    return range(first, max(first, int(m["last"] or first)) + 1)


def _norm(text: str) -> str:
    text = CITE_MARK.sub(" ", text)
    text = re.sub(r"[`*_\[\]()\"“”’']", "", text.lower().replace("’", "'"))
    return re.sub(r"\s+", " ", text)


def mentions(text: str, name: str) -> bool:
    """``name`` occurs in ``text`` as a whole token (case-insensitive; "@" optional)."""
    needle = _norm(name.lstrip("@"))
    return re.search(rf"(?<![\w-]){re.escape(needle)}(?![\w-])", _norm(text)) is not None


def _any(text: str, item: str | list[str]) -> bool:
    return any(mentions(text, n) for n in ([item] if isinstance(item, str) else item))


def _dates(text: str) -> list[date]:
    found = [date(int(y), int(m), int(d)) for y, m, d in
             re.findall(r"\b(\d{4})-(\d{2})-(\d{2})", text) if 1 <= int(m) <= 12]
    for mon, day, year in re.findall(r"\b([A-Za-z]+)\s+(\d{1,2}),?\s+(\d{4})", text):
        if mon.lower() in MONTHS:
            found.append(date(int(year), MONTHS.index(mon.lower()) + 1, int(day)))
    return found


def _adr_cited(text: str, adr: str) -> bool:
    n = str(int(adr))
    return bool(re.search(rf"(adr[\s:#-]*0*{n}\b|\b0*{n}-[a-z]|\b{adr}\b)", text, re.I))


def answer_right(gold: dict[str, Any], text: str) -> bool:
    """Whether the answer text states the gold answer (see the module doc)."""
    if EMPTY.search(text) or LISTING.search(text):
        return False
    kind = gold["kind"]
    if kind == "entities":
        return all(_any(text, n) for n in gold["all"]) and not any(
            mentions(text, n) for n in gold.get("none", []))
    if kind == "value":  # a password inside a URL is served masked, as the connectors store it
        if NOTHING.search(text):  # "No address ... is recorded for accounts-db" names no value
            return False
        return any(_norm(form) in _norm(text) for v in gold["any"]
                   for form in (v, URL_PASSWORD.sub(r"\1***@", v)))
    if kind == "date":
        want = datetime.strptime(gold["date"], "%Y-%m-%d").date()
        tol = timedelta(days=int(gold.get("tolerance_days", 0)))
        return any(abs(d - want) <= tol for d in _dates(text))
    if kind == "rationale":
        hits = sum(_norm(p) in _norm(text) for p in gold["phrases"])
        return _adr_cited(text, gold["adr"]) and hits >= int(gold.get("min_phrases", 1))
    if kind == "nobody":
        return bool(NOBODY.search(text)) and not any(
            n in text for n in gold.get("none", []))
    raise ValueError(f"unknown answer kind {kind!r}")


def evidence_right(gold: list[dict[str, Any]], refs: list[str], repo: Path | None) -> bool:
    """Whether one of ``refs`` names a gold path+line, or resolves in ``repo`` to a line holding
    a gold token (a range ``#L12-L14`` names each of its lines)."""
    for ref in refs:
        parsed = parse_ref(ref)
        if parsed is None:
            continue
        path, _, commit = parsed
        span = ref_lines(ref)
        if any(g["path"] == path and g["line"] in span for g in gold):
            return True
        lines = blob_lines(repo, commit, path) if repo is not None else None
        if lines is not None and any(1 <= n <= len(lines) and g["token"] in lines[n - 1]
                                     for n in span for g in gold):
            return True
    return False


@dataclass
class Scored:
    qid: str
    family: str
    answered: bool
    right: bool
    evidence: bool
    no_model: bool
    ms: float
    answer: str = ""
    refs: list[str] = field(default_factory=list)
    confidence: float | None = None  # the answer confidence /search reported
    intent: str = ""  # the family the router chose


def citations(response: dict[str, Any]) -> list[str]:
    return [str(c.get("evidence_ref") or "") for c in response.get("citations") or []]


def score(item: dict[str, Any], response: dict[str, Any], repo: Path | None,
          model_configured: bool, ms: float = 0.0) -> Scored:
    """One question's outcome from its /search response."""
    text = str(response.get("answer") or "")
    refs = citations(response)
    answered = not (EMPTY.search(text) or LISTING.search(text))
    used_model = model_configured and "explain" not in (response.get("degraded") or [])
    reported = (response.get("confidence") or {}).get("confidence")
    return Scored(item["id"], item["family"], answered, answer_right(item["answer"], text),
                  evidence_right(item["evidence"], refs, repo), answered and not used_model,
                  ms, text[:400], refs[:8],
                  float(reported) if isinstance(reported, int | float) else None,
                  str((response.get("route") or {}).get("intent") or ""))


def summarise(scored: list[Scored]) -> dict[str, Any]:
    """Per family and overall: exact-answer accuracy, evidence accuracy, both, the share
    answered at all and the share answered with no model."""
    def block(rows: list[Scored]) -> dict[str, Any]:
        n = max(1, len(rows))
        return {"questions": len(rows),
                "exact_answer_accuracy": round(sum(r.right for r in rows) / n, 3),
                "evidence_accuracy": round(sum(r.evidence for r in rows) / n, 3),
                "exact_with_evidence": round(sum(r.right and r.evidence for r in rows) / n, 3),
                "answered": round(sum(r.answered for r in rows) / n, 3),
                "answered_no_model": round(sum(r.no_model for r in rows) / n, 3)}
    families = {f: block([r for r in scored if r.family == f]) for f in FAMILIES
                if any(r.family == f for r in scored)}
    return {"overall": block(scored), "families": families}
