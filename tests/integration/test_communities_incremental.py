"""Hierarchical Leiden and incremental communities (RSN-15) on the real stack.

A throw-away tenant gets a planted-partition graph (12 groups of 20 services) through the real
write path. The full job must recover the groups (NMI >= 0.9). Then 1 % of the edges change
inside two groups in one commit (one new service joins the first); the durable JetStream
consumer of ``graph.updated`` that ``substrate up`` runs (the stack's ``communities`` part,
``python -m gds_jobs watch``; real NATS) re-runs Leiden on the touched communities plus their
boundary only, and says so in its log. Its partition must stay within 1 % of the modularity of
a full rebuild at the new snapshot, the communities no change touched keep their ids (and
their stored text and embedding), and a read pinned to either snapshot gets the summaries and
RAPTOR tree of that snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import psycopg
import pytest

from gds_jobs.communities import leiden_assignments, run_communities
from gds_jobs.community_store import read_state
from gds_jobs.quality import modularity, nmi
from gds_jobs.runtime import JobContext, job_context, job_scope
from substrate.db import neo4j_driver
from substrate.embeddings import TextEmbedder, make_embedder
from substrate.graph.records import GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.global_search import summary_set
from substrate.retrieval.raptor import load_tree
from substrate.retrieval.scope import ReadScope, clearance_for
from substrate.scale.planted import Planted, ceid, change, edge_id, planted
from substrate.settings import Settings
from substrate.stack.communities_watch import CommunitiesWatchPart
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph

pytestmark = pytest.mark.integration

GROUPS, SIZE = 12, 20
NEWCOMER = "service:g000-n999"


@dataclass
class World:
    tenant: str
    graph: Planted
    truth_before: dict[str, int]
    v1: int
    v2: int
    changed: set[str]
    state_before: dict[str, tuple[str, str]]
    state_after: dict[str, tuple[str, str]]
    results: list[dict[str, Any]]


@pytest.fixture(scope="module")
def ctx(stack: Settings) -> Iterator[JobContext]:
    with job_context(stack) as context:
        yield context


@pytest.fixture(scope="module")
def embedder(stack: Settings) -> TextEmbedder:
    return make_embedder(stack)


def _cleanup(stack: Settings, tenant: str) -> None:
    driver = neo4j_driver(stack)
    try:
        drop_tenant_graph(driver, tenant)
    finally:
        driver.close()
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        for table in ("community_summaries", "community_state", "raptor_nodes"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (tenant,))


def _watch_results(stack: Settings, tenant: str, version: int,
                   timeout_s: float = 600.0) -> list[dict[str, Any]]:
    """The JSON lines the managed consumer logged for (tenant, version): one per level it ran,
    printed together once every level is stored."""
    log = CommunitiesWatchPart(stack).log_file
    deadline = time.monotonic() + timeout_s
    while True:
        found = []
        for line in log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                row = json.loads(line)
                if isinstance(row, dict) and row.get("tenant") == tenant \
                        and row.get("snapshot_version") == version and "mode" in row:
                    found.append(row)
        if found:
            return found
        assert time.monotonic() < deadline, f"no result of the watch for v{version} in {log}"
        time.sleep(1.0)


@pytest.fixture(scope="module")
def world(stack: Settings, ctx: JobContext, embedder: TextEmbedder) -> Iterator[World]:
    tenant = f"t-leiden-{uuid.uuid4().hex[:8]}"
    graph = planted(GROUPS, SIZE, p_in=0.5, p_out=0.01, seed=5)
    driver = neo4j_driver(stack)
    try:
        writer = GraphWriter(stack, driver, embedder=None)
        first = writer.commit(GraphBatch(graph.nodes(), graph.records()), source="planted",
                              tenant=tenant)
        assert first.snapshot_version is not None
        scope = job_scope(stack, tenant, clearance="internal")
        run_communities(ctx, scope, embedder)
        before, _ = read_state(stack, scope)
        truth_before = dict(graph.truth)
        removed, added = change(graph, round(0.01 * len(graph.edges)) - 6)
        newcomer = NodeRecord(NEWCOMER, "Service", {"name": "newcomer"})
        joins = {(ceid(0, i), NEWCOMER) for i in range(6)}  # a new service joins group 0
        graph.truth[NEWCOMER], graph.edges = 0, graph.edges | joins
        added |= joins
        changed = {n for pair in removed | added for n in pair}
        watch = CommunitiesWatchPart(stack)
        assert watch.status().healthy, "substrate up runs the community consumer"
        result = writer.commit(GraphBatch([newcomer], graph.records(added)), source="planted",
                               tenant=tenant, deletes=[edge_id(a, b) for a, b in sorted(removed)])
        assert result.snapshot_version is not None
        results = _watch_results(stack, tenant, result.snapshot_version)
        after, _ = read_state(stack, replace(scope, version=result.snapshot_version))
        yield World(tenant, graph, truth_before, first.snapshot_version,
                    result.snapshot_version, changed, before, after, results)
    finally:
        driver.close()
        _cleanup(stack, tenant)


def test_leiden_recovers_the_planted_groups(world: World) -> None:
    found = {c: d for c, (d, _) in world.state_before.items()}
    assert nmi(world.truth_before, found) >= 0.9


def test_the_event_ran_incrementally_on_the_touched_communities_only(world: World) -> None:
    internal = next(r for r in world.results if r["clearance"] == "internal")
    assert internal["mode"] == "incremental" and internal["snapshot_version"] == world.v2
    assert 1 <= int(internal["touched_domains"]) <= 3  # the change sits in two groups
    assert int(internal["affected_nodes"]) < GROUPS * SIZE / 2
    # the full job ran at internal only: the watch builds no other level's first set
    assert [r["clearance"] for r in world.results] == ["internal"], world.results


def test_incremental_modularity_is_within_one_percent_of_a_full_rebuild(
    stack: Settings, ctx: JobContext, world: World
) -> None:
    scope = ReadScope(world.tenant, world.v2, clearance_for("internal"), pinned=True)
    full = {c: ids[-1] for c, ids in leiden_assignments(ctx, scope).items()}
    incremental = {c: d for c, (d, _) in world.state_after.items()}
    q_full = modularity(world.graph.weighted(), full)
    q_incremental = modularity(world.graph.weighted(), incremental)
    assert q_incremental >= q_full * 0.99, (q_incremental, q_full)
    assert nmi(world.graph.truth, incremental) >= 0.9


def test_untouched_communities_keep_their_ids_and_stored_rows(
    stack: Settings, world: World
) -> None:
    untouched = {d for c, (d, _) in world.state_before.items()} - {
        world.state_before[c][0] for c in world.changed if c in world.state_before}
    assert len(untouched) >= GROUPS - 3
    assert untouched <= {d for d, _ in world.state_after.values()}
    with psycopg.connect(stack.postgres_dsn) as conn:
        rows = conn.execute(
            "SELECT community_id, snapshot_version, summary, embedding::text "
            "FROM community_summaries WHERE tenant_id = %s AND clearance = 'internal' "
            "AND community_id = ANY(%s)", (world.tenant, sorted(untouched))).fetchall()
    by_id: dict[str, dict[int, tuple[str, str]]] = {}
    for cid, v, text, vector in rows:
        by_id.setdefault(cid, {})[int(v)] = (text, vector)
    assert all(set(versions) == {world.v1, world.v2} for versions in by_id.values())
    assert all(versions[world.v1] == versions[world.v2] for versions in by_id.values())


def test_a_pinned_read_gets_the_summaries_and_tree_of_its_snapshot(
    stack: Settings, world: World
) -> None:
    def ids(version: int) -> set[str]:
        rows = asyncio.run(summary_set(stack, world.tenant, clearance="internal",
                                       version=version))
        assert {r["snapshot_version"] for r in rows} == {version}
        return {str(r["community_id"]) for r in rows}

    before, after = ids(world.v1), ids(world.v2)
    assert before != after and before & after  # changed ones differ, untouched ones stay
    newcomer = next(d for c, (d, _) in world.state_after.items() if c == NEWCOMER)
    assert newcomer in after - before
    trees = {v: asyncio.run(load_tree(stack, ReadScope(world.tenant, v,
                                                       clearance_for("internal"), True)))
             for v in (world.v1, world.v2)}
    assert {r["snapshot_version"] for r in trees[world.v1]} == {world.v1}
    assert {r["snapshot_version"] for r in trees[world.v2]} == {world.v2}
    domains = {v: {r["node_id"] for r in rows if r["level"] == 1} for v, rows in trees.items()}
    assert domains[world.v1] == {f"D:{c}" for c in before if c.startswith("L1-")}
    assert domains[world.v2] == {f"D:{c}" for c in after if c.startswith("L1-")}
    leaves = [r for r in trees[world.v2] if r["level"] == 3]
    assert {r["node_id"][2:] for r in leaves} == set(world.state_after)
    with gateway(stack, headers={"X-Tenant": world.tenant, "X-Clearance": "internal"}) as c:
        body = {"query": "services of group 3", "snapshot_version": world.v1,
                "options": {"strategies": ["global_graphrag", "raptor"], "rerank": False}}
        answer = c.post("/search", json=body).json()
    trace = answer["strategies"]["global_graphrag"]["trace"]
    assert {t["community_id"] for t in trace} == before
    assert answer["strategies"]["raptor"]["trace"][0]["node_id"] == "S"
