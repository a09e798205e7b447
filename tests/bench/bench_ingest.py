"""Ingest throughput of the write path, and git history replay time per commit.

1. Synthetic graphs of 100k and 1M edges through ``GraphWriter.commit``: ~N/5 nodes
   (Service, every fifth one Infrastructure), N CALLS/DEPENDS_ON edges each with an
   ``evidence_ref``, committed in batches of 20k records (edges and the nodes they
   introduce; a snapshot is one Neo4j transaction and must fit ``NEO4J_TX_MEMORY``, 256 MiB:
   50k edges with their nodes do not). Every commit does the full write path: validation,
   diff against the live graph, the PostgreSQL change log (before/after of every element),
   validity on every element in Neo4j and one ``graph.updated`` event on NATS JetStream. No
   embedder (``embedder=None``): this measures the write path, not the model (see
   bench_embeddings for that). ``edges_per_s_near``: the rate at 100k / 500k / 1M edges.
   Each size goes into its own throwaway tenant whose Neo4j nodes are deleted afterwards
   (and its change-log rows: they are this benchmark's only). A size that exceeds the time
   budget (20 min) is stopped and reported as unfinished, with the rate it had reached.
2. The demo repository (``build_demo_repo``) replayed with ``ingest_git(history=True)`` into a
   throwaway tenant: seconds per commit, with the configured embedder (what ``substrate up``
   does) and without one.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_ingest [--sizes 100000,1000000]``.
Writes ``$SUBSTRATE_HOME/bench/ingest.json`` and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import psycopg
from neo4j import Driver

from substrate.db import neo4j_driver
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.scale.load import rate_near
from substrate.settings import Settings

SIZES = (100_000, 1_000_000)
RECORDS_PER_COMMIT = 20_000  # nodes + edges of one snapshot
OUT_DEGREE = 5  # edges per node: N edges over N/5 nodes
TIME_BUDGET_S = 20 * 60
RATE_POINTS = (100_000, 500_000, 1_000_000, 2_000_000)
SOURCE = "bench-ingest"
# relationships first, then nodes: DETACH DELETE of 5000 nodes with hubs among them (thousands
# of relationships each) exceeds NEO4J_TX_MEMORY in one inner transaction
DELETE_RELS_CYPHER = (
    "MATCH (n {tenant_id: $tenant})-[r]->() "
    "CALL (r) { DELETE r } IN TRANSACTIONS OF 5000 ROWS"
)
DELETE_CYPHER = (
    "MATCH (n {tenant_id: $tenant}) "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"
)


# --- synthetic graph ----------------------------------------------------------------------
def node_record(i: int) -> NodeRecord:
    if i % 5 == 0:
        return NodeRecord(f"infra:b{i}", "Infrastructure", {"name": f"b{i}", "kind": "database"})
    return NodeRecord(f"service:b{i}", "Service", {"name": f"b{i}"})


def edge_targets(a: int, n_nodes: int) -> list[int]:
    """OUT_DEGREE distinct targets of node ``a``, none of them ``a``."""
    stride = n_nodes // OUT_DEGREE
    return [(a + 1 + k * stride) % n_nodes for k in range(OUT_DEGREE)]


def synthetic_batches(n_edges: int, per_commit: int = RECORDS_PER_COMMIT
                      ) -> Iterator[GraphBatch]:
    """Batches of about ``per_commit`` records: edges and the nodes they need that no
    earlier batch committed."""
    n_nodes = n_edges // OUT_DEGREE
    nodes = [node_record(i) for i in range(n_nodes)]
    committed: set[int] = set()
    batch = GraphBatch()
    for a in range(n_nodes):
        for k, b in enumerate(edge_targets(a, n_nodes)):
            for x in (a, b):
                if x not in committed:
                    committed.add(x)
                    batch.nodes.append(nodes[x])
            rel = "DEPENDS_ON" if nodes[b].label == "Infrastructure" else "CALLS"
            ref = f"deploy/svc-{a // 100}.yaml#L{(a % 100) * OUT_DEGREE + k + 1}@0123abc"
            batch.edges.append(EdgeRecord(rel, nodes[a].ceid, nodes[b].ceid, ref))
            if len(batch.edges) + len(batch.nodes) >= per_commit:
                yield batch
                batch = GraphBatch()
    if batch.edges or batch.nodes:
        yield batch


# --- one size -----------------------------------------------------------------------------
def ingest_size(settings: Settings, driver: Driver, n_edges: int,
                budget_s: float = TIME_BUDGET_S) -> dict[str, Any]:
    tenant = f"t-bench-ingest-{secrets.token_hex(4)}"
    writer = GraphWriter(settings, driver, embedder=None)
    per_commit: list[float] = []
    edges = nodes = 0
    versions: list[int] = []
    marks: list[tuple[int, float]] = []  # (edges so far, seconds) after each commit
    started = time.perf_counter()
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    finished = True
    try:
        for i, batch in enumerate(synthetic_batches(n_edges)):
            t = time.perf_counter()
            result = writer.commit(batch, source=SOURCE, tenant=tenant,
                                   valid_at=t0 + timedelta(minutes=i))
            per_commit.append(time.perf_counter() - t)
            assert result.snapshot_version is not None
            versions.append(result.snapshot_version)
            edges += result.counts["edges_added"]
            nodes += result.counts["nodes_added"]
            marks.append((edges, time.perf_counter() - started))
            print(f"[ingest {n_edges:,}] commit {i + 1}: {len(batch.edges):,} edges, "
                  f"{len(batch.nodes):,} nodes in {per_commit[-1]:.1f}s "
                  f"(total {edges:,} edges, {time.perf_counter() - started:.0f}s)", flush=True)
            if time.perf_counter() - started > budget_s and edges < n_edges:
                finished = False
                break
        seconds = time.perf_counter() - started
        published = events_published(settings, versions)
    finally:
        cleanup = delete_tenant(settings, driver, tenant)
    figures = {
        "target_edges": n_edges, "finished": finished, "tenant": tenant,
        "edges": edges, "nodes": nodes, "commits": len(per_commit),
        "records_per_commit": RECORDS_PER_COMMIT, "seconds": round(seconds, 1),
        "edges_per_s": round(edges / seconds, 1),
        "elements_per_s": round((edges + nodes) / seconds, 1),
        "commit_seconds": {"min": round(min(per_commit), 2),
                           "median": round(statistics.median(per_commit), 2),
                           "max": round(max(per_commit), 2),
                           "first": round(per_commit[0], 2), "last": round(per_commit[-1], 2)},
        # flat or not: the rate of the three commits ending at each point
        "edges_per_s_near": {f"{at:,}": round(rate, 1) for at in RATE_POINTS
                             if at <= edges and (rate := rate_near(marks, at)) is not None},
        "nats_events_published": published, "cleanup": cleanup,
    }
    print(json.dumps(figures), flush=True)
    return figures


def events_published(settings: Settings, versions: list[int]) -> int:
    """How many of the benchmark's snapshots the outbox has sent to JetStream."""
    with psycopg.connect(settings.postgres_dsn) as conn:
        row = conn.execute("SELECT count(*) FROM snapshots WHERE version = ANY(%s) AND published",
                           (versions,)).fetchone()
    return int(row[0]) if row else 0


