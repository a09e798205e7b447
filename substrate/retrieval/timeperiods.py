"""Calendar periods and releases in questions: months, quarters, years, numeric dates, tags.

The companion of ``timephrases`` (which owns days, weekdays, "N days ago" and how spans
combine): every function here returns ``(begin, end, (lo, hi))`` matches — the text position
and the half-open interval ``[lo, hi)`` the phrase denotes, in UTC. Calendar arithmetic is
python-dateutil's ``relativedelta`` (month lengths, leap years); numeric dates ("03/10/2024")
are read by ``dateutil.parser`` (month first, as in US usage, unless the first number is > 12).

* "March 2024", "Mar. 2024" -> the month; "in March" (a preposition and no year) -> the latest
  March that has begun by ``now`` (a bare "march"/"may" is a verb far more often than a month);
* "Q3 2024", "2024-Q3", "third quarter of 2024" -> the quarter; "Q3" alone -> the latest one begun;
* "in 2024", "since 2023" (a year after a preposition) -> the year;
* "this week|month|quarter|year", "last quarter" -> the calendar period (the rolling "last N
  days/weeks/months" are ``timephrases``' ``_RECENT``).

Releases ("since v1.2", "before release 0.5.0", "after version 2") cannot be dated without the
history: ``release_reference`` returns the relation and the tag, and the pipeline resolves the
tag against the snapshots' commit subjects (``resolve_release``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time

from dateutil import parser as dateparser
from dateutil.relativedelta import relativedelta

Interval = tuple[datetime, datetime]
Match = tuple[int, int, Interval]

_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_YEAR = r"((?:19|20)\d{2})"
_PREP = r"(?:in|during|since|before|after|until|till|from|between|by|throughout|of|and|to)"
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
             "4th": 4, "last": 4, "final": 4}

_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s*,?\s+(?:of\s+)?{_YEAR}\b(?![-/:.]\d)", re.I)
_MONTH_ALONE = re.compile(rf"\b{_PREP}\s+(?:early\s+|late\s+|mid[-\s])?{_MONTH}(?!\s*\d)\b", re.I)
_QUARTER = re.compile(rf"\bQ([1-4])(?:\s*(?:of\s+)?|[-/]){_YEAR}?\b", re.I)
_YEAR_QUARTER = re.compile(rf"\b{_YEAR}[-\s]?Q([1-4])\b", re.I)
_QUARTER_WORDS = re.compile(r"\b(first|1st|second|2nd|third|3rd|fourth|4th|last|final)\s+"
                            rf"quarter(?:\s+(?:of\s+)?{_YEAR})?\b", re.I)
_BARE_YEAR = re.compile(rf"\b{_PREP}\s+(?:the\s+year\s+)?{_YEAR}\b(?![-/:.]\d)", re.I)
_NUMERIC = re.compile(r"(?<![\w./-])(\d{1,4})[/.](\d{1,2})[/.](\d{2,4})(?![\w./-])")
_THIS = re.compile(r"\b(this|current|last|previous|past)\s+(week|month|quarter|year)\b", re.I)
_RELEASE = re.compile(
    r"\b(since|after|before|until|prior\s+to|in|at|as\s+of)\s+(?:the\s+)?"
    r"(?:(?:release|version|tag)\s+v?|v)(\d+(?:\.\d+){0,3}(?:[-+][\w.]+)?)\b", re.I)


def _start(d: date) -> datetime:
    return datetime.combine(d, time(), tzinfo=UTC)


def month_interval(year: int, month: int) -> Interval:
    lo = _start(date(year, month, 1))
    return lo, lo + relativedelta(months=1)


def quarter_interval(year: int, quarter: int) -> Interval:
    lo = _start(date(year, 3 * (quarter - 1) + 1, 1))
    return lo, lo + relativedelta(months=3)


def year_interval(year: int) -> Interval:
    lo = _start(date(year, 1, 1))
    return lo, lo + relativedelta(years=1)


def _month_no(word: str) -> int:
    return _MONTHS.index(word.lower()[:3]) + 1


def _months(text: str, now: datetime) -> Iterator[Match]:
    for m in _MONTH_YEAR.finditer(text):
        yield m.start(), m.end(), month_interval(int(m.group(2)), _month_no(m.group(1)))
    for m in _MONTH_ALONE.finditer(text):
        month = _month_no(m.group(1))
        lo, hi = month_interval(now.year, month)
        if lo > now:
            lo, hi = month_interval(now.year - 1, month)
        yield m.start(1), m.end(), (lo, hi)


def _quarter_of(q: int, year: str | None, now: datetime) -> Interval:
    if year:
        return quarter_interval(int(year), q)
    lo, hi = quarter_interval(now.year, q)
    return quarter_interval(now.year - 1, q) if lo > now else (lo, hi)


def _quarters(text: str, now: datetime) -> Iterator[Match]:
    for m in _QUARTER.finditer(text):
        yield m.start(), m.end(), _quarter_of(int(m.group(1)), m.group(2), now)
    for m in _YEAR_QUARTER.finditer(text):
        yield m.start(), m.end(), quarter_interval(int(m.group(1)), int(m.group(2)))
    for m in _QUARTER_WORDS.finditer(text):
        if m.group(1).lower() in ("last", "final") and not m.group(2):
            continue  # "last quarter" is the previous calendar quarter: _calendar
        yield m.start(), m.end(), _quarter_of(_ORDINALS[m.group(1).lower()], m.group(2), now)


def _years(text: str) -> Iterator[Match]:
    for m in _BARE_YEAR.finditer(text):
        yield m.start(1), m.end(1), year_interval(int(m.group(1)))


def _numeric(text: str) -> Iterator[Match]:
    for m in _NUMERIC.finditer(text):
        first = int(m.group(1))
        try:
            parsed = dateparser.parse(m.group(0), yearfirst=len(m.group(1)) == 4,
                                      dayfirst=12 < first < 32)
        except (ValueError, OverflowError):
            continue
        lo = _start(parsed.date())
        yield m.start(), m.end(), (lo, lo + relativedelta(days=1))


def _calendar(text: str, now: datetime) -> Iterator[Match]:
    today = now.date()
    for m in _THIS.finditer(text):
        which, unit = m.group(1).lower(), m.group(2).lower()
        back = which in ("last", "previous", "past")
        if back and unit != "quarter":
            continue  # rolling windows ("last week" = the past 7 days): timephrases._RECENT
        if unit == "week":
            lo = _start(today - relativedelta(days=today.weekday()))
            yield m.start(), m.end(), (lo, lo + relativedelta(weeks=1))
        elif unit == "month":
            yield m.start(), m.end(), month_interval(today.year, today.month)
        elif unit == "quarter":
            lo, hi = quarter_interval(today.year, (today.month - 1) // 3 + 1)
            yield m.start(), m.end(), ((lo - relativedelta(months=3), lo) if back else (lo, hi))
        else:
            yield m.start(), m.end(), year_interval(today.year)


def period_anchors(text: str, now: datetime) -> list[Match]:
    """Every calendar period named in ``text`` (overlaps are settled by the caller)."""
    return [*_months(text, now), *_quarters(text, now), *_years(text), *_numeric(text),
            *_calendar(text, now)]


def release_reference(text: str) -> tuple[str, str, str] | None:
    """``("since", "1.2", "since v1.2")`` for "what changed since v1.2?", else None."""
    m = _RELEASE.search(text)
    if m is None:
        return None
    relation = " ".join(m.group(1).lower().split())
    relation = {"prior to": "before", "as of": "at", "in": "at"}.get(relation, relation)
    return relation, m.group(2), m.group(0)


def release_pattern(tag: str) -> re.Pattern[str]:
    """Matches a commit subject announcing release ``tag`` ("release/v0.4.1 (#439)",
    "chore(main): release 1.6.2", "Merge ... from org/release/v0.4.2"), not 0.4.10 for 0.4.1."""
    return re.compile(rf"\brelease[/\s:-]*v?{re.escape(tag)}(?![\d.]*\d)", re.I)
