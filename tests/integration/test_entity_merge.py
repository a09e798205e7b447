"""Merging two entities against the real stack: it needs evidence, is one snapshot, moves the
merged node's live edges to the kept node, leaves an ALIAS_OF edge and an audit record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.errors import NotFound, ValidationFailed
from substrate.graph.merge import merge_entities
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import PROJECT_ROOT, Settings
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    drop_tenant_graph,
    edge_versions,
    element_counts,
    live_edge,
    new_tenant,
    node_state,
    snapshot_versions,
)

pytestmark = pytest.mark.integration
EVIDENCE = "review:ARCH-88 (checkout-svc is the compose name of checkout)"


def node(ceid: str, label: str = "Service") -> NodeRecord:
    return NodeRecord(ceid, label, {"name": ceid.split(":", 1)[1]})


def edge(rel: str, src: str, dst: str, ref: str) -> EdgeRecord:
    return EdgeRecord(rel, src, dst, ref, props={"note": "seed"})


@pytest.fixture
def tenant(stack: Settings, driver: Driver) -> Iterator[str]:
    """checkout and its duplicate checkout-svc, with edges from three sources."""
    name = new_tenant("merge")
    writer = GraphWriter(stack, driver)
    nodes = [node(c) for c in ("service:checkout", "service:checkout-svc", "service:payments",
                               "service:web")]
    nodes += [node("team:web", "Team"), node("team:commerce", "Team")]
    writer.commit(GraphBatch(nodes, [
        edge("CALLS", "service:checkout-svc", "service:payments", "compose.yml#L5@abc1234"),
        edge("OWNS", "team:web", "service:checkout-svc", "CODEOWNERS#L2@abc1234"),
        edge("CALLS", "service:checkout", "service:checkout-svc", "compose.yml#L9@abc1234"),
    ]), source="git:shop", tenant=name)
    writer.commit(GraphBatch([], [
        edge("OWNS", "team:commerce", "service:checkout", "catalog:shop#checkout"),
        edge("OWNS", "team:web", "service:checkout-svc", "catalog:shop#checkout-svc"),
    ]), source="catalog", tenant=name)
    writer.commit(GraphBatch([], [
        edge("CALLS", "service:web", "service:checkout-svc", "trace:web/span-1"),
    ]), source="traces", tenant=name)
    yield name
    drop_tenant_graph(driver, name)


def test_a_merge_without_evidence_is_refused(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    writer = GraphWriter(stack, driver)
    before = element_counts(driver, tenant), snapshot_versions(pg, tenant)
    for evidence in ("", "  "):
        with pytest.raises(ValidationFailed) as info:
            merge_entities(writer, tenant, "service:checkout", "service:checkout-svc",
                           evidence, "alice")
        assert info.value.detail[0]["reason"] == "a merge needs evidence: evidence_ref is empty"
    with pytest.raises(ValidationFailed):
        merge_entities(writer, tenant, "service:checkout", "team:web", EVIDENCE, "alice")
    with pytest.raises(NotFound):
        merge_entities(writer, tenant, "service:checkout", "service:nope", EVIDENCE, "alice")
    assert (element_counts(driver, tenant), snapshot_versions(pg, tenant)) == before
    assert pg.execute("SELECT count(*) FROM audit_log WHERE tenant_id = %s "
                      "AND action <> 'snapshot.commit'", (tenant,)).fetchone() == (0,)


MOVED = {
    "service:checkout-[CALLS]->service:payments@git:shop": "compose.yml#L5@abc1234",
    "team:web-[OWNS]->service:checkout@git:shop": "CODEOWNERS#L2@abc1234",
    "team:web-[OWNS]->service:checkout@catalog": "catalog:shop#checkout-svc",
    "service:web-[CALLS]->service:checkout@traces": "trace:web/span-1",
}


@pytest.fixture
def merged(stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str
           ) -> tuple[str, int]:
    """(tenant, snapshot version of the merge of checkout-svc into checkout)."""
    count_before = len(snapshot_versions(pg, tenant))
    result = merge_entities(GraphWriter(stack, driver), tenant, "service:checkout",
                            "service:checkout-svc", EVIDENCE, "alice")
    assert result.snapshot_version is not None
    assert len(snapshot_versions(pg, tenant)) == count_before + 1  # one snapshot
    return tenant, result.snapshot_version


def test_merge_closes_the_merged_node_and_moves_its_edges(
    driver: Driver, pg: psycopg.Connection[Any], merged: tuple[str, int]
) -> None:
    tenant, v = merged
    assert_change_log_matches_graph(driver, pg, tenant, v)
    node = node_state(driver, tenant, "service:checkout-svc")
    assert node is not None and node["valid_to_v"] == v  # closed, not deleted
    for old in ("service:checkout-svc-[CALLS]->service:payments@git:shop",
                "team:web-[OWNS]->service:checkout-svc@git:shop",
                "team:web-[OWNS]->service:checkout-svc@catalog",
                "service:checkout-[CALLS]->service:checkout-svc@git:shop",
                "service:web-[CALLS]->service:checkout-svc@traces"):
        assert edge_versions(driver, tenant, old)[-1][1] == v, old
    for eid, ref in MOVED.items():
        now = live_edge(driver, tenant, eid)
        assert now is not None and now["valid_from_v"] == v, eid
        assert (now["evidence_ref"], now["note"]) == (ref, "seed")
        assert (now["merged_from"], now["merge_evidence"]) == ("service:checkout-svc", EVIDENCE)
    assert live_edge(driver, tenant, "service:checkout-[CALLS]->service:checkout@git:shop") is None


def test_merge_leaves_an_alias_and_an_audit_record(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], merged: tuple[str, int]
) -> None:
    tenant, v = merged
    alias = live_edge(driver, tenant, "service:checkout-svc-[ALIAS_OF]->service:checkout@merge")
    assert alias is not None and alias["evidence_ref"] == EVIDENCE and alias["valid_from_v"] == v
    kept = node_state(driver, tenant, "service:checkout")
    assert kept is not None and kept["aliases"] == ["checkout-svc"]
    assert kept["alias_evidence"] == [f"checkout-svc={EVIDENCE}"]
    assert kept.get("valid_to_v") is None and kept["iv_from"] == [kept["valid_from_v"]]
    rows = pg.execute("SELECT actor, action, target, detail FROM audit_log "
                      "WHERE tenant_id = %s AND action <> 'snapshot.commit'",  # every write's
                      (tenant,)).fetchall()
    assert len(rows) == 1
    actor, action, target, detail = rows[0]
    assert (actor, action, target) == ("alice", "entity.merge",
                                       "service:checkout-svc->service:checkout")
    assert detail["snapshot_version"] == v and detail["evidence_ref"] == EVIDENCE
    assert detail["moved_edges"] == sorted(MOVED)
    with pytest.raises(NotFound):  # already merged: the node is no longer live
        merge_entities(GraphWriter(stack, driver), tenant, "service:checkout",
                       "service:checkout-svc", EVIDENCE, "alice")


def test_cli_merge_needs_evidence(pg: psycopg.Connection[Any], tenant: str) -> None:
    env = {**os.environ, "SUBSTRATE_TENANT": tenant}

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "substrate.cli", "merge", "service:checkout",
             "service:checkout-svc", *extra], cwd=PROJECT_ROOT, env=env, capture_output=True,
            text=True, timeout=300, check=False)

    refused = run()
    assert refused.returncode == 1 and "merge needs evidence" in refused.stderr
    done = run("--evidence", EVIDENCE, "--actor", "bob")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["snapshot_version"] == snapshot_versions(pg, tenant)[-1]
    assert out["counts"]["nodes_closed"] == 1
    assert pg.execute("SELECT actor FROM audit_log WHERE tenant_id = %s AND action = "
                      "'entity.merge'", (tenant,)).fetchall() == [("bob",)]
