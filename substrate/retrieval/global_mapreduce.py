"""Global GraphRAG as map-reduce over the Leiden community summaries (RSN-14).

* map: every summary of the reader's set (``global_search.summary_set``: its clearance level,
  the set of its snapshot, its jurisdictions) is scored for relevance to the question — by
  the ``scout`` model role when configured (batches of ``MAP_BATCH`` summaries, 0-10 each,
  a batch that fails falls back to the model-free score), else by embedding cosine blended
  with keyword overlap (``relevance``). Each batch's scores are streamed as a ``map`` stage
  over ``WS /stream`` as soon as they are known;
* reduce: the top-ranked summaries (at most ``REDUCE_TOP``, scoring at least ``MAP_FLOOR``
  of the best) are combined into one answer citing the evidence of their members' edges
  (``gds/member_evidence``: each edge's ``evidence_ref``) — written by the scout role when
  configured, else composed from the summaries' most relevant sentences.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from substrate.llm.roles import RoleLLM, Usage, role_config
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.global_search import summary_set
from substrate.retrieval.relevance import keyword_overlap, relevance, terms

MAP_BATCH = 8
REDUCE_TOP = 4
MAP_FLOOR = 0.6  # of the best score
EVIDENCE_LIMIT = 40
MAP_SYSTEM = ("You rate how useful each community summary is for answering a question about "
              "a software system. Reply with JSON only: {\"scores\": [{\"id\": <id>, "
              "\"score\": <0-10>}]}.")
REDUCE_SYSTEM = ("You answer a question about a software system from community summaries and "
                 "evidence edges. Cite evidence as [n]. Use only what is given.")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _local_scores(rows: Sequence[dict[str, Any]], vector: Sequence[float],
                  query: str) -> list[float]:
    words = terms(query)
    return [relevance(vector, words, r["embedding"], f"{r['title']} {r['summary']}")
            for r in rows]


def _parse_scores(text: str, ids: Sequence[str]) -> dict[str, float]:
    match = re.search(r"\{.*\}", text, re.S)
    data = json.loads(match.group(0) if match else text)
    out = {}
    for item in data.get("scores", []):
        if str(item.get("id")) in ids:
            out[str(item["id"])] = max(0.0, min(10.0, float(item["score"]))) / 10.0
    return out


async def _scout_batch(llm: RoleLLM, usage: Usage, query: str,
                       batch: Sequence[dict[str, Any]]) -> dict[str, float]:
    listing = "\n\n".join(f"id: {r['community_id']}\n{r['title']}: {str(r['summary'])[:800]}"
                          for r in batch)
    text = await llm.complete(f"Question: {query}\n\nSummaries:\n\n{listing}", usage,
                              system=MAP_SYSTEM)
    return _parse_scores(text, [str(r["community_id"]) for r in batch])


async def map_step(ctx: SearchContext, rows: list[dict[str, Any]], usage: Usage,
                   llm: RoleLLM | None) -> list[tuple[float, dict[str, Any]]]:
    """Every summary's relevance, streamed batch by batch; the ranking, best first."""
    fallback = _local_scores(rows, await ctx.query_embedding(), ctx.query)
    batches = [list(range(i, min(i + MAP_BATCH, len(rows))))
               for i in range(0, len(rows), MAP_BATCH)]

    async def one(n: int, idx: list[int]) -> list[float]:
        scores, scorer = [fallback[i] for i in idx], "embedding+keyword"
        if llm is not None:
            try:
                got = await _scout_batch(llm, usage, ctx.query, [rows[i] for i in idx])
                scores = [got.get(str(rows[i]["community_id"]), fallback[i]) for i in idx]
                scorer = "scout"
            except Exception:  # noqa: BLE001 - this batch keeps the model-free scores
                scorer = "embedding+keyword (scout failed)"
        if ctx.emit is not None:
            await ctx.emit("map", {"batch": n, "of": len(batches), "scorer": scorer,
                                   "scores": [{"community_id": rows[i]["community_id"],
                                               "title": rows[i]["title"], "score": s}
                                              for i, s in zip(idx, scores, strict=True)]})
        return scores

    scored = await asyncio.gather(*(one(n, idx) for n, idx in enumerate(batches)))
    flat = [s for batch in scored for s in batch]
    ranked = sorted(zip(flat, rows, strict=True),
                    key=lambda p: (-p[0], p[1]["level"], p[1]["community_id"]))
    return ranked


