"""Time windows of the embedded translator: "in September 2026", "last quarter", "Q3 2026",
"before 2026-09-01", "since October 1st 2026", "this year". Each becomes ``[start, end)``
in UTC; a phrase with no year takes ``now``'s year."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from substrate.retrieval.timephrases import MONTHS

_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?")
_DAY = (r"(\d{4})-(\d{2})-(\d{2})"
        rf"|{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rx, re.I)) for kind, rx in (
        ("between", rf"\bbetween\s+(?:{_DAY})\s+and\s+(?:{_DAY.replace('(', '(?P<b>', 1)})"),
        ("bound", rf"\b(before|after|since|until|from)\s+(?:{_DAY})"),
        ("quarter", r"\b(?:in\s+|during\s+)?(?:the\s+)?(last|this|previous|past|current)"
                    r"\s+quarter\b"),
        ("q", r"\b(?:in\s+|during\s+)?q([1-4])\s+(\d{4})\b"),
        ("relative", r"\b(?:in\s+|during\s+)?(last|this|previous|current)\s+(month|year)\b"),
        ("month", rf"\b(?:in|during)\s+{_MONTH}(?:\s+(\d{{4}}))?\b"),
        ("month", rf"\b{_MONTH}\s+(\d{{4}})\b"),
        ("year", r"\b(?:in|during)\s+(\d{4})\b"),
    ))


@dataclass(frozen=True)
class Window:
    start: datetime | None
    end: datetime | None
    phrase: str
    begin: int
    stop: int


def _month_start(year: int, month: int) -> datetime:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC)


def _date(groups: tuple[str | None, ...]) -> datetime:
    y, m, d, mon, day, year = groups[:6]
    if y is not None:
        return datetime(int(y), int(m or 1), int(d or 1), tzinfo=UTC)
    return datetime(int(year or 1970), MONTHS.index(str(mon).lower()[:3]) + 1, int(day or 1),
                    tzinfo=UTC)


def _window(kind: str, m: re.Match[str], now: datetime) -> tuple[datetime | None, datetime | None]:
    g = m.groups()
    quarter = _month_start(now.year, 3 * ((now.month - 1) // 3) + 1)
    if kind == "between":
        return _date(g[0:6]), _date(g[6:12]).replace(hour=23, minute=59, second=59)
    if kind == "bound":
        at = _date(g[1:7])
        return (None, at) if g[0].lower() in ("before", "until") else (at, None)
    if kind == "quarter":
        back = 0 if g[0].lower() in ("this", "current") else 3
        start = _month_start(quarter.year, quarter.month - back)
        return start, _month_start(start.year, start.month + 3)
    if kind == "q":
        start = _month_start(int(g[1]), 3 * (int(g[0]) - 1) + 1)
        return start, _month_start(start.year, start.month + 3)
    if kind == "relative":
        back = 0 if g[0].lower() in ("this", "current") else 1
        if g[1].lower() == "month":
            start = _month_start(now.year, now.month - back)
            return start, _month_start(start.year, start.month + 1)
        return datetime(now.year - back, 1, 1, tzinfo=UTC), datetime(now.year - back + 1, 1, 1,
                                                                     tzinfo=UTC)
    if kind == "month":
        start = _month_start(int(g[1] or now.year), MONTHS.index(g[0].lower()[:3]) + 1)
        return start, _month_start(start.year, start.month + 1)
    year = int(g[0])
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def find_windows(text: str, now: datetime) -> list[Window]:
    """Non-overlapping time windows in ``text``, first pattern wins."""
    found: list[Window] = []
    for kind, rx in _PATTERNS:
        for m in rx.finditer(text):
            if any(m.start() < w.stop and w.begin < m.end() for w in found):
                continue
            try:
                start, end = _window(kind, m, now)
            except ValueError:
                continue
            found.append(Window(start, end, m.group(0), m.start(), m.end()))
    return sorted(found, key=lambda w: w.begin)
