"""Corpus-wide retrieval on multi-hop questions: RAPTOR (RSN-05) against flat community search,
global map-reduce (RSN-14) and local retrieval; and the latency of UC-04 (risks answered from
the stored GDS results).

The question set is ``multihop_questions`` (33 questions, gold from the sources): 23 over the
demo tenant and 10 over two devset repositories, which are loaded at HEAD into
``devset-<repository>`` tenants (``substrate ingest git``) and given communities and a RAPTOR
tree (``python -m gds_jobs communities --clearance internal``) when missing. Every strategy
answers through ``POST /search`` (``options.strategies`` = that one strategy, no rerank) as
an ``internal`` reader; its answer is read as a ranked list of entities: the leaves reached
(``raptor``), the hits (``local_graphrag``), or the members of the communities in rank order
(``community_search``, ``global_graphrag``). Scores at 10 entities: ``accuracy`` (at least
half the expected entities named), ``complete`` (all of them), ``recall`` (mean share).

UC-04: the stored ranking read on a new PostgreSQL connection; the risks strategy's own time
(``WS /stream`` strategy stage); and "What are our top N architectural risks?" for N = 1..20
over HTTP (distinct queries, so the query cache never answers) with the stored-ranking
strategy alone and with the default plan (the router's risk plan; ``bench_uc04`` times it uncached).

Run: ``.substrate/venv/bin/python -m tests.bench.bench_raptor``; needs ``substrate up``. Writes
``$SUBSTRATE_HOME/bench/raptor.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import psycopg
import websockets

from gds_jobs import risks_store
from substrate.retrieval.scope import ReadScope, clearance_for
from substrate.settings import Settings
from tests.bench import stats
from tests.bench.multihop_questions import QUESTIONS, Question
from tests.support import devset
from tests.support.gateway_client import auth, base_url

STRATEGIES = ("raptor", "community_search", "global_graphrag", "local_graphrag")
K = 10
PROJECT = Path(__file__).resolve().parents[2]


def ensure_devset(settings: Settings, tenant: str) -> None:
    with psycopg.connect(settings.postgres_dsn) as conn:
        known = conn.execute("SELECT 1 FROM raptor_nodes WHERE tenant_id = %s AND clearance = "
                             "'internal' LIMIT 1", (tenant,)).fetchone()
    if known:
        return
    repo = tenant.removeprefix("devset-")
    env = {**os.environ, **settings.env, "SUBSTRATE_TENANT": tenant}
    with tempfile.TemporaryDirectory() as tmp:
        path = devset.clone(repo, Path(tmp))
        subprocess.run([str(PROJECT / ".substrate/venv/bin/substrate"), "ingest", "git",
                        str(path)], env=env, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "gds_jobs", "communities", "--clearance",
                    "internal", "--quiet"], env=env, check=True, capture_output=True)


def members(settings: Settings, tenant: str, ids: list[str]) -> list[str]:
    """Entities of the communities ``ids`` (rank order, each community's members by fan-in)."""
    with psycopg.connect(settings.postgres_dsn) as conn:
        rows: dict[str, list[dict[str, Any]]] = dict(conn.execute(
            "SELECT DISTINCT ON (community_id) community_id, members FROM community_summaries "
            "WHERE tenant_id = %s AND clearance = 'internal' AND community_id = ANY(%s) "
            "ORDER BY community_id, snapshot_version DESC", (tenant, ids)).fetchall())
    out: list[str] = []
    for cid in ids:
        out += [m["ceid"] for m in rows.get(cid, []) if m["ceid"] not in out]
    return out


def entities(settings: Settings, tenant: str, strategy: str, body: dict[str, Any]) -> list[str]:
    ids = [r["id"] for r in body.get("results", [])]
    if strategy in ("community_search", "global_graphrag"):
        return members(settings, tenant, [i.removeprefix("community:") for i in ids])[:K]
    return [i for i in ids if i.startswith(("service:", "infra:"))][:K]


def ask(client: httpx.Client, q: Question, tenant: str, strategy: str) -> tuple[dict[str, Any],
                                                                                 float]:
    started = time.perf_counter()
    r = client.post("/search", headers={"X-Tenant": tenant}, json={
        "query": q.text, "options": {"strategies": [strategy], "rerank": False, "top_k": K}})
    ms = (time.perf_counter() - started) * 1000
    r.raise_for_status()
    return r.json(), ms


def score(found: list[str], expected: frozenset[str]) -> float:
    return len(expected & set(found)) / len(expected)


def percentile(samples: list[float], p: float) -> float:
    return round(stats.percentile(samples, p), 1)


def multihop(settings: Settings, client: httpx.Client) -> dict[str, Any]:
    per: dict[str, list[dict[str, Any]]] = {s: [] for s in STRATEGIES}
    for q in QUESTIONS:
        tenant = settings.tenant if q.corpus == "demo" else q.corpus
        for strategy in STRATEGIES:
            body, ms = ask(client, q, tenant, strategy)
            found = entities(settings, tenant, strategy, body)
            per[strategy].append({"question": q.text, "corpus": q.corpus, "ms": round(ms, 1),
                                  "recall": round(score(found, q.expected), 3),
                                  "missing": sorted(q.expected - set(found))})
    summary = {}
    for strategy, rows in per.items():
        recalls = [r["recall"] for r in rows]
        summary[strategy] = {
            "accuracy": round(sum(r >= 0.5 for r in recalls) / len(rows), 3),
            "complete": round(sum(r == 1.0 for r in recalls) / len(rows), 3),
            "recall": round(statistics.mean(recalls), 3),
            "p50_ms": percentile([r["ms"] for r in rows], 0.5),
            "by_corpus": {c: round(statistics.mean(r["recall"] for r in rows
                                                   if r["corpus"] == c), 3)
                          for c in sorted({r["corpus"] for r in rows})}}
    return {"questions": len(QUESTIONS), "k": K, "summary": summary, "per_question": per}


async def _stored_reads(settings: Settings) -> list[float]:
    scope = ReadScope(settings.tenant, 2**53 - 2, clearance_for("internal"), False)
    samples = []
    for _ in range(20):
        started = time.perf_counter()
        async with await psycopg.AsyncConnection.connect(settings.postgres_dsn) as conn:
            await risks_store.newest_async(conn, scope)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def _strategy_stage(settings: Settings, n: int) -> float:
    """The risks strategy's own time, as ``WS /stream`` reports it."""
    url = f"ws://127.0.0.1:{settings.gateway_port}/stream"
    headers = auth(settings, **{"X-Clearance": "internal"})
    async with websockets.connect(url, additional_headers=headers) as ws:
        await ws.send(json.dumps({"query": f"What are our top {n} architectural risks!",
                                  "options": {"strategies": ["risks"], "rerank": False}}))
        while True:
            msg = json.loads(await ws.recv())
            if msg["stage"] == "strategy":
                return float(msg["data"]["ms"])


def uc04(settings: Settings, client: httpx.Client) -> dict[str, Any]:
    reads = asyncio.run(_stored_reads(settings))
    stages = [asyncio.run(_strategy_stage(settings, n)) for n in range(1, 21)]
    out = {"stored_read_new_connection": {"p50_ms": percentile(reads, 0.5),
                                          "p95_ms": percentile(reads, 0.95), "n": len(reads)},
           "risks_strategy_stage": {"p50_ms": percentile(stages, 0.5),
                                    "p95_ms": percentile(stages, 0.95), "n": len(stages)}}
    for name, options in (("http_risks_strategy", {"strategies": ["risks"], "rerank": False}),
                          ("http_default_plan", {})):
        samples = []
        for n in range(1, 21):
            started = time.perf_counter()
            r = client.post("/search", json={
                "query": f"What are our top {n} architectural risks{'?' if options else ''}",
                "options": options})
            samples.append((time.perf_counter() - started) * 1000)
            r.raise_for_status()
        out[name] = {"p50_ms": percentile(samples, 0.5), "p95_ms": percentile(samples, 0.95),
                     "n": len(samples)}
    return out


def main(argv: list[str] | None = None) -> int:
    settings = Settings.from_env()
    only_uc04 = "--uc04" in (sys.argv[1:] if argv is None else argv)
    for tenant in sorted({q.corpus for q in QUESTIONS} - {"demo"}):
        ensure_devset(settings, tenant)
    headers = auth(settings, **{"X-Clearance": "internal"})
    with httpx.Client(base_url=base_url(settings), headers=headers, timeout=120) as client:
        figures = {"uc04": uc04(settings, client)}
        if not only_uc04:
            figures["multihop"] = multihop(settings, client)
    out = settings.home / "bench" / ("uc04.json" if only_uc04 else "raptor.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    print(json.dumps({"multihop": figures.get("multihop", {}).get("summary"),
                      "uc04": figures["uc04"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
