"""RSN-13 figures: query-cache hit vs miss latency, and invalidation delay (write -> eviction).

Against the running gateway and stack (``substrate up``):

- hit / miss latency over HTTP on the demo tenant ``acme``: ``GET /dependencies/checkout``
  and ``POST /search "What does checkout depend on?"``. A miss is forced by deleting the
  entry's Redis key before the request (so it includes computing and storing the answer).
- invalidation delay on a throw-away tenant: a cached ``/dependencies`` entry, then a write
  touching its service; per sample the commit's duration, how long after ``commit()``
  returned the entry was still in Redis, and the gateway's own publish -> eviction delay.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_cache`` (or the file directly).
Sample sizes: ``BENCH_CACHE_N`` (default 200 hits / 200 dependency misses),
``BENCH_CACHE_SEARCH_MISSES`` (default 40: a search miss takes about a second), and
``BENCH_CACHE_WRITES`` (default 20). Writes ``$SUBSTRATE_HOME/bench/cache.json``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import redis

from substrate.db import neo4j_driver
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.bench import stats
from tests.support.gateway_client import auth

N = int(os.environ.get("BENCH_CACHE_N", "200"))
SEARCH_MISSES = int(os.environ.get("BENCH_CACHE_SEARCH_MISSES", "40"))
WRITES = int(os.environ.get("BENCH_CACHE_WRITES", "20"))
SEARCH_QUERY = "What does checkout depend on?"


def percentiles(samples: list[float]) -> dict[str, float | int | None]:
    return stats.latency(samples, digits=3)


def timed(call: Callable[[], httpx.Response]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    response = call()
    ms = (time.perf_counter() - t0) * 1000
    response.raise_for_status()
    return ms, response.json()


def hit_and_miss(client: httpx.Client, rds: redis.Redis, call: Callable[[], httpx.Response],
                 hits: int, misses: int) -> dict[str, Any]:
    _, body = timed(call)  # warm: the entry exists afterwards
    key = body["cache"]["key"]
    hit_ms: list[float] = []
    miss_ms: list[float] = []
    wrong = 0
    for _ in range(hits):
        ms, body = timed(call)
        wrong += not body["cache"]["hit"]  # e.g. a write to acme evicted it meanwhile
        (hit_ms if body["cache"]["hit"] else miss_ms).append(ms)
    for _ in range(misses):
        rds.delete(key)
        ms, body = timed(call)
        (hit_ms if body["cache"]["hit"] else miss_ms).append(ms)
    return {"hit_ms": percentiles(hit_ms), "miss_ms": percentiles(miss_ms),
            "hits_expected_but_missed": wrong}


def latency(settings: Settings, rds: redis.Redis) -> dict[str, Any]:
    base = f"http://{settings.gateway_host}:{settings.gateway_port}"
    with httpx.Client(base_url=base, headers=auth(settings, **{"X-Tenant": "acme"}),
                      timeout=120) as client:
        return {
            "GET /dependencies/checkout": hit_and_miss(
                client, rds, lambda: client.get("/dependencies/checkout"), N, N),
            f"POST /search {SEARCH_QUERY!r}": hit_and_miss(
                client, rds, lambda: client.post("/search", json={"query": SEARCH_QUERY}),
                N, SEARCH_MISSES),
        }


def _gateway_delay(client: httpx.Client, tenant: str, version: int) -> float | None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        recent = client.get("/cache/stats").json()["invalidation"]["recent_events"]
        for event in recent:
            if event["tenant"] == tenant and event["version"] == version:
                return float(event["delay_ms"]) if event["delay_ms"] is not None else None
        time.sleep(0.01)
    return None


def invalidation(settings: Settings, rds: redis.Redis) -> dict[str, Any]:
    tenant = f"t-benchcache-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(settings)
    writer = GraphWriter(settings, driver)
    base = f"http://{settings.gateway_host}:{settings.gateway_port}"
    svc = NodeRecord("service:hub", "Service", {"name": "hub"})
    commit_ms, after_return_ms, gateway_ms, not_evicted = [], [], [], 0
    try:
        writer.commit(GraphBatch([svc]), source="bench", tenant=tenant)
        with httpx.Client(base_url=base, headers=auth(settings, **{"X-Tenant": tenant}),
                          timeout=60) as client:
            for i in range(WRITES):
                client.get("/dependencies/hub")
                key = client.get("/dependencies/hub").json()["cache"]["key"]
                batch = GraphBatch([svc, NodeRecord(f"service:leaf-{i}", "Service",
                                                    {"name": f"leaf-{i}"})],
                                   [EdgeRecord("CALLS", "service:hub", f"service:leaf-{i}",
                                               f"bench://hub/{i}#L1", source="bench")])
                t0 = time.perf_counter()
                result = writer.commit(batch, source="bench", tenant=tenant, mode="upsert")
                t1 = time.perf_counter()
                while rds.exists(key) and time.perf_counter() - t1 < 10:
                    time.sleep(0.0005)
                t2 = time.perf_counter()
                not_evicted += bool(rds.exists(key))
                commit_ms.append((t1 - t0) * 1000)
                after_return_ms.append((t2 - t1) * 1000)
                assert result.snapshot_version is not None
                delay = _gateway_delay(client, tenant, result.snapshot_version)
                if delay is not None:
                    gateway_ms.append(delay)
    finally:
        driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)
        driver.close()
        keys = list(rds.scan_iter(match=f"sr:{{{tenant}}}:*", count=1000))
        if keys:
            rds.delete(*keys)
    return {"writes": WRITES, "commit_ms": percentiles(commit_ms),
            "still_cached_after_commit_returned_ms": percentiles(after_return_ms),
            "gateway_publish_to_eviction_ms": percentiles(gateway_ms),
            "not_evicted_within_10s": not_evicted}


def run() -> dict[str, Any]:
    settings = Settings.from_env()
    rds = redis.Redis.from_url(settings.redis_url)
    try:
        return {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "ttl_seconds": settings.cache_ttl_seconds,
            "latency": latency(settings, rds),
            "invalidation": invalidation(settings, rds),
        }
    finally:
        rds.close()


def main() -> None:
    settings = Settings.from_env()
    figures = run()
    out = settings.home / "bench" / "cache.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
