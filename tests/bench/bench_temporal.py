"""Latency of time queries (RSN-07) over HTTP: ``GET /temporal?at=`` (the state at an
instant, first page of 100) and ``GET /temporal?from=&to=`` (the diff over 3 days, 30 days
and 1 year), p50/p95 over ``REPEATS`` instants each, spread evenly over the history:

* on the demo history (tenant ``acme``, 37 commits over three months: a window longer than
  the history is clamped to its first snapshot, and reported as clamped);
* on a synthetic history of ``--commits`` (10,000) small commits written through the real
  ``GraphWriter`` into a throw-away tenant: each commit makes 1-3 changes (a new service with
  a caller, a new or removed CALLS edge, a property update, now and then a removed service),
  one hour apart, ending an hour ago. Writing it takes minutes (progress is printed); the
  tenant's Neo4j nodes are deleted at the end unless ``--keep`` (its snapshot history stays).

Run: ``.substrate/venv/bin/python -m tests.bench.bench_temporal [--commits N] [--keep]``;
needs ``substrate up``. Writes ``$SUBSTRATE_HOME/bench/temporal.json`` and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import psycopg

from substrate.db import neo4j_driver
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.bench.stats import latency
from tests.support.gateway_client import auth

REPEATS = 30
WINDOWS = {"3d": timedelta(days=3), "30d": timedelta(days=30), "1y": timedelta(days=365)}
SOURCE = "synthetic"


def percentiles(samples: list[float]) -> dict[str, float | int | None]:
    return latency(samples, digits=1)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def bounds(settings: Settings, tenant: str) -> tuple[datetime, datetime, int]:
    with psycopg.connect(settings.postgres_dsn) as conn:
        row = conn.execute("SELECT min(valid_at), max(valid_at), count(*) FROM snapshots "
                           "WHERE tenant_id = %s", (tenant,)).fetchone()
    assert row is not None and row[0] is not None, f"tenant {tenant} has no snapshots"
    return row[0], row[1], int(row[2])


def timed(client: httpx.Client, tenant: str, params: dict[str, str]) -> tuple[float, Any]:
    started = time.perf_counter()
    r = client.get("/temporal", params=params, headers={"X-Tenant": tenant})
    ms = (time.perf_counter() - started) * 1000
    assert r.status_code == 200, r.text
    return ms, r.json()


def measure(client: httpx.Client, settings: Settings, tenant: str) -> dict[str, Any]:
    first, last, count = bounds(settings, tenant)
    span = last - first
    out: dict[str, Any] = {"tenant": tenant, "snapshots": count, "first": iso(first),
                           "last": iso(last), "span_days": round(span / timedelta(days=1), 1)}
    instants = [first + span * (i + 0.5) / REPEATS for i in range(REPEATS)]
    timed(client, tenant, {"at": iso(instants[0])})  # warm-up
    samples, sizes = [], []
    for t in instants:
        ms, body = timed(client, tenant, {"at": iso(t)})
        samples.append(ms)
        sizes.append(body["totals"]["nodes"] + body["totals"]["relationships"])
    out["at"] = {**percentiles(samples), "elements_at_instant_median": statistics.median(sizes)}
    for name, length in WINDOWS.items():
        clamped = length > span
        ends = [last] * REPEATS if clamped else [
            first + length + (span - length) * (i + 0.5) / REPEATS for i in range(REPEATS)]
        samples, changed = [], []
        for end in ends:
            start = max(first, end - length)
            ms, body = timed(client, tenant, {"from": iso(start), "to": iso(end)})
            samples.append(ms)
            changed.append(sum(body["counts"].values()))
        out[f"diff_{name}"] = {**percentiles(samples), "clamped_to_history": clamped,
                               "changed_elements_median": statistics.median(changed),
                               "snapshots_in_window_median": None if clamped else round(
                                   length / span * count)}
    return out


class Synthetic:
    """A random service graph that evolves one small commit at a time."""

    def __init__(self, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.services: list[str] = []
        self.edges: set[tuple[str, str]] = set()
        self.serial = 0

    def _service(self) -> NodeRecord:
        self.serial += 1
        name = f"svc-{self.serial:05d}"
        self.services.append(f"service:{name}")
        return NodeRecord(f"service:{name}", "Service", {"name": name, "version": 0})

    def _edge(self, src: str, dst: str, i: int) -> EdgeRecord:
        self.edges.add((src, dst))
        return EdgeRecord("CALLS", src, dst, f"deploy/{src[8:]}.yml#L{i % 40 + 1}@{i:07x}")

    def initial(self, n: int = 60) -> GraphBatch:
        nodes = [self._service() for _ in range(n)]
        edges = [self._edge(a.ceid, b.ceid, 0) for a, b in zip(nodes, nodes[1:], strict=False)]
        return GraphBatch(nodes, edges)

    def commit(self, i: int) -> tuple[GraphBatch, list[str]]:
        """One commit's batch and deletes: 1-3 changes on distinct elements."""
        rng = self.rng
        if rng.random() < 0.01 and len(self.services) > 40:  # removing a service stands alone
            gone = self.services.pop(rng.randrange(len(self.services)))
            self.edges = {e for e in self.edges if gone not in e}
            return GraphBatch(), [gone]
        batch, deletes, used = GraphBatch(), [], set()
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            if op < 0.2:
                caller = rng.choice(self.services)
                node = self._service()
                batch.nodes.append(node)
                batch.edges.append(self._edge(caller, node.ceid, i))
                used |= {caller, node.ceid}
            elif op < 0.5:
                a, b = rng.sample(self.services, 2)
                if (a, b) not in self.edges and not {a, b} & used:
                    batch.edges.append(self._edge(a, b, i))
                    used |= {a, b}
            elif op < 0.75 and self.edges:
                a, b = rng.choice(sorted(self.edges))
                if not {a, b} & used:
                    self.edges.discard((a, b))
                    deletes.append(f"{a}-[CALLS]->{b}@{SOURCE}")
                    used |= {a, b}
            else:
                ceid = rng.choice(self.services)
                if ceid not in used:
                    batch.nodes.append(NodeRecord(ceid, "Service",
                                                  {"name": ceid[8:], "version": i}))
                    used.add(ceid)
        return batch, deletes


