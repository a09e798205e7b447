"""Reranking you can measure (RSN-06): MRR@10, hit@1 (the first result is an expected
entity: answer accuracy of the ranking) and recall@10 of

* ``rrf`` — the fused order alone (no rerank),
* ``local_tiebreak`` — the local reranker as the pipeline runs it (RRF order, relevance
  orders only RRF's ties),
* ``local_blend`` — the local reranker reordering by relevance (bi-encoder cosine + BM25),
* ``endpoint`` — ``RERANK_URL``'s reranker, only when one is configured (the tests' local
  server checks the protocol, not quality, so it is never measured here),

over the question sets whose answers are entity ids: ``tests/questions/*.jsonl`` (the demo
organisation's, and a devset repository's when its tenant is loaded). Candidates are what
/search fuses for each question (``top_k`` 20, no rerank, in-process on the stack's
services), so every ranker reorders the same list, as the pipeline does with 2 x top_k;
``ms`` is a rerank's p50 with the embedding memo warm (a first run embeds ~20 texts).

Run: ``.substrate/venv/bin/python -m tests.bench.bench_rerank`` (needs ``substrate up``).
Writes ``$SUBSTRATE_HOME/bench/rerank.json``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from substrate.retrieval.context import SearchOptions
from substrate.retrieval.rerank import HttpReranker, LocalReranker
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.nl_questions import QUESTIONS, load

K = 10
CANDIDATES = 20
SETS = {"demo_acme.jsonl": None, "devset_boa.jsonl": "bank-of-anthos",
        "devset_retail.jsonl": "retail-store-sample-app", "devset_fac.jsonl": "fac",
        "devset_mgg.jsonl": "manage.get.gov"}  # file -> tenant (None: SUBSTRATE_TENANT)
Order = Callable[[str, list[dict[str, Any]]], Awaitable[list[int]]]


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    expect: frozenset[str]
    candidates: list[dict[str, Any]]


def scores(order: Sequence[int], q: Question) -> tuple[float, float, float]:
    """(reciprocal rank of the first expected entity within K, hit@1, recall@K)."""
    ids = [q.candidates[i]["id"] for i in order[:K]]
    first = next((r for r, x in enumerate(ids, 1) if x in q.expect), None)
    return (1 / first if first else 0.0, 1.0 if ids[:1] and ids[0] in q.expect else 0.0,
            len(q.expect & set(ids)) / len(q.expect))


async def collect(svc: ReadService, settings: Settings) -> dict[str, list[Question]]:
    sets: dict[str, list[Question]] = {}
    options = SearchOptions(top_k=CANDIDATES, rerank=False)
    for name, tenant in SETS.items():
        if not (QUESTIONS / name).exists():
            continue
        try:
            scope = await svc.scope(tenant or settings.tenant)
        except Exception:  # noqa: BLE001 - that devset repository is not loaded here
            continue
        out = []
        for item in load(name):
            if not isinstance(item["expect"], list) or not item["expect"]:
                continue  # counts: no entity to rank
            result = await svc.search(item["q"], scope, options)
            out.append(Question(item["id"], item["q"], frozenset(item["expect"]),
                                result["results"]))
        sets[name] = out
    return sets


def rankers(svc: ReadService, settings: Settings) -> dict[str, Order]:
    embed = svc._embed_many  # the pipeline's embedder, memoised as in /search
    tiebreak, blend = LocalReranker(embed), LocalReranker(embed, mode="blend")

    async def rrf(query: str, cands: list[dict[str, Any]]) -> list[int]:
        return list(range(len(cands)))

    def local(reranker: LocalReranker) -> Order:
        async def order(query: str, cands: list[dict[str, Any]]) -> list[int]:
            docs = [f"{h['name']}. {h['text']}" for h in cands]
            outcome = await reranker.rerank(query, docs, None, [h["score"] for h in cands])
            return [r.index for r in outcome.results]
        return order

    out: dict[str, Order] = {"rrf": rrf, "local_tiebreak": local(tiebreak),
                             "local_blend": local(blend)}
    if settings.rerank_url:
        endpoint = HttpReranker(settings.rerank_url, tiebreak)

        async def http(query: str, cands: list[dict[str, Any]]) -> list[int]:
            docs = [f"{h['name']}. {h['text']}" for h in cands]
            outcome = await endpoint.rerank(query, docs, None)
            if outcome.backend != "http":
                raise RuntimeError(outcome.fallback_reason)
            return [r.index for r in outcome.results]
        out["endpoint"] = http
    return out


async def measure(settings: Settings) -> dict[str, Any]:
    services = open_services(settings)
    svc = ReadService(services, None)
    await svc.open()
    try:
        await asyncio.to_thread(svc.warm_up)
        sets = await collect(svc, settings)
        table: dict[str, Any] = {}
        for name, questions in sets.items():
            for ranker, order in rankers(svc, settings).items():
                for q in questions:  # untimed: the embedding memo warm for every ranker
                    await order(q.text, q.candidates)
                rows, ms = [], []
                for q in questions:
                    started = time.perf_counter()
                    rows.append(scores(await order(q.text, q.candidates), q))
                    ms.append((time.perf_counter() - started) * 1000)
                table[f"{name} {ranker}"] = {
                    "questions": len(rows),
                    "mrr@10": round(statistics.fmean(r[0] for r in rows), 3),
                    "hit@1": round(statistics.fmean(r[1] for r in rows), 3),
                    "recall@10": round(statistics.fmean(r[2] for r in rows), 3),
                    "rerank_ms_p50": round(statistics.median(ms), 2)}
        return table
    finally:
        await svc.aclose()
        await services.aclose()


def main() -> None:
    settings = Settings.from_env()
    table = asyncio.run(measure(settings))
    print(f"{'set ranker':<36} {'n':>3} {'MRR@10':>7} {'hit@1':>6} {'R@10':>6} {'ms':>7}")
    for key, row in table.items():
        print(f"{key:<36} {row['questions']:>3} {row['mrr@10']:>7.3f} {row['hit@1']:>6.3f} "
              f"{row['recall@10']:>6.3f} {row['rerank_ms_p50']:>7.2f}")
    if not settings.rerank_url:
        print("endpoint: not measured (RERANK_URL is not set)")
    out = settings.home / "bench" / "rerank.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=2))
    print(f"-> {out}")


if __name__ == "__main__":
    main()
