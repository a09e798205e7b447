"""Incremental communities (RSN-15) against a full rebuild, at a 1 % edge change on a graph of
at least 200k edges.

A planted-partition organisation (``--groups`` x ``--size`` services, default 400 x 50, inside
pairs linked with p 0.4, ~8k edges across: ~204k DEPENDS_ON edges) is written through the real
``GraphWriter`` into a throw-away tenant; the communities job runs once in full (no RAPTOR
tree: its 20k leaf embeddings would measure the embedder, not Leiden). Then 1 % of the edges
change inside 8 groups in one commit, and both ways are timed at the new snapshot:

* ``leiden``: the projection plus hierarchical Leiden alone — all nodes (full) against the
  touched communities plus their boundary (incremental);
* ``end_to_end``: everything the job stores — Leiden, summaries of the communities (all of
  them, or only the changed ones), their embeddings, the node state.

Modularity of both final partitions (over the new edge list) and their NMI against the planted
groups are reported, so the speed-up is never bought with quality.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_communities [--groups N] [--size N]
[--keep]``; needs ``substrate up``. Writes ``$SUBSTRATE_HOME/bench/communities.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import psycopg

from gds_jobs.communities import leiden_assignments, run_communities
from gds_jobs.community_store import read_state
from gds_jobs.guard import Progress
from gds_jobs.incremental import update_communities
from gds_jobs.quality import modularity, nmi
from gds_jobs.runtime import JobContext, job_context, job_scope
from substrate.db import neo4j_driver
from substrate.embeddings import make_embedder
from substrate.graph.records import GraphBatch
from substrate.graph.writer import GraphWriter
from substrate.retrieval.scope import ReadScope
from substrate.scale.planted import Planted, change, edge_id, planted
from substrate.settings import Settings

BATCH = 10_000
CHANGED_GROUPS = 8


def load(settings: Settings, tenant: str, graph: Planted) -> int:
    driver = neo4j_driver(settings)
    try:
        writer = GraphWriter(settings, driver, embedder=None)
        records, nodes = graph.records(), graph.nodes()
        version = 0
        for start in range(0, len(nodes), BATCH):  # nodes first, then edges (tx memory)
            writer.commit(GraphBatch(nodes[start:start + BATCH], []), source="planted",
                          tenant=tenant)
        for start in range(0, len(records), BATCH):
            result = writer.commit(GraphBatch([], records[start:start + BATCH]),
                                   source="planted", tenant=tenant)
            version = result.snapshot_version or version
            print(f"[communities] loaded {min(start + BATCH, len(records))}/{len(records)} "
                  "edges", flush=True)
        return version
    finally:
        driver.close()


def commit_change(settings: Settings, tenant: str, graph: Planted) -> tuple[int, list[str]]:
    removed, added = change(graph, round(0.01 * len(graph.edges)), groups=CHANGED_GROUPS)
    driver = neo4j_driver(settings)
    try:
        result = GraphWriter(settings, driver, embedder=None).commit(
            GraphBatch([], graph.records(added)), source="planted", tenant=tenant,
            deletes=[edge_id(a, b) for a, b in sorted(removed)])
    finally:
        driver.close()
    assert result.snapshot_version is not None
    return result.snapshot_version, sorted({n for p in removed | added for n in p})


def timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - started, 3)


def quality(graph: Planted, partition: Mapping[str, Hashable]) -> dict[str, float]:
    return {"modularity": round(modularity(graph.weighted(), partition), 5),
            "nmi_vs_planted": round(nmi(graph.truth, partition), 5)}


def measure(ctx: JobContext, settings: Settings, tenant: str, graph: Planted) -> dict[str, Any]:
    embedder = make_embedder(settings)
    progress = Progress("bench_communities")
    scope = job_scope(settings, tenant, clearance="internal")
    _, first_full = timed(lambda: run_communities(ctx, scope, embedder, progress, tree=False))
    version, changed = commit_change(settings, tenant, graph)
    at = ReadScope(tenant, version, scope.clearance, True)
    state, _ = read_state(settings, at)
    affected_preview = len({c for c, (d, _) in state.items()
                            if d in {state[x][0] for x in changed if x in state}})
    result, incremental_s = timed(lambda: update_communities(
        ctx, at, changed, embedder, progress, tree=False))
    after, _ = read_state(settings, at)
    subset = [*sorted({c for c, (d, _) in state.items()
                       if d in {state[x][0] for x in changed if x in state}} | set(changed))]
    boundary = [r["ceid"] for r in ctx.rows("gds/neighbours", at, ceids=subset)]
    _, leiden_incremental_s = timed(lambda: leiden_assignments(ctx, at, [*subset, *boundary]))
    full_assign, leiden_full_s = timed(lambda: leiden_assignments(ctx, at))
    _, full_s = timed(lambda: run_communities(ctx, at, embedder, progress, tree=False))
    full_partition = {c: str(ids[-1]) for c, ids in full_assign.items()}
    return {
        "graph": {"nodes": len(graph.truth), "edges": len(graph.edges),
                  "groups": graph.groups, "changed_edges": round(0.01 * len(graph.edges)),
                  "changed_nodes": len(changed), "affected_nodes": affected_preview,
                  "boundary_nodes": len(boundary)},
        "first_full_run_s": first_full,
        "leiden": {"full_s": leiden_full_s, "incremental_s": leiden_incremental_s,
                   "speedup": round(leiden_full_s / leiden_incremental_s, 1)},
        "end_to_end": {"full_s": full_s, "incremental_s": incremental_s,
                       "speedup": round(full_s / incremental_s, 1)},
        "incremental": result.to_dict(),
        "quality": {"full": quality(graph, full_partition),
                    "incremental": quality(graph, {c: d for c, (d, _) in after.items()})},
    }


def cleanup(settings: Settings, tenant: str) -> None:
    driver = neo4j_driver(settings)
    try:
        for query in ("MATCH (n:Entity {tenant_id: $t})-[r]-() WITH DISTINCT r LIMIT 20000 "
                      "DELETE r RETURN count(*) AS n",  # relationships first, in slices
                      "MATCH (n:Entity {tenant_id: $t}) WITH n LIMIT 5000 DETACH DELETE n "
                      "RETURN count(*) AS n"):
            while driver.execute_query(query, t=tenant)[0][0]["n"]:
                pass
    finally:
        driver.close()
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        for table in ("community_summaries", "community_state"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (tenant,))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=400)
    p.add_argument("--size", type=int, default=50)
    p.add_argument("--p-in", type=float, default=0.4)
    p.add_argument("--across", type=int, default=8000, help="edges across groups")
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    settings = Settings.from_env()
    n = args.groups * args.size
    graph = planted(args.groups, args.size, args.p_in,
                    args.across / (n * (n - args.size) / 2), seed=13)
    tenant = f"bench-communities-{uuid.uuid4().hex[:8]}"
    print(f"[communities] {len(graph.edges)} edges, {n} services -> tenant {tenant}", flush=True)
    try:
        _, load_s = timed(lambda: load(settings, tenant, graph))
        with job_context(settings) as ctx:
            figures = {"load_s": load_s, **measure(ctx, settings, tenant, graph)}
    finally:
        if not args.keep:
            cleanup(settings, tenant)
    out = settings.home / "bench" / "communities.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
