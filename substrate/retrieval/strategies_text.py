"""Text strategies: vector and keyword over entities, and the chunk GraphRetriever."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from substrate.retrieval.context import Hit, SearchContext, StrategyResult, chunk_options
from substrate.retrieval.fusion import (
    BlendOptions,
    TraversalEdge,
    expand_and_blend,
    hybrid_seeds,
    ranked_by_score,
)
from substrate.retrieval.mentions import any_of

CHUNK_RELATIONS = ["REFERENCES", "ELABORATES", "DEPENDS_ON", "CONTRADICTS", "PART_OF",
                   "SIMILAR_TO", "SEQUENCE", "CAUSED_BY"]


def entity_hit(row: dict[str, Any]) -> Hit:
    e = row["entity"]
    return Hit(e["ceid"], str(e.get("name") or e["ceid"]), str(e.get("label") or ""),
               str(row.get("text") or e.get("name") or "")[:600], float(row["score"]))


POOL = 4  # candidates read from a shared index per result wanted
WIDE_POOL = 10_000  # the full-text candidates read when POOL held too few of this tenant's


async def tenant_rows(ctx: SearchContext, template: str, k: int,
                      **params: Any) -> list[dict[str, Any]]:
    """The ``k`` best rows of an index search template for the caller's tenant. The vector
    and full-text indexes hold every tenant's nodes: their ``k * POOL`` best are read and
    this tenant's kept. When that leaves fewer than ``k`` (a tenant among larger ones), a
    vector search scores the tenant's own embedded nodes exactly; a full-text search reads
    ``WIDE_POOL`` candidates, but only when the first read filled its whole pool (its
    ``candidates``): when the index had fewer matches, a wider read finds the same ones."""
    pool = k * POOL
    rows = await ctx.reader.rows(template, ctx.scope, k=k, pool=pool, **params)
    if "embedding" in params:
        if len(rows) >= k:
            return rows
        return await ctx.reader.rows(template, ctx.scope, {"exact": True}, k=k, pool=0,
                                     **params)
    mine = [r for r in rows if r["score"] is not None]
    if len(mine) >= k or (rows and rows[0]["candidates"] < pool):
        return mine
    wide = await ctx.reader.rows(template, ctx.scope, k=k, pool=WIDE_POOL, **params)
    return [r for r in wide if r["score"] is not None]


def keyword_query(ctx: SearchContext) -> str:
    words = [w for w in ctx.query.split() if len(w) > 2]
    return any_of(list(ctx.route.mentions) + words)


async def vector(ctx: SearchContext) -> StrategyResult:
    rows = await tenant_rows(ctx, "retrieval/vector_entities", ctx.options.top_k,
                             embedding=await ctx.query_embedding())
    return StrategyResult("vector", hits=[entity_hit(r) for r in rows])


async def keyword(ctx: SearchContext) -> StrategyResult:
    lucene = keyword_query(ctx)
    if not lucene:
        return StrategyResult("keyword", note="no searchable words")
    rows = await tenant_rows(ctx, "retrieval/keyword_entities", ctx.options.top_k,
                             lucene=lucene)
    return StrategyResult("keyword", hits=[entity_hit(r) for r in rows])


async def _prefetch_edges(ctx: SearchContext, seeds: Sequence[str],
                          opts: BlendOptions) -> dict[str, list[TraversalEdge]]:
    """BFS up to ``max_hops`` from the seeds; adjacency by source chunk."""
    adjacency: dict[str, list[TraversalEdge]] = {}
    frontier, seen = list(seeds), set(seeds)
    types = list(opts.relation_filter or CHUNK_RELATIONS)
    for _ in range(opts.max_hops):
        if not frontier:
            break
        rows = await ctx.reader.rows("retrieval/neighbours", ctx.scope,
                                     {"label": "Chunk", "both": opts.bidirectional},
                                     ceids=frontier, types=types)
        nxt = []
        for r in rows:
            h = r["hop"]
            adjacency.setdefault(r["from"], []).append(TraversalEdge(
                source_id=r["from"], target_id=r["to"], relation=h["type"],
                weight=float(h["weight"] or 0.0)))
            if r["to"] not in seen:
                seen.add(r["to"])
                nxt.append(r["to"])
        frontier = nxt
    return adjacency


async def chunk_graph(ctx: SearchContext) -> StrategyResult:
    """chunk-graph-rag.md GraphRetriever: hybrid-seeded BFS with hop decay and blending."""
    result = StrategyResult("chunk_graph")
    given = chunk_options(ctx.options.chunk or {})
    k = int(given.pop("seed_top_k", ctx.options.top_k))
    top = ctx.options.top_k
    keyword_weight = float(given.pop("keyword_weight", 0.3))
    vec = await tenant_rows(ctx, "retrieval/vector_chunks", k,
                            embedding=await ctx.query_embedding())
    lucene = keyword_query(ctx)
    kw = await tenant_rows(ctx, "retrieval/keyword_chunks", k, lucene=lucene) if lucene else []
    texts = {r["ceid"]: (r["text"], r["doc"]) for r in [*vec, *kw]}
    cos = {r["ceid"]: float(r["score"]) for r in vec}
    seeds = hybrid_seeds(ranked_by_score(cos), ranked_by_score(
        {r["ceid"]: float(r["score"]) for r in kw}), keyword_weight=keyword_weight, top_k=k)
    opts = BlendOptions(**{"max_hops": min(ctx.options.max_hops, 3), "bidirectional": True,
                           **given})
    seed_scores = {s.id: cos.get(s.id, 0.0) for s in seeds}
    adjacency = await _prefetch_edges(ctx, list(seed_scores), opts)
    blended = expand_and_blend(seed_scores, lambda ids: [e for i in ids
                                                        for e in adjacency.get(i, [])],
                               opts, top_k=top + 1)
    result.truncated = len(blended) > top
    missing = [b.id for b in blended[:top] if b.id not in texts]
    if missing:
        for row in await ctx.reader.rows("retrieval/chunk_texts", ctx.scope, ceids=missing):
            texts[row["ceid"]] = (row["text"], row["doc"])
    for b in blended[:top]:
        text, doc = texts.get(b.id, ("", ""))
        result.hits.append(Hit(b.id, str(doc or b.id), "Chunk", str(text)[:600], b.score))
        result.facts.append({"chunk": b.id, "doc": doc, "score": b.score,
                             "graph_context": [c.__dict__ for c in b.graph_context]})
    return result