def delete_tenant(settings: Settings, driver: Driver, tenant: str) -> dict[str, Any]:
    """Delete the throwaway tenant's Neo4j nodes (batched, implicit transaction) and its
    change-log rows; the snapshot rows stay (versions are global and monotonic)."""
    t = time.perf_counter()
    with driver.session() as session:
        rels = session.run(DELETE_RELS_CYPHER, tenant=tenant).consume()
        summary = session.run(DELETE_CYPHER, tenant=tenant).consume()
    with psycopg.connect(settings.postgres_dsn) as conn:
        rows = conn.execute("DELETE FROM change_log WHERE tenant_id = %s", (tenant,)).rowcount
    return {"nodes_deleted": summary.counters.nodes_deleted,
            "relationships_deleted": rels.counters.relationships_deleted
            + summary.counters.relationships_deleted,
            "change_log_rows_deleted": rows, "seconds": round(time.perf_counter() - t, 1)}


# --- git history replay ---------------------------------------------------------------------
def replay_demo(settings: Settings, driver: Driver, embedder: Any, label: str) -> dict[str, Any]:
    from substrate.connectors.git_ingest import ingest_git
    from substrate.demo.build_repo import build_demo_repo

    tenant = f"t-bench-replay-{secrets.token_hex(4)}"
    marks: list[float] = []
    with tempfile.TemporaryDirectory(prefix="substrate-bench-") as tmp:
        repo = build_demo_repo(Path(tmp) / "acme-shop")
        writer = GraphWriter(settings, driver, embedder)
        if embedder is not None:
            embedder.embed_documents(["warm-up"])  # model load is not replay time
        started = time.perf_counter()
        try:
            results = ingest_git(writer, repo, history=True, tenant=tenant,
                                 progress=lambda msg: marks.append(time.perf_counter()))
            seconds = time.perf_counter() - started
        finally:
            cleanup = delete_tenant(settings, driver, tenant)
    per_commit = [b - a for a, b in zip([started, *marks], marks, strict=False)]
    return {
        "embedder": label, "commits": len(results),
        "snapshots": sum(1 for r in results if r.snapshot_version),
        "seconds": round(seconds, 2),
        "seconds_per_commit": {"mean": round(seconds / len(results), 3),
                               "median": round(statistics.median(per_commit), 3),
                               "max": round(max(per_commit), 3)},
        "cleanup": cleanup,
    }


# --- main -----------------------------------------------------------------------------------
def run(sizes: tuple[int, ...] = SIZES, replay: bool = True) -> dict[str, Any]:
    from substrate.embeddings import make_embedder

    settings = Settings.from_env()
    driver = neo4j_driver(settings)
    try:
        figures: dict[str, Any] = {
            "benchmark": "ingest_throughput", "embedder": None,
            "note": "embedder=None: write path only (validation, diff, PostgreSQL change log, "
                    "Neo4j validity, NATS event)",
            "sizes": [ingest_size(settings, driver, n) for n in sizes],
        }
        if replay:
            figures["git_replay"] = [
                replay_demo(settings, driver, make_embedder(settings), "configured (local)"),
                replay_demo(settings, driver, None, "none"),
            ]
    finally:
        driver.close()
    figures["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    figures["cpu_count"] = os.cpu_count()
    figures["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    return figures


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="edge counts, comma list")
    p.add_argument("--no-replay", action="store_true", help="skip the git history replay")
    args = p.parse_args(argv or [])
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    figures = run(sizes, replay=not args.no_replay)
    out = Settings.from_env().home / "bench" / "ingest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    for s in figures["sizes"]:
        state = "" if s["finished"] else " (UNFINISHED: time budget)"
        print(f"ingest {s['edges']:,} edges: {s['edges_per_s']} edges/s, {s['seconds']}s{state}")
    for r in figures.get("git_replay", []):
        print(f"git replay ({r['embedder']} embedder): {r['commits']} commits, "
              f"{r['seconds_per_commit']['mean']}s per commit -> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
