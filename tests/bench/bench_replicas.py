"""Scale-out figures (issue 14.2): invalidation lag of three gateway replicas on a 3-node NATS
cluster and a 3-master Redis Cluster, with all NATS nodes up and with one killed.

Against the running stack's Neo4j and PostgreSQL (``substrate up``); the clusters (ports
50000-50199) and the replicas are started here and stopped at the end. Per write (a callee
added to a service through the real write path, in the middle of a bounded round-robin load):

- ``event_delay``: the applying replica's delay from the event's publication to its entries
  being evicted and the event acked (the shared durable consumer: one replica per event);
- ``commit_to_applied``: from ``commit()`` returning to the shared watermark having the event;
- ``commit_to_seen``: per replica, from the commit to the replica reading at the new version;
- stale answers after the event (expected 0) and after the commit (counted).

Run: ``.substrate/venv/bin/python -m tests.bench.bench_replicas``. ``BENCH_REPLICAS_WRITES``
writes per phase (default 5), ``BENCH_REPLICAS_REQUESTS`` requests per write (default 60).
Writes ``$SUBSTRATE_HOME/bench/replicas.json``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

from substrate.db import neo4j_driver
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from substrate.stack.local_cluster import NatsCluster, RedisCluster
from tests.bench import stats
from tests.support.graphstate import drop_tenant_graph, new_tenant
from tests.support.replicas import (
    WriteRound,
    add_calls,
    all_connected,
    cluster_env,
    deliver,
    poll,
    replicas,
    run_round,
)

WRITES = int(os.environ.get("BENCH_REPLICAS_WRITES", "5"))
REQUESTS = int(os.environ.get("BENCH_REPLICAS_REQUESTS", "60"))
REPLICAS = 3


def phase_figures(rounds: list[WriteRound]) -> dict[str, Any]:
    delays = [ms for r in rounds for _, ms in r.appliers if ms is not None]
    summaries = [r.summary(REPLICAS) for r in rounds]
    return {
        "writes": len(rounds),
        "event_delay": stats.latency(delays),
        "commit_to_applied": stats.latency([s["commit_to_applied_ms"] for s in summaries]),
        "commit_to_seen_by_replica": {
            replica: stats.latency([s["commit_to_seen_ms"][replica] for s in summaries])
            for replica in range(REPLICAS)},
        "applied_by": [[a["replica"] for a in s["applied_by"]] for s in summaries],
        "stale_after_event": sum(s["stale_after_event"] for s in summaries),
        "stale_after_commit": sum(s["stale_after_commit"] for s in summaries),
        "answers": sum(s["answers"] for s in summaries),
        "errors": sum(s["errors"] for s in summaries),
    }


def run(settings: Settings) -> dict[str, Any]:
    driver = neo4j_driver(settings)
    tenant = new_tenant("bench-replicas")
    figures: dict[str, Any] = {"replicas": REPLICAS, "requests_per_write": REQUESTS}
    try:
        with NatsCluster(settings) as nats_cluster, RedisCluster(settings) as redis_cluster, \
                tempfile.TemporaryDirectory() as logs:
            env = cluster_env(nats_cluster, redis_cluster)
            cluster = Settings.from_env({**settings.env, **env})
            writer = GraphWriter(cluster, driver)
            add_calls(writer, tenant, [("alpha", "beta"), ("gamma", "delta")])
            rds = redis.RedisCluster.from_url(cluster.redis_url)
            with replicas(Path(logs), tenant, env, REPLICAS) as clients:
                if not poll(lambda: all_connected(clients)):
                    raise RuntimeError("an invalidator never connected")
                for phase in ("all_nodes_up", "one_nats_node_killed"):
                    if phase == "one_nats_node_killed":
                        nats_cluster.kill(0)
                        if not poll(lambda: all_connected(clients)):
                            raise RuntimeError("an invalidator did not fail over")
                    rounds = []
                    for n in range(WRITES):
                        callee = f"alpha-{phase}-{n}"
                        rounds.append(run_round(
                            clients, partial(add_calls, writer, tenant, [("alpha", callee)]),
                            lambda v: deliver(cluster, settings, tenant, v), rds, tenant,
                            f"service:{callee}", requests=REQUESTS, workers=3))
                    figures[phase] = phase_figures(rounds)
            rds.close()
    finally:
        drop_tenant_graph(driver, tenant)
        driver.close()
    return figures


def main() -> None:
    settings = Settings.from_env()
    figures = run(settings)
    out = settings.home / "bench" / "replicas.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    for phase in ("all_nodes_up", "one_nats_node_killed"):
        f = figures[phase]
        print(f"{phase}: invalidation lag (event published -> evicted) "
              f"p50 {f['event_delay']['p50_ms']} ms, max {f['event_delay']['max_ms']} ms; "
              f"commit -> applied p50 {f['commit_to_applied']['p50_ms']} ms, "
              f"max {f['commit_to_applied']['max_ms']} ms; stale after event "
              f"{f['stale_after_event']}, after commit {f['stale_after_commit']}")
    print(json.dumps(figures, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