def generate(settings: Settings, tenant: str, commits: int) -> float:
    """Write the synthetic history; returns seconds taken."""
    driver = neo4j_driver(settings)
    writer = GraphWriter(settings, driver)
    world = Synthetic()
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) \
        - timedelta(hours=commits + 1)
    started = time.monotonic()
    try:
        writer.commit(world.initial(), source=SOURCE, tenant=tenant, valid_at=start,
                      note="synthetic commit 0")
        for i in range(1, commits):
            batch, deletes = world.commit(i)
            if not batch.nodes and not batch.edges and not deletes:
                batch.nodes.append(NodeRecord(world.services[0], "Service",
                                              {"name": world.services[0][8:], "version": i}))
            writer.commit(batch, source=SOURCE, tenant=tenant,
                          valid_at=start + timedelta(hours=i), deletes=deletes,
                          note=f"{uuid.uuid4().hex}{uuid.uuid4().hex[:8]} synthetic commit {i}")
            if i % 500 == 0:
                rate = i / (time.monotonic() - started)
                print(f"[bench] {i}/{commits} commits ({rate:.0f}/s, "
                      f"{len(world.services)} services, {len(world.edges)} calls)", flush=True)
    finally:
        driver.close()
    return time.monotonic() - started


def cleanup(settings: Settings, tenant: str) -> None:
    driver = neo4j_driver(settings)
    try:
        driver.execute_query("MATCH (n:Entity {tenant_id: $t}) DETACH DELETE n", t=tenant)
    finally:
        driver.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the synthetic tenant's nodes")
    parser.add_argument("--tenant", help="measure an existing synthetic tenant (no writes)")
    args = parser.parse_args(argv or [])
    settings = Settings.from_env()
    tenant = args.tenant or f"t-bench-time-{uuid.uuid4().hex[:8]}"
    results: dict[str, Any] = {"when": datetime.now(UTC).isoformat(), "repeats": REPEATS}
    with httpx.Client(base_url=f"http://127.0.0.1:{settings.gateway_port}", timeout=120,
                      headers=auth(settings)) as c:
        results["demo"] = measure(c, settings, "acme")
        print(json.dumps({"demo": results["demo"]}, indent=2), flush=True)
        try:
            if not args.tenant:
                print(f"[bench] writing {args.commits} commits into {tenant}", flush=True)
                secs = generate(settings, tenant, args.commits)
                results["synthetic_write"] = {"commits": args.commits, "seconds": round(secs),
                                              "commits_per_s": round(args.commits / secs, 1)}
            results["synthetic"] = measure(c, settings, tenant)
        finally:
            if not args.keep and not args.tenant:
                cleanup(settings, tenant)
    out = settings.home / "bench" / "temporal.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(f"[bench] written to {out}")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
