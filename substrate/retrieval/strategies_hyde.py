"""HyDE (RSN-03): when the question's own embedding matches weakly (best cosine below 0.55)
and a chat endpoint is configured, embed a hypothetical answer instead and search with it.
Without a chat endpoint the strategy says it was skipped and returns nothing."""

from __future__ import annotations

import asyncio

from substrate.connectors.llm_edges import OpenAIChatClient
from substrate.retrieval.context import SearchContext, StrategyResult
from substrate.retrieval.registry import register
from substrate.retrieval.router import Intent
from substrate.retrieval.strategies_text import entity_hit

HYDE_THRESHOLD = 0.55
PROMPT = ("Write a short paragraph, in the style of an engineering organisation's architecture "
          "notes, that would answer this question. Name services, teams and decisions "
          "plausibly.\n\nQuestion: {question}")


async def hyde(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("hyde")
    plain = await ctx.reader.rows("retrieval/vector_entities", ctx.scope,
                                  embedding=await ctx.query_embedding(), k=1)
    # Neo4j's cosine vector index scores (1 + cos) / 2; the threshold is on the cosine
    best = 2.0 * float(plain[0]["score"]) - 1.0 if plain else 0.0
    if best >= HYDE_THRESHOLD:
        result.note = f"not needed: the question matches directly (cosine {best:.2f})"
        return result
    if not ctx.settings.chat_url:
        result.note = "skipped: no chat endpoint configured (CHAT_URL)"
        return result
    client = OpenAIChatClient(ctx.settings.chat_url, ctx.settings.chat_model, timeout=30)
    try:
        document = await asyncio.to_thread(client.complete, PROMPT.format(question=ctx.query))
    finally:
        client.close()
    vector = await ctx.embed_query(document)
    rows = await ctx.reader.rows("retrieval/vector_entities", ctx.scope, embedding=vector,
                                 k=ctx.options.top_k)
    result.hits = [entity_hit(r) for r in rows]
    result.facts = [{"hypothetical_document": document, "question_cosine": best}]
    return result


register("hyde", hyde, Intent.FREE_TEXT, Intent.TEMPORAL)
