"""The write path against the real Neo4j, PostgreSQL and NATS JetStream (issue 3).

Each test writes into its own throw-away tenant and deletes the tenant's Neo4j nodes at the
end (the PostgreSQL history stays, as it would in production).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from neo4j import Driver

from substrate.embeddings import make_embedder
from substrate.errors import ValidationFailed
from substrate.graph import snapshots
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import MAXV, GraphWriter
from substrate.settings import Settings
from tests.support.gateway_client import auth
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    create_consumer,
    delete_consumer,
    drain_events,
    drop_tenant_graph,
    edge_versions,
    element_counts,
    live_edge,
    new_tenant,
    node_state,
    snapshot_versions,
    versions_once,
)

pytestmark = pytest.mark.integration


def svc(name: str, **props: Any) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name, **props})


def team(name: str) -> NodeRecord:
    return NodeRecord(f"team:{name}", "Team", {"name": name})


def calls(a: str, b: str, ref: str | None = None, **kw: Any) -> EdgeRecord:
    ref = f"test://{a}-{b}#L1" if ref is None else ref
    return EdgeRecord("CALLS", f"service:{a}", f"service:{b}", ref, **kw)


def key(a: str, b: str, source: str = "test", rel: str = "CALLS") -> str:
    return f"service:{a}-[{rel}]->service:{b}@{source}"


@pytest.fixture
def tenant(driver: Driver) -> Iterator[str]:
    name = new_tenant("write")
    yield name
    drop_tenant_graph(driver, name)


@pytest.fixture(scope="module")
def writer(stack: Settings, driver: Driver) -> GraphWriter:
    return GraphWriter(stack, driver)


def queued(pg: psycopg.Connection[Any], tenant: str) -> int:
    row = pg.execute("SELECT count(*) FROM verification_queue WHERE tenant_id = %s",
                     (tenant,)).fetchone()
    return int(row[0]) if row else 0


def rejected(writer: GraphWriter, batch: GraphBatch, tenant: str, **kw: Any
             ) -> list[dict[str, Any]]:
    with pytest.raises(ValidationFailed) as info:
        writer.commit(batch, source="test", tenant=tenant, **kw)
    assert info.value.status == 422
    assert "nothing was written" in info.value.message
    detail: list[dict[str, Any]] = info.value.detail
    return detail


def seed(writer: GraphWriter, tenant: str) -> int:
    result = writer.commit(GraphBatch([svc("a"), svc("b")], [calls("a", "b")]),
                           source="test", tenant=tenant)
    assert result.snapshot_version is not None
    return result.snapshot_version


def test_edge_without_evidence_is_rejected_and_nothing_is_written(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    seed(writer, tenant)
    before = element_counts(driver, tenant), snapshot_versions(pg, tenant)
    batch = GraphBatch([svc("c")], [calls("a", "c"), calls("c", "a", ref=""),
                                    calls("c", "b", ref="   ", confidence=0.5)])
    problems = rejected(writer, batch, tenant)
    assert problems == [
        {"record": "service:c-[CALLS]->service:a", "reason": "edge without evidence_ref",
         "position": 1},
        {"record": "service:c-[CALLS]->service:b", "reason": "edge without evidence_ref",
         "position": 2},
    ]
    assert (element_counts(driver, tenant), snapshot_versions(pg, tenant)) == before
    assert node_state(driver, tenant, "service:c") is None
    assert queued(pg, tenant) == 0  # the low-confidence edge of a rejected batch is not queued


def test_unknown_label_type_or_ceid_is_rejected(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    seed(writer, tenant)
    before = element_counts(driver, tenant), snapshot_versions(pg, tenant)
    batch = GraphBatch(
        [NodeRecord("gadget:x", "Gadget", {"name": "x"}),
         NodeRecord("team:y", "Service", {"name": "y"}), svc("d")],
        [EdgeRecord("LIKES", "service:a", "service:b", "test://likes#L1"),
         EdgeRecord("CALLS", "service:a", "widget:w", "test://w#L1")],
    )
    reasons = {(p["record"], p["reason"]) for p in rejected(writer, batch, tenant)}
    assert ("gadget:x", "unknown label 'Gadget' (ontology 2026.11.1)") in reasons
    assert ("team:y", "ceid must look like 'service:<id>'") in reasons
    assert ("service:a-[LIKES]->service:b",
            "unknown relationship type 'LIKES' (ontology 2026.11.1)") in reasons
    assert ("service:a-[CALLS]->widget:w",
            "endpoint 'widget:w' has no known ceid prefix") in reasons
    assert not any(r == "service:d" for r, _ in reasons)
    assert (element_counts(driver, tenant), snapshot_versions(pg, tenant)) == before


def test_confidence_must_be_in_0_1_even_for_records_bound_for_the_queue(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    seed(writer, tenant)
    nodes = [svc("zero"), svc("neg"), svc("big"), svc("nan")]
    nodes = [dataclasses.replace(n, confidence=c)
             for n, c in zip(nodes, (0.0, -0.5, 1.5, math.nan), strict=True)]
    batch = GraphBatch(nodes, [calls("a", "b", confidence=0.0, weight=2.0)],
                       pending=[NodeRecord("service:q", "Service", {"name": "q"}, confidence=2)])
    problems = rejected(writer, batch, tenant)
    bad = {p["record"] for p in problems if p["reason"] == "confidence must be in (0, 1]"}
    assert bad == {"service:zero", "service:neg", "service:big", "service:nan",
                   "service:a-[CALLS]->service:b", "service:q"}
    assert queued(pg, tenant) == 0


def test_one_bad_record_among_many_writes_nothing(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    names = [f"s{i:03d}" for i in range(200)]
    edges = [calls(names[i], names[i + 1]) for i in range(199)]
    broken = edges[:150] + [calls(names[0], "ghost")] + edges[150:]
    problems = rejected(writer, GraphBatch([svc(n) for n in names], broken), tenant)
    assert problems == [{"record": "service:s000-[CALLS]->service:ghost", "position": 150,
                         "reason": "endpoint 'service:ghost' is neither in the batch nor in "
                                   "the graph"}]
    assert element_counts(driver, tenant) == (0, 0)
    assert snapshot_versions(pg, tenant) == []
    result = writer.commit(GraphBatch([svc(n) for n in names], edges), source="test",
                           tenant=tenant)
    assert result.counts["nodes_added"] == 200 and result.counts["edges_added"] == 199
    assert element_counts(driver, tenant) == (200, 199)
    assert snapshot_versions(pg, tenant) == [result.snapshot_version]


def test_rerun_of_the_same_batch_makes_no_snapshot(
    writer: GraphWriter, pg: psycopg.Connection[Any], tenant: str
) -> None:
    batch = GraphBatch([svc("a", tier="edge"), svc("b")], [calls("a", "b", weight=0.5)])
    first = writer.commit(batch, source="test", tenant=tenant)
    again = writer.commit(batch, source="test", tenant=tenant)
    assert first.snapshot_version is not None
    assert again.snapshot_version is None and again.changed_ids == []
    assert again.content_hash == first.content_hash
    assert snapshot_versions(pg, tenant) == [first.snapshot_version]


def test_versions_increase_and_the_change_log_matches_neo4j(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    v1 = writer.commit(GraphBatch([svc("a"), svc("b"), svc("c")],
                                  [calls("a", "b"), calls("b", "c"), calls("a", "c")]),
                       source="test", tenant=tenant)
    v2 = writer.commit(GraphBatch([svc("a", tier="edge"), svc("d")],
                                  [calls("a", "b", confidence=0.97), calls("c", "d")]),
                       source="test", tenant=tenant)
    v3 = writer.commit(GraphBatch(), source="test", tenant=tenant,
                       deletes=["service:c", key("a", "b")])
    versions = [r.snapshot_version or 0 for r in (v1, v2, v3)]
    assert all(versions)
    assert versions == sorted(set(versions)) == snapshot_versions(pg, tenant)
    for result in (v1, v2, v3):
        assert result.snapshot_version is not None
        rows = assert_change_log_matches_graph(driver, pg, tenant, result.snapshot_version)
        stored = pg.execute("SELECT changed_nodes + changed_edges, content_hash FROM snapshots "
                            "WHERE version = %s", (result.snapshot_version,)).fetchone()
        assert stored == (len(rows), result.content_hash)
    ops2 = {(r[1], r[2]) for r in assert_change_log_matches_graph(driver, pg, tenant,
                                                                   versions[1])}
    assert ops2 == {("service:a", "update"), ("service:d", "add"),
                    (key("a", "b"), "update"), (key("c", "d"), "add")}
    v2_, v3_ = versions[1], versions[2]
    assert edge_versions(driver, tenant, key("a", "b")) == [(versions[0], v2_), (v2_, v3_)]
    for closed in (key("b", "c"), key("a", "c"), key("c", "d")):  # closed with their node
        assert edge_versions(driver, tenant, closed)[-1][1] == v3_
    c = node_state(driver, tenant, "service:c")
    assert c is not None and c["valid_to_v"] == v3_ and c["iv_to"] == [v3_]


def test_sync_mode_closes_what_a_source_withdrew_and_deletes_nothing(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    writer.commit(GraphBatch([svc("b")]), source="other", tenant=tenant)
    v1 = writer.commit(GraphBatch([svc("a"), svc("b"), svc("c")],
                                  [calls("a", "b"), calls("b", "c")]),
                       source="inventory", tenant=tenant, mode="sync").snapshot_version
    counts = element_counts(driver, tenant)
    v2 = writer.commit(GraphBatch([svc("a")], []), source="inventory", tenant=tenant,
                       mode="sync").snapshot_version
    assert v1 is not None and v2 is not None
    assert element_counts(driver, tenant) == counts  # closed, not deleted
    assert_change_log_matches_graph(driver, pg, tenant, v2)
    for eid in (key("a", "b", "inventory"), key("b", "c", "inventory")):
        assert edge_versions(driver, tenant, eid) == [(v1, v2)]
    c, b = node_state(driver, tenant, "service:c"), node_state(driver, tenant, "service:b")
    assert c is not None and c["valid_to_v"] == v2 and c["iv_from"] == [v1] == [c["valid_from_v"]]
    assert b is not None and b.get("valid_to_v") is None and b["sources"] == ["other"]
    v3 = writer.commit(GraphBatch([svc("a"), svc("c")], []), source="inventory",
                       tenant=tenant, mode="sync").snapshot_version
    c = node_state(driver, tenant, "service:c")
    assert c is not None and (c["iv_from"], c["iv_to"]) == ([v1, v3], [v2, MAXV])
    assert element_counts(driver, tenant) == counts


def test_sync_keeps_a_node_that_the_batch_still_links_to(
    writer: GraphWriter, driver: Driver, tenant: str
) -> None:
    writer.commit(GraphBatch([svc("a"), svc("b")]), source="inventory", tenant=tenant,
                  mode="sync")
    v2 = writer.commit(GraphBatch([svc("a")], [calls("a", "b")]), source="inventory",
                       tenant=tenant, mode="sync").snapshot_version
    edge = live_edge(driver, tenant, key("a", "b", "inventory"))
    b = node_state(driver, tenant, "service:b")
    assert edge is not None and edge["valid_from_v"] == v2
    assert b is not None and b.get("valid_to_v") is None  # no live edge on a closed node


def test_one_graph_updated_event_per_committed_batch(
    stack: Settings, writer: GraphWriter, pg: psycopg.Connection[Any], tenant: str
) -> None:
    durable = f"test-{tenant}"
    create_consumer(stack, durable)
    try:
        results = [
            writer.commit(GraphBatch([svc("a"), svc("b")], [calls("a", "b")]),
                          source="test", tenant=tenant),
            writer.commit(GraphBatch([svc("c")], [calls("b", "c")]), source="test",
                          tenant=tenant),
            writer.commit(GraphBatch([svc("c")], [calls("b", "c")]), source="test",
                          tenant=tenant),  # no change: no snapshot, no event
            writer.commit(GraphBatch(), source="test", tenant=tenant, deletes=["service:a"]),
        ]
        with pytest.raises(ValidationFailed):  # rejected: no event either
            writer.commit(GraphBatch([], [calls("a", "x")]), source="test", tenant=tenant)
        made = [r for r in results if r.snapshot_version is not None]
        assert len(made) == 3
        got = drain_events(stack, durable, tenant, {r.snapshot_version or 0 for r in made})
    finally:
        delete_consumer(stack, durable)
    assert versions_once(got) == {r.snapshot_version: 1 for r in made}
    assert [e["snapshot_version"] for e in got] == [r.snapshot_version for r in made]
    for event, result in zip(got, made, strict=True):  # the writer's ids: the change log's
        assert event["changed_ids"] == result.changed_ids
        assert event["changed_ids"] == snapshots.changed_ids(pg, result.snapshot_version or 0)
    assert got[0]["changed_ids"] == sorted(["service:a", "service:b", key("a", "b")])


def test_events_wait_in_the_outbox_while_nats_is_down(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    durable = f"test-{tenant}"
    create_consumer(stack, durable)
    try:
        down = GraphWriter(dataclasses.replace(stack, nats_url_env="nats://127.0.0.1:1"), driver)
        during = down.commit(GraphBatch([svc("a")]), source="test", tenant=tenant)
        published = pg.execute("SELECT published FROM snapshots WHERE version = %s",
                               (during.snapshot_version,)).fetchone()
        # committed; the event waits in the outbox until a publisher sends it (the next
        # write, or a running gateway's outbox loop, which may already have done so)
        assert published is not None
        after = GraphWriter(stack, driver).commit(GraphBatch([svc("b")]), source="test",
                                                  tenant=tenant)
        versions = [during.snapshot_version, after.snapshot_version]
        got = drain_events(stack, durable, tenant, {v or 0 for v in versions})
    finally:
        delete_consumer(stack, durable)
    assert [e["snapshot_version"] for e in got] == versions
    assert [e["changed_ids"] for e in got] == [["service:a"], ["service:b"]]
    rows = pg.execute("SELECT published FROM snapshots WHERE version = ANY(%s)",
                      (versions,)).fetchall()
    assert rows == [(True,), (True,)]


def test_contradicting_primary_owners_are_both_kept_and_marked(
    stack: Settings, writer: GraphWriter, driver: Driver, tenant: str
) -> None:
    def owner(who: str, ref: str) -> EdgeRecord:
        return EdgeRecord("PRIMARY_OWNER", f"team:{who}", "service:billing", ref)

    nodes = [svc("billing"), team("payments"), team("finance")]
    writer.commit(GraphBatch(nodes, [owner("payments", "CODEOWNERS#L4@abc1234")]),
                  source="git:shop", tenant=tenant)
    writer.commit(GraphBatch(nodes[1:], [owner("finance", "hr:export/2026-11#row12")]),
                  source="hr", tenant=tenant)
    keys = ["team:payments-[PRIMARY_OWNER]->service:billing@git:shop",
            "team:finance-[PRIMARY_OWNER]->service:billing@hr"]
    edges = [live_edge(driver, tenant, k) for k in keys]
    assert all(e is not None and e["conflict"] is True for e in edges)
    assert edges[0] and edges[0]["conflict_with"] == [keys[1]]
    assert edges[1] and edges[1]["conflict_with"] == [keys[0]]
    body = httpx.get(f"http://{stack.gateway_host}:{stack.gateway_port}/ownership/billing",
                     headers=auth(stack, **{"X-Tenant": tenant}), timeout=60).json()
    conflicts = {(c["from"], c["evidence_ref"], c["source"]) for c in body["conflicts"]}
    assert conflicts == {("team:payments", "CODEOWNERS#L4@abc1234", "git:shop"),
                         ("team:finance", "hr:export/2026-11#row12", "hr")}
    hops = {(h["source"], h["evidence_ref"]) for h in body["evidence_bundle"]["hops"]}
    assert hops == {("team:payments", "CODEOWNERS#L4@abc1234"),
                    ("team:finance", "hr:export/2026-11#row12")}
    # the HR export withdraws its claim: the remaining one is no longer in conflict
    writer.commit(GraphBatch(), source="hr", tenant=tenant, mode="sync")
    remaining = live_edge(driver, tenant, keys[0])
    assert remaining is not None and remaining["conflict"] is False
    assert live_edge(driver, tenant, keys[1]) is None


class DeletingEmbedder:
    """The real embedder, which first deletes a node behind the writer's back: what an
    out-of-band ``DETACH DELETE`` between the writer's reads and its transaction would do."""

    def __init__(self, settings: Settings, driver: Driver, tenant: str, ceid: str) -> None:
        self.inner = make_embedder(settings)
        self.dimensions, self.model_id = self.inner.dimensions, self.inner.model_id
        self.driver, self.tenant, self.ceid = driver, tenant, ceid

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.driver.execute_query("MATCH (n:Entity {tenant_id: $t, ceid: $c}) DETACH DELETE n",
                                  {"t": self.tenant, "c": self.ceid})
        return self.inner.embed_documents(texts)


def test_an_edge_whose_end_vanished_before_the_write_rolls_the_snapshot_back(
    stack: Settings, writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any],
    tenant: str,
) -> None:
    """Edges find their ends by the element ids read before the transaction; an end gone
    since then would silently drop its edge: the count check rolls the whole write back."""
    seed(writer, tenant)
    before = snapshot_versions(pg, tenant)
    deleting = GraphWriter(stack, driver, DeletingEmbedder(stack, driver, tenant, "service:b"))
    with pytest.raises(RuntimeError, match="0 of 1 relationships created"):
        deleting.commit(GraphBatch([svc("c")], [calls("c", "b")]), source="test",
                        tenant=tenant)
    assert node_state(driver, tenant, "service:c") is None  # nothing of the batch written
    assert snapshot_versions(pg, tenant) == before
    assert element_counts(driver, tenant) == (1, 0)  # a, left alone by the deletion
    intents = pg.execute("SELECT count(*) FROM write_intents WHERE tenant_id = %s",
                         (tenant,)).fetchone()
    assert intents == (0,)  # the intent was discarded, not left for the reconciler
