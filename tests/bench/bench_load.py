"""Throughput and latency under bounded loopback load, with load shedding on, and each part
of the stack frozen under load (issue 16).

* ``concurrency``: for 1, 8 and 32 concurrent clients (one API key; a refused request —
  429 from the per-key concurrency cap, 503 from load shedding — waits its Retry-After,
  at most 1 s, before the client's next request), ``DURATION_S`` seconds of uncached
  requests (half ``POST /search`` with a distinct question each, half
  ``GET /dependencies/checkout`` with a distinct ``min_weight`` so the cache cannot answer):
  answered/s, shed (503)/s, p50/p95 of answered requests and of all requests.
* ``faults``: 8 clients; Redis, NATS, PostgreSQL and Neo4j of THIS stack each frozen (SIGSTOP)
  for ``FREEZE_S`` under that load: status codes seen, slowest answer (must stay within the
  gateway's REQUEST_DEADLINE_SECONDS), and the recovery time after SIGCONT (first uncached
  200 after the part returns).
* ``schemathesis``: the longer run of tests/integration/test_openapi.py (``EXAMPLES`` per
  operation): server errors and schema mismatches found.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_load``; needs ``substrate up``.
Writes ``$SUBSTRATE_HOME/bench/load.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from substrate.settings import Settings
from tests.bench.stats import percentile
from tests.support.freeze import frozen
from tests.support.gateway_client import auth, base_url

DURATION_S = 20.0
FREEZE_S = 10.0
LEVELS = (1, 8, 32)
EXAMPLES = 60
QUESTIONS = ("What does checkout depend on?", "Who owns the payment service?",
             "Which incidents affected checkout?", "Why did we choose Kafka?")


def _request(i: int) -> tuple[str, str, dict[str, Any] | None]:
    nonce = uuid.uuid4().int % 10**9
    if i % 2:
        return "GET", f"/dependencies/checkout?min_weight=0.{nonce:09d}", None
    return "POST", "/search", {"query": f"{QUESTIONS[i % len(QUESTIONS)]} ({nonce})"}


async def _client_loop(client: httpx.AsyncClient, until: float,
                       out: list[tuple[float, int, float]]) -> None:
    i = 0
    while time.monotonic() < until:
        method, path, body = _request(i)
        i += 1
        start = time.monotonic()
        try:
            r = await client.request(method, path, json=body)
            code = r.status_code
        except httpx.HTTPError:
            code = -1  # client timeout or reset
        out.append((start, code, time.monotonic() - start))
        if code in (429, 503):  # a polite client honours Retry-After (capped at 1 s here)
            await asyncio.sleep(min(float(r.headers.get("retry-after", 1)), 1.0))


async def run_load(settings: Settings, clients: int, seconds: float
                   ) -> list[tuple[float, int, float]]:
    out: list[tuple[float, int, float]] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url(settings), headers=auth(settings),
                                 timeout=60, limits=limits) as client:
        until = time.monotonic() + seconds
        await asyncio.gather(*(_client_loop(client, until, out) for _ in range(clients)))
    return out


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(percentile(values, q / 100) * 1000, 1)


def summarize(rows: list[tuple[float, int, float]], seconds: float) -> dict[str, Any]:
    ok = [t for _, c, t in rows if c == 200]
    codes = Counter(c for _, c, _ in rows)
    return {"requests": len(rows), "codes": {str(k): v for k, v in sorted(codes.items())},
            "answered_per_s": round(len(ok) / seconds, 2),
            "shed_per_s": round(codes.get(503, 0) / seconds, 2),
            "p50_ms": _pct(ok, 50), "p95_ms": _pct(ok, 95),
            "p95_all_ms": _pct([t for _, _, t in rows], 95),
            "max_ms": round(max((t for _, _, t in rows), default=0) * 1000, 1)}


async def recovery_s(settings: Settings) -> float:
    start = time.monotonic()
    async with httpx.AsyncClient(base_url=base_url(settings), headers=auth(settings),
                                 timeout=60) as client:
        while time.monotonic() - start < 120:
            nonce = uuid.uuid4().int % 10**9
            r = await client.get(f"/dependencies/checkout?min_weight=0.{nonce:09d}")
            if r.status_code == 200:
                return round(time.monotonic() - start, 2)
            await asyncio.sleep(0.1)
    return float("inf")


async def fault_run(settings: Settings, part: str) -> dict[str, Any]:
    load = asyncio.create_task(run_load(settings, 8, FREEZE_S + 8))
    await asyncio.sleep(3)
    with frozen(settings, part):
        frozen_at = time.monotonic()
        await asyncio.sleep(FREEZE_S)
    thawed = time.monotonic()
    recovered = await recovery_s(settings)
    rows = await load
    during = [r for r in rows if r[0] < thawed and r[0] + r[2] > frozen_at]  # overlapping
    return {"part": part, "during_freeze": summarize(during, FREEZE_S),
            "recovery_s": recovered}


def schemathesis_run() -> dict[str, Any]:
    env = {**os.environ, "SCHEMATHESIS_EXAMPLES": str(EXAMPLES)}
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "tests/integration/test_openapi.py"], env=env, capture_output=True, text=True,
        check=False, cwd=Path(__file__).resolve().parents[2])
    tail = run.stdout.strip().splitlines()[-1:] or [""]
    return {"examples_per_operation": EXAMPLES, "passed": run.returncode == 0,
            "summary": tail[0], "seconds": round(time.monotonic() - start, 1)}


def main() -> None:
    settings = Settings.from_env()
    report: dict[str, Any] = {"deadline_s": settings.request_deadline_seconds,
                              "max_inflight": settings.max_inflight_requests,
                              "max_queued": settings.max_queued_requests,
                              "concurrency": {}, "faults": []}
    for clients in LEVELS:
        rows = asyncio.run(run_load(settings, clients, DURATION_S))
        report["concurrency"][str(clients)] = summarize(rows, DURATION_S)
        print(f"c={clients}: {report['concurrency'][str(clients)]}", flush=True)
    for part in ("redis", "nats", "postgres", "neo4j"):
        result = asyncio.run(fault_run(settings, part))
        report["faults"].append(result)
        print(f"{part} frozen: {result}", flush=True)
    report["schemathesis"] = schemathesis_run()
    print(f"schemathesis: {report['schemathesis']}")
    out = settings.home / "bench" / "load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
