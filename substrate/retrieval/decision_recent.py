""""What is the most recent architecture decision?", "the last 3 ADRs", "our first ADR": the
decision records ordered by their date (the record's own ``Date:``, else when it first
appeared in the replayed history), each cited at its title line."""

from __future__ import annotations

from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.decision_dates import (
    MAX_RECORDS,
    SHOWN,
    asked_order,
    dated_itself,
    day_of,
    ordered,
)
from substrate.retrieval.rationale import commit_of, git_source


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
                        "own_date": dated_itself(props), "hop": hop})
    for rank, r in enumerate(records):
        result.hits.append(Hit(r["adr"]["ceid"], str(r["adr"].get("name") or ""),
                               "DecisionNode", r["date"], 1.0 / (1 + rank)))
        result.hops.append({**r["hop"], "hop": 1})
    result.facts.append({"oldest": oldest, "asked": many, "records": records,
                         "total": len(rows)})
    return result
