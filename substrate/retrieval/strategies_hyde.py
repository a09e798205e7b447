"""HyDE (RSN-03): when the question's own embedding matches weakly (best cosine below
``HYDE_THRESHOLD``, default 0.55) and the ``explain`` model role is configured (or ``cypher``;
CHAT_URL is the explain role's alias), embed a hypothetical answer instead and search with it.
Without a model the strategy says it was skipped and returns nothing."""

from __future__ import annotations

from substrate.llm.roles import RoleLLM, Usage, role_config
from substrate.retrieval.context import SearchContext, StrategyResult
from substrate.retrieval.registry import register
from substrate.retrieval.router import Intent
from substrate.retrieval.strategies_text import entity_hit, tenant_rows
from substrate.settings import ENV_DEFAULTS

PROMPT = ("Write a short paragraph, in the style of an engineering organisation's architecture "
          "notes, that would answer this question. Name services, teams and decisions "
          "plausibly.\n\nQuestion: {question}")


async def hyde(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("hyde")
    plain = await tenant_rows(ctx, "retrieval/vector_entities", 1,
                              embedding=await ctx.query_embedding())
    # Neo4j's cosine vector index scores (1 + cos) / 2; the threshold is on the cosine
    best = 2.0 * float(plain[0]["score"]) - 1.0 if plain else 0.0
    threshold = float(ctx.settings.env.get("HYDE_THRESHOLD") or ENV_DEFAULTS["HYDE_THRESHOLD"])
    if best >= threshold:
        result.note = f"not needed: the question matches directly (cosine {best:.2f})"
        return result
    config = next((c for c in (role_config(ctx.settings, r) for r in ("explain", "cypher"))
                   if c.configured), None)
    if config is None:
        result.note = "skipped: no explain/cypher model role configured (MODEL_EXPLAIN_URL)"
        return result
    llm, usage = RoleLLM(config), Usage()
    try:
        document = await llm.complete(PROMPT.format(question=ctx.query), usage)
    finally:
        await llm.aclose()
    vector = await ctx.embed_query(document)
    rows = await tenant_rows(ctx, "retrieval/vector_entities", ctx.options.top_k,
                             embedding=vector)
    result.hits = [entity_hit(r) for r in rows]
    result.facts = [{"hypothetical_document": document, "question_cosine": best,
                     "threshold": threshold, "role": config.role, "usage": usage.summary()}]
    return result


register("hyde", hyde, Intent.FREE_TEXT, Intent.TEMPORAL)
