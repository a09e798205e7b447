""""What is the most recent architecture decision?", "the last 3 ADRs", "our first ADR": the
decision records ordered by their date (the record's own ``Date:``, else when it first
appeared in the replayed history), each cited at its title line."""

from __future__ import annotations

import re
from typing import Any

from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.rationale import commit_of, git_source

MAX_RECORDS = 500
SHOWN = 5  # a question for "the" newest record also sees the ones before it
_ORDER = re.compile(r"\b(?:most\s+recent(?:ly)?|latest|newest|recent|last(?!\s+(?:year|month|"
                    r"week|quarter|sprint|days?|weeks?|months?|years?|time)\b)"
                    r"|(?P<old>oldest|earliest|first))\b", re.I)
_RECORDS = re.compile(r"\b(?:decisions?|adrs?|(?:decision\s+)?records?)\b", re.I)
_PLURAL = re.compile(r"\b(?:decisions|adrs|records)\b", re.I)
_COUNT = re.compile(r"\b(\d{1,2})\b")
_NOT_THIS = re.compile(r"^\s*why\b|\badr[-\s#]?\d+|\b\d{4}\b", re.I)  # a rationale, one record
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def asked_order(question: str) -> tuple[bool, int] | None:
    """(oldest first?, how many) when the question asks for the newest or oldest decision
    records; None otherwise (a "why" question, one named record, a year's records)."""
    order = _ORDER.search(question)
    if order is None or _RECORDS.search(question) is None or _NOT_THIS.search(question):
        return None
    count = _COUNT.search(question)
    many = int(count.group(1)) if count else (3 if _PLURAL.search(question) else 1)
    return order.group("old") is not None, max(1, min(many, 20))


def day_of(props: dict[str, Any]) -> str:
    """The record's date as ``YYYY-MM-DD``: its own, else its first appearance ('' if none)."""
    for value in (props.get("date"), props.get("first_seen")):
        found = _DAY.search(str(value or ""))
        if found:
            return found.group(0)
    return ""


def ordered(rows: list[dict[str, Any]], oldest: bool) -> list[dict[str, Any]]:
    """Rows by date (then number, then id), newest first unless ``oldest``; undated last."""
    dated = [r for r in rows if day_of(r["props"])]
    undated = [r for r in rows if not day_of(r["props"])]

    def key(r: dict[str, Any]) -> tuple[str, int, str]:
        number = r["props"].get("number")
        return day_of(r["props"]), int(number) if isinstance(number, int) else 0, \
            str(r["entity"]["ceid"])

    return sorted(dated, key=key, reverse=not oldest) + undated


async def decisions_by_date(ctx: SearchContext) -> StrategyResult | None:
    """The newest (or oldest) records, or None when the question asks no such thing."""
    asked = asked_order(ctx.query)
    if asked is None:
        return None
    oldest, many = asked
    rows = await ctx.reader.rows("retrieval/decisions_by_date", ctx.scope, limit=MAX_RECORDS)
    result = StrategyResult("decision_recent")
    records = []
    for row in ordered(rows, oldest)[:max(many, SHOWN)]:
        props, entity = row["props"], row["entity"]
        line, commit = commit_of(list(props.get("provenance") or []))
        hop = {"type": "RECORDED", "from": entity["ceid"], "to": entity["ceid"],
               "evidence_ref": f"{props.get('path')}#L{line}@{commit[:7]}",
               "source": git_source(props.get("sources")) or "git", "confidence": 1.0}
        records.append({"adr": entity, "status": props.get("status"), "date": day_of(props),
                        "own_date": bool(_DAY.search(str(props.get("date") or ""))), "hop": hop})
    for rank, r in enumerate(records):
        result.hits.append(Hit(r["adr"]["ceid"], str(r["adr"].get("name") or ""),
                               "DecisionNode", r["date"], 1.0 / (1 + rank)))
        result.hops.append({**r["hop"], "hop": 1})
    result.facts.append({"oldest": oldest, "asked": many, "records": records,
                         "total": len(rows)})
    return result
