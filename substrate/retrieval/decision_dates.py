"""Decision records in date order: which question asks for the newest or oldest ones, a
record's date (its own ``Date:``, else its first appearance in the history) and the order."""

from __future__ import annotations

import re
from typing import Any

MAX_RECORDS = 500
SHOWN = 5  # a question for "the" newest record also sees the ones before it
_ORDER = re.compile(r"\b(?:most\s+recent(?:ly)?|latest|newest|recent|last(?!\s+(?:year|month|"
                    r"week|quarter|sprint|days?|weeks?|months?|years?|time)\b)"
                    r"|(?P<old>oldest|earliest|first))\b", re.I)
_RECORDS = re.compile(r"\b(?:decisions?|adrs?|(?:decision\s+)?records?)\b", re.I)
_PLURAL = re.compile(r"\b(?:decisions|adrs|records)\b", re.I)
_COUNT = re.compile(r"\b(\d{1,2})\b")
_WHY = re.compile(r"^\s*why\b", re.I)  # a rationale: the record's quotes answer it
_ONE_OR_A_YEAR = re.compile(r"\badr[-\s#]?\d+|\b\d{4}\b", re.I)  # "ADR 12", "in 2024"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def asked_order(question: str) -> tuple[bool, int] | None:
    """(oldest first?, how many) when the question asks for the newest or oldest decision
    records; None otherwise (a "why" question, one named record, a year's records)."""
    oldest = None if _WHY.search(question) else recency(question)
    if oldest is None:
        return None
    count = _COUNT.search(question)
    many = int(count.group(1)) if count else (3 if _PLURAL.search(question) else 1)
    return oldest, max(1, min(many, 20))


def day_of(props: dict[str, Any]) -> str:
    """The record's date as ``YYYY-MM-DD``: its own, else its first appearance ('' if none)."""
    for value in (props.get("date"), props.get("first_seen")):
        found = _DAY.search(str(value or ""))
        if found:
            return found.group(0)
    return ""


def dated_itself(props: dict[str, Any]) -> bool:
    """Does the record state its own date (else its date is its first appearance)?"""
    return _DAY.search(str(props.get("date") or "")) is not None


def ordered(rows: list[dict[str, Any]], oldest: bool) -> list[dict[str, Any]]:
    """Rows by date (then number, then id), newest first unless ``oldest``; undated last."""
    dated = [r for r in rows if day_of(r["props"])]
    undated = [r for r in rows if not day_of(r["props"])]

    def key(r: dict[str, Any]) -> tuple[str, int, str]:
        number = r["props"].get("number")
        return day_of(r["props"]), int(number) if isinstance(number, int) else 0, \
            str(r["entity"]["ceid"])

    return sorted(dated, key=key, reverse=not oldest) + undated


def recency(question: str) -> bool | None:
    """For a question about "the latest / newest / first ADR" (a "why" question included,
    no record named by number or year): True for the oldest first, False for the newest
    first; None when it names no such order."""
    order = _ORDER.search(question)
    if order is None or _RECORDS.search(question) is None or _ONE_OR_A_YEAR.search(question):
        return None
    return order.group("old") is not None
