"""Post-mortems / incident reports → FailurePattern, CAUSED_BY and AFFECTED.

Found (``*.md``) under ``postmortems``, ``post-mortems``, ``incidents`` (optionally below
``docs/``), README/index/template files skipped. ceid ``incident:<slug of the file stem>``.

* ``date``: front matter ``date:`` or a ``Date:`` line, kept exactly as written (a full ISO
  timestamp stays a timestamp); ``severity`` from front matter or a ``Severity:`` line,
  normalised to ``SEV1``/``P1`` style.
* ``CAUSED_BY``: services and datastores named in the root-cause section ("Root cause",
  "Cause", "Trigger", "What went wrong"), and ``PR #123`` / ``pull request 123`` /
  ``.../pull/123`` cited there (→ ``pr:123``, confidence 1.0). A cited PR also gets a
  ``PullRequest`` node with only ``name`` ("PR #123") and ``number``, so the edge has both
  ends in the batch; a fuller record of the same PR (org JSONL, a GitHub connector) should
  use the same ``name`` and add ``title``/``summary``/... beside it.
* ``AFFECTED``: services named in the impact section ("Impact", "Customer impact",
  "Affected services", "Blast radius").
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from substrate.connectors.aliases import NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.markdown import (
    Line,
    MarkdownDoc,
    field_value,
    find_sections,
    first_paragraph,
    parse_markdown,
    plain_text,
    title,
)
from substrate.connectors.mentions import find_mentions, mention_edges
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

INCIDENT_DIRS = ("postmortems", "post-mortems", "postmortem", "incidents", "incident-reports",
                 "incident-reviews", "post-incident-reviews", "retrospectives", "outages",
                 "rca", "rcas")
ROOT_CAUSE = r"^(root[- ]?causes?|causes?|trigger|what went wrong|contributing factors)\b"
IMPACT = r"^(impact|customer impact|user impact|affected services|blast radius)\b"
_SKIP = re.compile(r"^(readme|index|template|_template)\.", re.IGNORECASE)
_PR = re.compile(r"(?:\bPR\s*#?|\bpull request\s*#?|/pull/)(\d+)\b", re.IGNORECASE)
_SEV = re.compile(r"\b(sev|p)\s*-?\s*(\d)\b", re.IGNORECASE)


def is_postmortem_path(path: str) -> bool:
    directory, name = posixpath.split(path)
    if not name.lower().endswith((".md", ".markdown")) or _SKIP.match(name):
        return False
    parts = directory.split("/")
    return bool(parts) and parts[-1].lower() in INCIDENT_DIRS


def normalise_severity(text: str) -> str:
    match = _SEV.search(text)
    if not match:
        return text.strip()
    return f"{'SEV' if match.group(1).lower() == 'sev' else 'P'}{match.group(2)}"


@dataclass
class Incident:
    path: str
    ceid: str
    name: str
    name_line: int
    date: str
    severity: str
    summary: str
    doc: MarkdownDoc


def _field(doc: MarkdownDoc, key: str, names: tuple[str, ...]) -> str:
    if key in doc.front:
        return doc.front[key]
    found = field_value(doc.body, names)
    return found[0] if found else ""


def parse_incident(path: str, text: str) -> Incident:
    doc = parse_markdown(text)
    head = title(doc.body)
    name, line = head if head else (posixpath.basename(path), 1)
    name = doc.front.get("title", name)
    date = _field(doc, "date", ("date", "incident date", "started", "start time"))
    severity = normalise_severity(_field(doc, "severity", ("severity", "sev", "priority")))
    summary_sections = find_sections(doc.body, r"^(summary|overview|tl;?dr)\b")
    summary = summary_sections[0].paragraph() if summary_sections else first_paragraph(doc.body)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return Incident(path, ceid("incident", stem), name, line, date, severity, summary, doc)


def _section_lines(doc: MarkdownDoc, pattern: str) -> list[Line]:
    return [ln for s in find_sections(doc.body, pattern) for ln in s.lines]


def pr_records(inc: Incident, lines: list[Line], snap: GitSnapshot) -> GraphBatch:
    """CAUSED_BY edges to the pull requests cited in ``lines`` (and PullRequest stubs)."""
    batch = GraphBatch()
    seen: set[str] = set()
    for no, text in lines:
        for number in _PR.findall(text):
            pr, ref = ceid("pr", number), snap.ref(inc.path, no)
            if pr in seen:
                continue
            seen.add(pr)
            props = {"name": f"PR #{int(number)}", "number": int(number)}
            batch.nodes.append(NodeRecord(pr, "PullRequest", props, (ref,)))
            batch.edges.append(EdgeRecord("CAUSED_BY", inc.ceid, pr, ref, source="git"))
    return batch


def incident_records(inc: Incident, index: NameIndex, snap: GitSnapshot) -> GraphBatch:
    """CAUSED_BY (root-cause section) and AFFECTED (impact section) edges of an incident."""

    def ref_of(line: int) -> str:
        return snap.ref(inc.path, line)

    cause = _section_lines(inc.doc, ROOT_CAUSE)
    impact = _section_lines(inc.doc, IMPACT)
    batch = pr_records(inc, cause, snap)
    for kind, lines in (("CAUSED_BY", cause), ("AFFECTED", impact)):
        mentions = find_mentions(lines, index)
        batch.edges.extend(mention_edges(kind, inc.ceid, mentions, index, ref_of))
    return batch


def _node(inc: Incident, ref: str) -> NodeRecord:
    props = {
        "name": inc.name, "date": inc.date, "severity": inc.severity, "summary": inc.summary,
        "path": inc.path, "text": plain_text(inc.doc.body),
    }  # fmt: skip
    return NodeRecord(inc.ceid, "FailurePattern", props, (ref,))


def postmortem_batch(snap: GitSnapshot, index: NameIndex) -> GraphBatch:
    """FailurePattern nodes with their CAUSED_BY and AFFECTED edges."""
    paths = [p for p in snap.files() if is_postmortem_path(p)]
    snap.preload(paths)
    batch = GraphBatch()
    for path in paths:
        inc = parse_incident(path, snap.read(path))
        batch.nodes.append(_node(inc, snap.ref(path, inc.name_line)))
        batch.extend(incident_records(inc, index, snap))
    return batch
