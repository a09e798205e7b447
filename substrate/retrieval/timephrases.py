"""Dates and time windows in questions, parsed deterministically against a given ``now``.

Used by the router for the temporal use cases (RSN-07, RSN-UC-06): "what was the state of the
graph on March 10th?" pins a snapshot (``as_of``); "what changed in the three days before last
Friday's outage?" asks for a diff window (``start``/``end``).

Rules (all times UTC; a naive ``now`` is taken as UTC):
* A day ("2026-03-10", "March 10th", "10 March 2026", "yesterday", "last Friday", "3 days ago")
  covers ``[00:00, next 00:00)``; an ISO timestamp is an instant. A month-day without a year
  is the latest such day not after ``now``.
* "last Friday" is the latest Friday strictly before today; a bare "Friday" may be today.
* "N days before X" -> ``[X.start - N days, X.end]``; "between X and Y" / "from X to Y" ->
  ``[X.start, Y.end]``; "since X" -> start X.start; "after X" -> start X.end; "before X" ->
  end X.start — except when X names an event day ("last Friday's outage"): the incident
  happened some time that day, so the window keeps the whole day (end X.end).
* "last week" / "past N days" -> ``[now - N, now]``; a month counts 30 days, a year 365.
* Any other date is a point in time: ``as_of`` = the instant, or the day's last microsecond —
  unless the question asks what *changed*, in which case the day becomes the window.
* Calendar periods (months, quarters, years, "this month", numeric dates) come from
  ``timeperiods`` and combine like days ("between March 2024 and June 2024", "since Q3 2024");
  a release ("since v1.2") is kept as ``release`` = (relation, tag) for the pipeline to date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from .timeperiods import period_anchors, release_reference

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "couple of": 2}
_UNITS = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1),
          "week": timedelta(weeks=1), "month": timedelta(days=30), "year": timedelta(days=365)}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
MONTHS = tuple(name[:3] for name in MONTH_NAMES)

_NUM = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of)"
_UNIT = r"(minute|hour|day|week|month|year)s?"
_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"

_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?"
                  r"(Z|[+-]\d{2}:?\d{2})?)?(?![\w-])", re.I)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_ORD}(?:,?\s+(\d{{4}}))?\b", re.I)
_DAY_MONTH = re.compile(rf"\b{_ORD}\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}}))?\b", re.I)
_WEEKDAY = re.compile(r"\b(last\s+)?(" + "|".join(WEEKDAYS) + r")\b", re.I)
_NAMED_DAY = re.compile(r"\b(today|yesterday)\b", re.I)
_AGO = re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I)
_RECENT = re.compile(rf"\b(?:(?:in\s+)?the\s+)?(?:last|past)\s+(?:{_NUM}\s+)?{_UNIT}\b", re.I)
_EVENT = re.compile(r"^(?:'s|’s)?\s+(?:\w+\s+)?(outage|incident|failure|deploy(?:ment)?|release"
                    r"|rollout|crash|downtime|migration)\b", re.I)
_CHANGE = re.compile(r"\b(chang\w*|diff\w*|modif\w*|added|removed|deleted|happened|recorded"
                     r"|introduced|created|dropped)\b", re.I)


@dataclass(frozen=True)
class Span:
    """A date expression: the interval it denotes and where it sits in the text."""

    lo: datetime
    hi: datetime
    begin: int
    end: int
    text: str
    event_day: bool = False


@dataclass(frozen=True)
class TimeScope:
    as_of: datetime | None = None
    start: datetime | None = None
    end: datetime | None = None
    phrases: tuple[str, ...] = ()
    release: tuple[str, str] | None = None  # ("since", "1.2"): dated from the history later

    @property
    def is_empty(self) -> bool:
        return (self.as_of is None and self.start is None and self.end is None
                and self.release is None)


def _number(word: str | None) -> int:
    if word is None:
        return 1
    w = " ".join(word.lower().split())
    return int(w) if w.isdigit() else _NUMBERS[w]


def _day(d: date) -> tuple[datetime, datetime]:
    lo = datetime.combine(d, time(), tzinfo=UTC)
    return lo, lo + timedelta(days=1)


def _iso(m: re.Match[str]) -> tuple[datetime, datetime] | None:
    y, mo, d, hh, mm, ss, tz = m.groups()
    try:
        if hh is None:
            return _day(date(int(y), int(mo), int(d)))
        text = f"{y}-{mo}-{d}T{hh}:{mm}:{ss or '00'}{'+00:00' if tz in (None, 'Z', 'z') else tz}"
        instant = datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return None
    return instant, instant


def _month_day(month: str, day: str, year: str | None, now: datetime) -> tuple[datetime, datetime]:
    mo = MONTHS.index(month.lower()[:3]) + 1
    if year:
        return _day(date(int(year), mo, int(day)))
    candidate = date(now.year, mo, int(day))
    if candidate > now.date():
        candidate = date(now.year - 1, mo, int(day))
    return _day(candidate)


def _weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    target = WEEKDAYS.index(m.group(2).lower())
    back = (now.weekday() - target) % 7
    if m.group(1) and back == 0:
        back = 7
    return _day(now.date() - timedelta(days=back))


def _anchors(text: str, now: datetime) -> list[Span]:
    found: list[tuple[int, int, tuple[datetime, datetime]]] = []
    for m in _ISO.finditer(text):
        if (iv := _iso(m)) is not None:
            found.append((m.start(), m.end(), iv))
    for rx, order in ((_MONTH_DAY, (1, 2, 3)), (_DAY_MONTH, (2, 1, 3))):
        for m in rx.finditer(text):
            month, day, year = (m.group(i) for i in order)
            if month == "may" and not year:
                continue  # "which 2 may fail": lower-case "may" is a verb unless a year follows
            try:
                found.append((m.start(), m.end(), _month_day(month, day, year, now)))
            except ValueError:
                continue
    for m in _WEEKDAY.finditer(text):
        found.append((m.start(), m.end(), _weekday(m, now)))
    for m in _NAMED_DAY.finditer(text):
        back = 0 if m.group(1).lower() == "today" else 1
        found.append((m.start(), m.end(), _day(now.date() - timedelta(days=back))))
    for m in _AGO.finditer(text):
        delta = _number(m.group(1)) * _UNITS[m.group(2).lower()]
        point = now - delta
        iv = (point, point) if delta < timedelta(days=1) else _day(point.date())
        found.append((m.start(), m.end(), iv))
    found += period_anchors(text, now)
    spans: list[Span] = []
    for b, e, (lo, hi) in sorted(found, key=lambda f: (f[0], -f[1])):
        if spans and b < spans[-1].end:
            continue  # overlapping match: the earlier, longer one wins
        spans.append(Span(lo, hi, b, e, text[b:e], bool(_EVENT.match(text[e:]))))
    return spans


def _between(text: str, spans: list[Span]) -> TimeScope | None:
    for a, b in zip(spans, spans[1:], strict=False):
        gap = text[a.end:b.begin].strip().lower()
        before = text[: a.begin].rstrip().lower()
        if gap in ("and", "to", "until", "through", "-") and before.endswith(("between", "from")):
            return TimeScope(start=a.lo, end=b.hi, phrases=(a.text, b.text))
    return None


_BEFORE = re.compile(rf"\b(?:{_NUM}\s+{_UNIT}\s+)?(before|prior to|leading up to|after)\s*$",
                     re.I)
_SINGLE = re.compile(r"\b(since|after|before|prior to|until)\s*$", re.I)


def _relative_to(text: str, span: Span) -> TimeScope | None:
    head = text[: span.begin]
    m = _BEFORE.search(head)
    if m and m.group(2):
        delta = _number(m.group(1)) * _UNITS[m.group(2).lower()]
        if m.group(3).lower() == "after":
            return TimeScope(start=span.lo, end=span.hi + delta, phrases=(m.group(0) + span.text,))
        return TimeScope(start=span.lo - delta, end=span.hi, phrases=(m.group(0) + span.text,))
    m = _SINGLE.search(head)
    word = m.group(1).lower() if m else ""
    phrase = (m.group(0) if m else "") + span.text
    if word == "since":
        return TimeScope(start=span.lo, phrases=(phrase,))
    if word == "after":
        return TimeScope(start=span.hi, phrases=(phrase,))
    if word in ("before", "prior to", "until"):
        return TimeScope(end=span.hi if span.event_day else span.lo, phrases=(phrase,))
    return None


def _point(text: str, span: Span) -> TimeScope:
    if _CHANGE.search(text):
        return TimeScope(start=span.lo, end=span.hi, phrases=(span.text,))
    point = span.lo if span.lo == span.hi else span.hi - timedelta(microseconds=1)
    return TimeScope(as_of=point, phrases=(span.text,))


def parse_time_scope(text: str, now: datetime) -> TimeScope:
    """The time the question is about, or an empty scope when it names none."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    spans = _anchors(text, now)
    if spans:
        return (_between(text, spans) or _relative_to(text, spans[0])
                or _point(text, spans[0]))
    release = release_reference(text)
    if release is not None:
        return TimeScope(phrases=(release[2],), release=(release[0], release[1]))
    m = _RECENT.search(text)
    if m:
        delta = _number(m.group(1)) * _UNITS[m.group(2).lower()]
        return TimeScope(start=now - delta, end=now, phrases=(m.group(0),))
    return TimeScope()
