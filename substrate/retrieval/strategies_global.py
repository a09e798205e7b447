"""Strategic questions (RSN-UC-04): architectural risks from the GDS risks job's stored
rankings (``risk_rankings``; no projection per request) and global GraphRAG over Leiden
community summaries (RSN-14). Registered into the search presets."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gds_jobs import risks_store
from substrate.retrieval.composers import listing
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.global_mapreduce import global_mapreduce
from substrate.retrieval.global_search import global_search
from substrate.retrieval.raptor import raptor
from substrate.retrieval.registry import register
from substrate.retrieval.router import Intent

NOTHING_STORED = ("No stored risk ranking for this tenant at this snapshot and clearance yet; "
                  "run `python -m gds_jobs risks --tenant {tenant}` (the scheduled GDS job) "
                  "to compute one.")


def _risk_text(items: list[Any]) -> str:
    lines = []
    for i, item in enumerate(items, 1):
        reasons = listing((f.note for f in item.factors[:3]), "no factor recorded", "; ")
        refs = sorted({h["evidence_ref"] for f in item.factors for h in f.evidence})[:2]
        lines.append(f"{i}. {item.name} ({item.label}, risk {item.score:.2f}): {reasons}"
                     + (f" [evidence: {', '.join(refs)}]" if refs else ""))
    return "Top architectural risks:\n" + "\n".join(lines)


async def risks(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("risks")
    limit = min(ctx.route.top_n or 3, risks_store.STORED_ITEMS)
    ranking = await risks_store.newest_cached(ctx.settings, ctx.scope)
    if ranking is None:
        result.note = NOTHING_STORED.format(tenant=ctx.scope.tenant)
        result.pending = "risk_ranking"
        return result
    items = await _in_jurisdiction(ctx, ranking.items)
    result.truncated = len(items) > limit
    for rank, item in enumerate(items[:limit]):
        text = "; ".join(f.note for f in item.factors)
        result.hits.append(Hit(item.ceid, item.name, item.label, text, 1.0 / (1 + rank)))
        result.facts.append(item.to_dict())
        for f in item.factors:
            result.hops.extend({**h, "hop": 1} for h in f.evidence[:5])
    provenance = (f"(stored ranking of the GDS risks job: snapshot {ranking.snapshot_version}, "
                  f"clearance {ranking.clearance}, computed {ranking.computed_at:%Y-%m-%d %H:%M}"
                  " UTC)")
    result.note = (f"{_risk_text(items[:limit])}\n{provenance}" if items
                   else f"No architectural risks scored above zero {provenance}")
    return result


async def _in_jurisdiction(ctx: SearchContext, items: list[Any]) -> list[Any]:
    """Rankings are stored per clearance, not per jurisdiction: a reader restricted to
    jurisdictions gets only the items it may see (``temporal/hidden`` names the others), and
    of those only the evidence edges and notes that name no entity it may not see."""
    if ctx.scope.jurisdictions is None or not items:
        return items
    named = {item.ceid for item in items} | {
        h[end] for item in items for f in item.factors for h in f.evidence
        for end in ("from", "to")}
    rows = await ctx.reader.rows("temporal/hidden", ctx.scope, {"label": "Entity"},
                                 ceids=sorted(named))
    hidden = {r["ceid"] for r in rows}
    return [_without(item, hidden) for item in items if item.ceid not in hidden]


def _without(item: Any, hidden: set[str]) -> Any:
    factors = [replace(f, evidence=[h for h in f.evidence
                                    if h["from"] not in hidden and h["to"] not in hidden],
                       note=f.factor.replace("_", " ") + " (details not visible)"
                       if any(c in f.note for c in hidden) else f.note)
               for f in item.factors]
    return replace(item, factors=factors)


async def global_communities(ctx: SearchContext) -> StrategyResult:
    scope = ctx.scope  # summaries of the reader's level and snapshot (policy)
    rows = await global_search(ctx.settings, scope.tenant, await ctx.query_embedding(),
                               k=min(ctx.options.top_k, 10), clearance=scope.clearance[-1],
                               version=scope.version, jurisdictions=scope.jurisdictions)
    hits = [Hit(f"community:{r['community_id']}", str(r["title"]), "Community",
                str(r["summary"])[:600], float(r["score"])) for r in rows]
    result = StrategyResult("global_graphrag", hits=hits)
    result.facts = [{k: v for k, v in r.items() if k != "embedding"} for r in rows]
    if not rows:
        result.note = None
    return result


def install() -> None:
    # global_graphrag: map-reduce over every summary (RSN-14); community_search: the flat
    # nearest-neighbour lookup it replaced (kept for comparison); raptor: the tree walk (RSN-05)
    register("community_search", global_communities)
    register("global_graphrag", global_mapreduce, Intent.STRATEGIC_RISKS)
    register("raptor", raptor, Intent.STRATEGIC_RISKS)
    register("risks", risks)  # no preset entry: the plan of a risk question (registry.RISK_PLAN)


install()
