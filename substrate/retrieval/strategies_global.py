"""Strategic questions (RSN-UC-04): architectural risks from the GDS jobs and global
GraphRAG over Leiden community summaries (RSN-14). Registered into the search presets."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from graphdatascience import GraphDataScience

from gds_jobs.risks import rank_risks
from gds_jobs.runtime import JobContext
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.global_search import global_search
from substrate.retrieval.registry import register
from substrate.retrieval.router import Intent

_GDS: dict[int, GraphDataScience] = {}
_LOCK = threading.Lock()


def _job_context(ctx: SearchContext) -> JobContext:
    services = ctx.services
    with _LOCK:
        gds = _GDS.get(id(services.driver))
        if gds is None:
            gds = GraphDataScience(services.driver, arrow=False, show_progress=False)
            _GDS[id(services.driver)] = gds
    return JobContext(ctx.settings, services.driver, gds, services.cypher)


def _risk_text(items: list[Any]) -> str:
    lines = []
    for i, item in enumerate(items, 1):
        reasons = "; ".join(f.note for f in item.factors[:3])
        refs = sorted({h["evidence_ref"] for f in item.factors for h in f.evidence})[:2]
        lines.append(f"{i}. {item.name} ({item.label}, risk {item.score:.2f}): {reasons}"
                     + (f" [evidence: {', '.join(refs)}]" if refs else ""))
    return "Top architectural risks:\n" + "\n".join(lines)


async def risks(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("risks")
    limit = ctx.route.top_n or 3
    items = await asyncio.to_thread(rank_risks, _job_context(ctx), ctx.scope, limit + 1)
    result.truncated = len(items) > limit
    for rank, item in enumerate(items[:limit]):
        text = "; ".join(f.note for f in item.factors)
        result.hits.append(Hit(item.ceid, item.name, item.label, text, 1.0 / (1 + rank)))
        result.facts.append(item.to_dict())
        for f in item.factors:
            result.hops.extend({**h, "hop": 1} for h in f.evidence[:5])
    result.note = _risk_text(items[:limit]) if items else None
    return result


async def global_communities(ctx: SearchContext) -> StrategyResult:
    rows = await global_search(ctx.settings, ctx.scope.tenant, await ctx.query_embedding(),
                               k=min(ctx.options.top_k, 10))
    hits = [Hit(f"community:{r['community_id']}", str(r["title"]), "Community",
                str(r["summary"])[:600], float(r["score"])) for r in rows]
    result = StrategyResult("global_graphrag", hits=hits)
    result.facts = [{k: v for k, v in r.items() if k != "embedding"} for r in rows]
    if not rows:
        result.note = None
    return result


def install() -> None:
    register("global_graphrag", global_communities, Intent.STRATEGIC_RISKS)
    register("risks", risks, Intent.STRATEGIC_RISKS)


install()
