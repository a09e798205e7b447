"""The status words of an architecture decision record (normalised: :func:`normalise_status`),
the fields it states in a metadata table under its title
(``| DATE | STATUS | AUTHOR |`` with a value row, or ``| Status | Accepted |`` rows: the
18F/TTS templates), and its dates in the forms records write them (``2024-03-07``,
``3/7/2024``, ``7 March 2024``, ``March 7th, 2024``) as ISO days. Read by :mod:`adr` and by
the rationale's status line (:mod:`substrate.retrieval.adr_text`)."""

from __future__ import annotations

import re
from datetime import date

from substrate.connectors.markdown import (
    FENCE,
    Line,
    find_sections,
    headings,
    inline_text,
    title,
)

_EMOJI = {"✅": "accepted", "❌": "rejected", "⚠": "deprecated", "♻": "superseded",
          "🚧": "proposed", "📝": "proposed", "⛔": "rejected", "🗑": "deprecated"}  # fmt: skip
_WORDS = (
    # passive only: "Supersedes ADR-0031" (DEFRA's ADR 36) is what the superseding record says
    ("superseded", ("superseded", "superceded", "replaced by")),
    ("deprecated", ("deprecat", "obsolete", "retired", "inactive")),
    ("rejected", ("reject", "declined", "withdrawn", "abandon")),
    ("accepted", ("accept", "approved", "adopted", "done", "implemented", "in effect",
                  "active")),
    ("proposed", ("propos", "draft", "review", "open", "pending")),
)


def _word_starts(words: tuple[str, ...]) -> re.Pattern[str]:
    """Words (or their beginnings: "deprecat") at a word start: "done" is not in "abandoned",
    nor "active" in "inactive"."""
    spelled = (r"\s+".join(map(re.escape, w.split())) for w in words)
    return re.compile(r"\b(?:" + "|".join(spelled) + ")", re.IGNORECASE)


_STATUS_WORDS = tuple((status, _word_starts(words)) for status, words in _WORDS)


def normalise_status(text: str) -> str:
    """One of accepted | proposed | rejected | deprecated | superseded | unknown."""
    for status, words in _STATUS_WORDS:
        if words.search(text):
            return status
    return emoji_status(text)


def emoji_status(text: str) -> str:
    return next((s for e, s in _EMOJI.items() if e in text), "unknown")


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_STATUS_KEY = re.compile(r"^(?:adr\s+|decision\s+|current\s+)?status$")
# a "date" / "created" / "decided" column before a "last updated" one
_DATE_KEYS = (re.compile(r"\b(?:date|created|decided)\b"), re.compile(r"\b(?:updated|modified)\b"))
_LABEL = re.compile(r"^(?:\w+\s+){0,2}(?:status|date|created|decided|updated|modified)$", re.I)
TableRow = tuple[int, list[str]]  # (file line, cells); a separator row has no cells


def table_rows(lines: list[Line]) -> list[list[TableRow]]:
    """The tables among the lines (runs of ``|`` rows outside code fences), each a list of its
    rows: the cells as they read, a label's ":" and emphasis removed."""
    tables: list[list[TableRow]] = []
    current: list[TableRow] = []
    fenced = False
    for no, text in [*lines, (0, "")]:
        fenced = fenced != bool(FENCE.match(text))
        if not fenced and text.lstrip().startswith("|"):
            cells = [] if _TABLE_RULE.match(text) else [
                inline_text(c).rstrip(":").strip() for c in text.strip().strip("|").split("|")]
            current.append((no, cells))
        elif current:
            tables.append(current)
            current = []
    return tables


def table_values(table: list[TableRow], key: re.Pattern[str]) -> list[tuple[str, int]]:
    """The values ``key`` labels, each with its file line: under a header cell (the row after
    the separator: ``| DATE | STATUS |``, ``|---|---|``, ``| 06/06/2023 | Accepted |``), then
    beside a first cell (``| Status | Accepted |``). A value that is itself a label (the
    other reading of a two-column table) is left out."""
    found: list[tuple[str, int]] = []
    if len(table) > 2 and not table[1][1]:
        (_, header), (line, values) = table[0], table[2]
        found += [(values[i], line) for i, name in enumerate(header)
                  if key.search(name.lower()) and i < len(values)]
    found += [(cells[1], no) for no, cells in table
              if len(cells) > 1 and key.search(cells[0].lower())]
    return [(v, no) for v, no in found if v and not _LABEL.match(v)]


def head_lines(lines: list[Line]) -> list[Line]:
    """Where a record keeps its metadata: the lines between its title and the next heading,
    and any "Metadata" section."""
    top = title(lines)
    after = top[1] if top else 0
    end = next((no for no, _, _ in headings(lines) if no > after), None)
    head = [(no, t) for no, t in lines if end is None or no < end]
    return head + [ln for s in find_sections(lines, r"^metadata\b") for ln in s.lines]


def table_status(lines: list[Line]) -> tuple[str, int] | None:
    """The status a metadata table states (a known status word first) and its value row's
    line; None without one."""
    found = [v for t in table_rows(head_lines(lines)) for v in table_values(t, _STATUS_KEY)]
    known = [v for v in found if normalise_status(v[0]) != "unknown"]
    return next(iter(known or found), None)


def table_date(lines: list[Line]) -> str:
    """The date a metadata table states, as ``YYYY-MM-DD`` ('' without one)."""
    tables = table_rows(head_lines(lines))
    days = (iso_day(v) for key in _DATE_KEYS for t in tables for v, _ in table_values(t, key))
    return next((d for d in days if d), "")


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_YMD = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_MDY = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_DMY_NAMED = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]{3,9})\.?,?\s+(\d{4})\b", re.I)
_MDY_NAMED = re.compile(r"\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", re.I)


def iso_day(text: str) -> str:
    """``YYYY-MM-DD`` of a date written 2023-06-06, 2023/06/06, 06/15/2023 (month first, as
    US records write it, unless the first number cannot be a month: 15/06/2023), 6 June 2023
    or June 6, 2023; '' for anything else."""
    parts: tuple[str, str, str] | None = None
    if m := _YMD.search(text):
        parts = m.group(1), m.group(2), m.group(3)
    elif m := _MDY.search(text):
        first, second = m.group(1), m.group(2)
        month, day = (second, first) if int(first) > 12 else (first, second)
        parts = m.group(3), month, day
    elif m := _DMY_NAMED.search(text):
        parts = m.group(3), _month(m.group(2)), m.group(1)
    elif m := _MDY_NAMED.search(text):
        parts = m.group(3), _month(m.group(1)), m.group(2)
    try:
        return date(*map(int, parts)).isoformat() if parts else ""
    except ValueError:
        return ""


def _month(name: str) -> str:
    """The month's number ("6" for "June", "Jun"), '0' for no month."""
    lowered = name.lower()
    return str(_MONTHS.index(lowered[:3]) + 1) if lowered[:3] in _MONTHS else "0"
