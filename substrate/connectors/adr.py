"""Architecture decision records → DecisionNode, SUPERSEDES, WHY and MENTIONS.

Found in ``docs/adr``, ``docs/adrs``, ``docs/decisions``, ``docs/architecture/decisions``,
``architecture-decision-record(s)``, ``adr``/``adrs`` (at any depth); ``README``/``index``/
template files are skipped. Both the Nygard template (``# 1. Title``, ``## Status``,
``Date:``) and MADR (front matter ``status:``/``date:``, ``* Status:`` lines, ``## Decision
Outcome``) are read, and so is a metadata table under the title (``| DATE | STATUS |`` with a
value row, or ``| Status | Accepted |`` rows: the 18F/TTS templates); a status may be a word or
an emoji (✅ ❌ ⚠️ ♻️ 🚧 ...) and is normalised to accepted | proposed | rejected | deprecated |
superseded | unknown (``status``); the status as written is kept too (``status_text``:
"Superseded by ADR-0007", "In Review", "Implemented"). A decision heading may state the choice
itself ("## Chosen option: Backend UTC"): that text is part of the decision.

ceid: ``adr:<4-digit number>`` (``adr:<slug of file name>`` without a number); ADRs outside the
main ADR directory get the directory slug as prefix. ``Superseded by ADR-7`` in record 3 and
``Supersedes [ADR-3](0003-x.md)`` in record 7 both give ``adr:0007 -SUPERSEDES-> adr:0003``.
Services named in the title or the decision section get ``WHY``; others named get ``MENTIONS``.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache

from substrate.connectors.adr_fields import emoji_status, normalise_status, table_date, table_status
from substrate.connectors.aliases import NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.markdown import (
    Line,
    MarkdownDoc,
    Section,
    field_value,
    find_sections,
    first_paragraph,
    first_paragraph_lines,
    inline_text,
    paragraph_text,
    parse_markdown,
    plain_text,
    title,
)
from substrate.connectors.mentions import Mention, find_mentions, mention_edges
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

ADR_DIRS = (
    "docs/adr", "docs/adrs", "docs/decisions", "docs/architecture/decisions",
    "architecture-decision-record", "architecture-decision-records", "adr", "adrs",
    # adr-tools' "adr init doc/architecture/decisions", decision logs by other names
    "architecture/decisions", "architecture-decisions", "decision-records", "decision-log",
)  # fmt: skip
# any other folder called "decisions" ("docs/application/decisions") holds records when its
# files are numbered as adr-tools numbers them: "0001-record-architecture-decisions.md"
_NUMBERED_IN = ("decisions", "decision", "architecture-decisions")
_NUMBERED = re.compile(r"^\d{1,5}[-_]")
_SKIP = re.compile(r"^(readme|index|template|adr-template|\d+-template)\.", re.IGNORECASE)
_NUMBER = re.compile(r"^(?:adr[-_ ]?)?(\d+)", re.IGNORECASE)
# "ADR-12: X", "12. X", and the labels "TITLE: X" / "ADR: X" (also "TITLE: ADR-12: X")
_TITLE_PREFIX = re.compile(
    r"^(?:(?:title|adr)\s*:\s*)?(?:ADR[-\s]?\d+\s*[:.\-–]\s*|\d+\.\s+)?", re.IGNORECASE)
_REF = re.compile(r"\bADR[-\s#]?0*(\d+)\b|\]\((?:[^)]*/)?0*(\d+)-[^)]*\)", re.IGNORECASE)
# "superceded" / "supercedes": the common misspelling, as often written in records as the word
# "Superseded [0019](0019-use-bash-and-go.md)" (a status line with no "by") is passive too
_SUPERSEDE = re.compile(r"\b(super[sc]eded\s+by|replaced\s+by|super[sc]edes|replaces"
                        r"|super[sc]eded)\b", re.I)
# MADR's "Decision Outcome", the 18F/TTS "CHOSEN OPTION: X" / "PROPOSED OR CHOSEN OPTION: X"
# (the text after the colon is the choice); never "Decision drivers"
DECISION_SECTIONS = (r"^(?:decision|decision outcome|(?:proposed\s+or\s+)?chosen option"
                     r"|the decision)\s*(?::.*)?$")


def is_adr_folder(directory: str) -> bool:
    """A folder that holds decision records (its README is the log's index)."""
    return is_adr_path(posixpath.join(directory, "0001-record.md"))


def is_adr_path(path: str) -> bool:
    """A Markdown record in a decision folder (a numbered one in a ``decisions`` folder of any
    name), or a numbered file with no extension in a decision folder (rubyforgood/casa's
    ``0002-disallow-ui-sign-ups``)."""
    directory, name = posixpath.split(path)
    bare = "." not in name and _NUMBERED.match(name) is not None
    if not (name.lower().endswith((".md", ".markdown")) or bare) or _SKIP.match(name):
        return False
    directory = directory.lower()  # docs/ADR, docs/Decisions as well
    if any(directory == d or directory.endswith("/" + d) for d in ADR_DIRS):
        return True
    return posixpath.basename(directory) in _NUMBERED_IN and _NUMBERED.match(name) is not None


def adr_number(path: str) -> int | None:
    match = _NUMBER.match(posixpath.basename(path))
    return int(match.group(1)) if match else None


def adr_ceid(path: str, primary_dir: str) -> str:
    """``adr:0007`` (or ``adr:<dir-slug>-0007`` outside the main ADR directory)."""
    number = adr_number(path)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    local = f"{number:04d}" if number is not None else stem
    directory = posixpath.dirname(path)
    return ceid("adr", local if directory == primary_dir else f"{directory}-{local}")


@dataclass
class AdrRecord:
    """One parsed decision record."""

    path: str
    ceid: str
    name: str
    name_line: int
    status: str
    status_line: int
    date: str
    summary: str
    doc: MarkdownDoc
    lines: list[Line]
    status_text: str = ""  # as written: "Superseded by 20. User models revisited", "In Review"


def _status(doc: MarkdownDoc) -> tuple[str, int]:
    if "status" in doc.front:
        return doc.front["status"], doc.front_lines["status"]
    for section in find_sections(doc.body, r"^status\b"):
        first = next((n for n, t in section.lines if t.strip()), None)
        if first:
            return " ".join(t.strip() for _, t in section.lines if t.strip()), first
    found = field_value(doc.body, ("status",)) or table_status(doc.body)
    return found if found else ("", 0)


def _date(doc: MarkdownDoc) -> str:
    if "date" in doc.front:
        return doc.front["date"]
    found = field_value(doc.body, ("date", "decision date", "last updated"))
    if found:
        return found[0]
    section = find_sections(doc.body, r"^date\b")
    return section[0].paragraph() if section else table_date(doc.body)


def heading_choice(heading: str) -> str:
    """What a decision heading states after its colon ("CHOSEN OPTION: Backend UTC" gives
    "Backend UTC"), '' when nothing."""
    _, colon, rest = heading.partition(":")
    return inline_text(rest).strip() if colon else ""


def _decision_summary(section: Section) -> str:
    """The decision section's first paragraph, after the choice its heading states."""
    choice = heading_choice(section.title)
    if not choice:
        return section.paragraph()
    stated = choice if choice.endswith((".", "!", "?")) else choice + "."
    return paragraph_text([(section.line, stated), *first_paragraph_lines(section.lines)])


def _summary(doc: MarkdownDoc) -> str:
    found = find_sections(doc.body, DECISION_SECTIONS)
    if found and _decision_summary(found[0]):
        return _decision_summary(found[0])
    found = find_sections(doc.body, r"^context")
    if found and found[0].paragraph():
        return found[0].paragraph()
    return first_paragraph(doc.body)


def parse_adr(path: str, text: str, primary_dir: str) -> AdrRecord:
    doc = parse_markdown(text)
    head = title(doc.body)
    raw_title, title_line = head if head else (posixpath.basename(path), 1)
    name = (doc.front.get("title") or _TITLE_PREFIX.sub("", raw_title).strip(" *_")
            or raw_title)
    status_text, status_line = _status(doc)
    status = normalise_status(status_text) if status_text else emoji_status(raw_title)
    lines = [(i + 1, t) for i, t in enumerate(text.splitlines())]
    return AdrRecord(
        path, adr_ceid(path, primary_dir), name, title_line, status,
        status_line or title_line, _date(doc), _summary(doc), doc, lines,
        written_status(status_text),
    )  # fmt: skip


STATUS_TEXT_CHARS = 200


def written_status(text: str) -> str:
    """The status as the record writes it, Markdown removed ("Superseded by [20. User models
    revisited](./0020-x.md)" reads "Superseded by 20. User models revisited"), at most
    ``STATUS_TEXT_CHARS``; empty when the record states none."""
    plain = inline_text(text).rstrip(".").strip()
    return plain if len(plain) <= STATUS_TEXT_CHARS else plain[: STATUS_TEXT_CHARS - 1] + "…"


def primary_adr_dir(paths: list[str]) -> str:
    """The directory holding most ADRs (ties: the shortest, then the first by name)."""
    counts = Counter(posixpath.dirname(p) for p in paths)
    return min(counts, key=lambda d: (-counts[d], len(d), d)) if counts else ""


def _refs(fragment: str, by_number: dict[int, str]) -> list[str]:
    numbers = [int(a or b) for a, b in _REF.findall(fragment)]
    return [by_number[n] for n in dict.fromkeys(numbers) if n in by_number]


def supersede_edges(
    rec: AdrRecord, by_number: dict[int, str], snap: GitSnapshot
) -> list[EdgeRecord]:
    """SUPERSEDES edges stated by one record (``newer -> older``)."""
    edges: list[EdgeRecord] = []
    for no, text in rec.lines:
        lowered = text.lower()  # the words first: the pattern is slow to scan every line
        if "super" not in lowered and "replace" not in lowered:
            continue
        for match in _SUPERSEDE.finditer(text):
            passive = match.group(1).lower().endswith(("by", "eded"))
            for other in _refs(text[match.end() :], by_number):
                src, dst = (other, rec.ceid) if passive else (rec.ceid, other)
                if src != dst:
                    ref = snap.ref(rec.path, no)
                    edges.append(EdgeRecord("SUPERSEDES", src, dst, ref, source="git"))
    return edges


def _node(rec: AdrRecord, ref: str) -> NodeRecord:
    number = adr_number(rec.path)
    props: dict[str, object] = {
        "name": rec.name, "status": rec.status, "date": rec.date, "path": rec.path,
        "summary": rec.summary, "text": plain_text(rec.doc.body),
    }  # fmt: skip
    if number is not None:
        props["number"] = number
    if rec.status_text:
        props["status_text"] = rec.status_text
    return NodeRecord(rec.ceid, "DecisionNode", props, (ref,))


def decision_lines(rec: AdrRecord) -> list[Line]:
    """The lines of the record's decision sections, with the choice a heading states
    ("## Chosen option: Kafka") on the heading's line."""
    out: list[Line] = []
    for section in find_sections(rec.doc.body, DECISION_SECTIONS):
        choice = heading_choice(section.title)
        out += [(section.line, choice)] if choice else []
        out += section.lines
    return out


def decision_edges(rec: AdrRecord, index: NameIndex, snap: GitSnapshot,
                   decision: list[Line] | None = None) -> list[EdgeRecord]:
    """WHY for services in the title or the decision (``decision``: its lines, when
    known); MENTIONS for the others named."""

    def ref_of(line: int) -> str:
        return snap.ref(rec.path, line)

    title_lines = [(rec.name_line, rec.name)]
    decision = decision_lines(rec) if decision is None else decision
    why = find_mentions(title_lines, index, plain_words=True) + find_mentions(decision, index)
    unique_why: list[Mention] = []
    for mention in why:
        if all(m.resolution.candidates != mention.resolution.candidates for m in unique_why):
            unique_why.append(mention)
    why_targets = {m.resolution.candidates for m in unique_why}
    others = [
        m for m in find_mentions(rec.doc.body, index) if m.resolution.candidates not in why_targets
    ]
    return mention_edges("WHY", rec.ceid, unique_why, index, ref_of) + mention_edges(
        "MENTIONS", rec.ceid, others, index, ref_of
    )


@lru_cache(maxsize=4096)
def _parsed(path: str, text: str, primary_dir: str) -> tuple[AdrRecord, list[Line]]:
    """A record and its decision lines (memoised: a history replay reads the same records at
    every commit; callers only read them)."""
    rec = parse_adr(path, text, primary_dir)
    return rec, decision_lines(rec)


def _distinct_numbers(parsed: list[tuple[AdrRecord, list[Line]]], primary: str,
                      ) -> list[tuple[AdrRecord, list[Line]]]:
    """Two records of one folder with one number (alphagov's two ADR 10s: Argo, and Dex):
    the first in path order keeps ``adr:0010``, a later one is ``adr:<its file name>``."""
    seen: set[str] = set()
    out = []
    for rec, lines in parsed:
        if rec.ceid in seen and adr_number(rec.path) is not None:
            stem = posixpath.splitext(posixpath.basename(rec.path))[0]
            folder = posixpath.dirname(rec.path)
            rec = replace(rec, ceid=ceid("adr", stem if folder == primary else f"{folder}-{stem}"))
        seen.add(rec.ceid)
        out.append((rec, lines))
    return out


def adr_batch(snap: GitSnapshot, index: NameIndex) -> GraphBatch:
    """DecisionNodes and their SUPERSEDES / WHY / MENTIONS edges."""
    paths = [p for p in snap.files() if is_adr_path(p)]
    snap.preload(paths)
    primary = primary_adr_dir(paths)
    parsed = _distinct_numbers([_parsed(p, snap.read(p), primary) for p in sorted(paths)],
                               primary)
    records = [rec for rec, _ in parsed]
    numbered: dict[str, dict[int | None, str]] = {}  # folder -> number -> ceid (the last)
    for r in records:
        numbered.setdefault(posixpath.dirname(r.path), {})[adr_number(r.path)] = r.ceid
    batch = GraphBatch()
    for rec, decision in parsed:
        numbers = numbered[posixpath.dirname(rec.path)]
        by_number = {n: c for n, c in numbers.items() if n is not None}
        batch.edges.extend(supersede_edges(rec, by_number, snap))
        batch.edges.extend(decision_edges(rec, index, snap, decision))
    superseded = superseded_by_accepted(records, batch.edges)
    for rec, _ in parsed:
        if rec.ceid in superseded and rec.status in ("accepted", "proposed", "unknown"):
            rec = replace(rec, status="superseded")  # its own text still says what it said
        batch.nodes.append(_node(rec, snap.ref(rec.path, rec.name_line)))
    return batch


def superseded_by_accepted(records: list[AdrRecord], edges: list[EdgeRecord]) -> set[str]:
    """The records an accepted record supersedes. Only the later record may say so (DEFRA's
    ADR 36: "Accepted. Supersedes ADR-0031", whose own status still reads Accepted); a
    proposed one supersedes nothing yet (ADR 33 on part of ADR 16)."""
    status = {r.ceid: r.status for r in records}
    return {e.dst for e in edges
            if e.type == "SUPERSEDES" and status.get(e.src) in ("accepted", "superseded")}