def _best_sentences(query: str, text: str, n: int = 2) -> str:
    words = terms(query)
    sentences = [s for s in _SENTENCE.split(text) if s]
    ranked = sorted(range(len(sentences)),
                    key=lambda i: (-keyword_overlap(words, sentences[i]), i))[:n]
    return " ".join(sentences[i] for i in sorted(ranked))


def compose(query: str, top: Sequence[tuple[float, dict[str, Any]]],
            hops: Sequence[dict[str, Any]]) -> str:
    """The model-free reduce: per community its most relevant sentences, then the citations
    of the evidence behind its members."""
    lines = []
    for score, row in top:
        members = {m["ceid"] for m in row["members"]}
        refs = [i + 1 for i, h in enumerate(hops) if h["from"] in members or h["to"] in members]
        cite = "".join(f"[{n}]" for n in refs[:4])
        lines.append(f"- {row['title']} (relevance {score:.2f}): "
                     f"{_best_sentences(query, str(row['summary']))} {cite}".rstrip())
    sources = [f"[{i + 1}] {h['from']} {h['type']} {h['to']}: {h['evidence_ref']}"
               for i, h in enumerate(hops)]
    return "\n".join(["Across the system:", *lines, "Evidence:", *sources])


async def _reduce_with_scout(llm: RoleLLM, usage: Usage, query: str,
                             top: Sequence[tuple[float, dict[str, Any]]],
                             hops: Sequence[dict[str, Any]]) -> str:
    summaries = "\n\n".join(f"{row['title']}: {row['summary']}" for _, row in top)
    evidence = "\n".join(f"[{i + 1}] {h['from']} {h['type']} {h['to']} ({h['evidence_ref']})"
                         for i, h in enumerate(hops))
    return await llm.complete(f"Question: {query}\n\nCommunity summaries:\n{summaries}\n\n"
                              f"Evidence:\n{evidence}", usage, system=REDUCE_SYSTEM)


async def global_mapreduce(ctx: SearchContext) -> StrategyResult:
    scope = ctx.scope
    result = StrategyResult("global_graphrag")
    rows = await summary_set(ctx.settings, scope.tenant, clearance=scope.clearance[-1],
                             version=scope.version, jurisdictions=scope.jurisdictions)
    if not rows:
        result.note = "no community summaries stored for this tenant, clearance and snapshot"
        return result
    config = role_config(ctx.settings, "scout")
    llm, usage = (RoleLLM(config) if config.configured else None), Usage()
    try:
        ranked = await map_step(ctx, rows, usage, llm)
        best = ranked[0][0]
        top = [p for p in ranked if p[0] >= MAP_FLOOR * best][:REDUCE_TOP] or ranked[:1]
        ceids = sorted({m["ceid"] for _, r in top for m in r["members"]})
        hops = [r["hop"] for r in await ctx.reader.rows(
            "gds/member_evidence", scope, None, ceids=ceids, limit=EVIDENCE_LIMIT)]
        answer = compose(ctx.query, top, hops)
        if llm is not None:
            try:
                answer = await _reduce_with_scout(llm, usage, ctx.query, top, hops)
            except Exception as exc:  # noqa: BLE001 - the composed answer stands
                result.facts.append({"reduce_error": repr(exc)[:300]})
    finally:
        if llm is not None:
            await llm.aclose()
    result.hits = [Hit(f"community:{r['community_id']}", str(r["title"]), "Community",
                       str(r["summary"])[:600], s) for s, r in ranked[: ctx.options.top_k]]
    result.hops = [{**h, "hop": 1} for h in hops]
    result.trace = [{"community_id": r["community_id"], "level": r["level"], "title": r["title"],
                     "score": s, "reduced": i < len(top)} for i, (s, r) in enumerate(ranked)]
    result.facts.append({"map": {"summaries": len(rows), "scorer": "scout" if llm else
                                 "embedding+keyword", "reduced": len(top),
                                 "snapshot_version": rows[0]["snapshot_version"]},
                         "model_usage": usage.summary()})
    result.note = answer
    return result
