"""Several commits under one hold of the writers' lock (a bulk ingest), pipelined: each
snapshot is recorded in the background while the next batch is diffed; and a write intent's
change rows kept as change_log's COPY text (V0013), copied once into the change log."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.errors import ValidationFailed
from substrate.graph import intents, snapshots
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    create_consumer,
    delete_consumer,
    drain_events,
    drop_tenant_graph,
    new_tenant,
    snapshot_versions,
)

pytestmark = pytest.mark.integration

ODD = "service:odd\ttab\nline\\slash"  # every character COPY's text format escapes


def svc(ceid: str, **props: Any) -> NodeRecord:
    return NodeRecord(ceid, "Service", {"name": ceid.split(":", 1)[1], **props})


def calls(a: str, b: str, ref: str = "test://x#L1") -> EdgeRecord:
    return EdgeRecord("CALLS", a, b, ref)


@pytest.fixture
def tenant(driver: Driver) -> Iterator[str]:
    name = new_tenant("session")
    yield name
    drop_tenant_graph(driver, name)


@pytest.fixture(scope="module")
def writer(stack: Settings, driver: Driver) -> GraphWriter:
    return GraphWriter(stack, driver)


def unpublished(pg: psycopg.Connection[Any], tenant: str) -> int:
    row = pg.execute("SELECT count(*) FROM snapshots WHERE tenant_id = %s AND NOT published",
                     (tenant,)).fetchone()
    return int(row[0]) if row else -1


def test_a_pipelined_session_records_every_snapshot_in_order(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
) -> None:
    batches = [
        GraphBatch([svc("service:a"), svc(ODD, note="a\\b\tc")]),
        GraphBatch([svc("service:b")], [calls("service:a", ODD), calls(ODD, "service:b")]),
        # reads the graph the previous batch wrote: an update and an edge replaced
        GraphBatch([svc("service:a", tier=1)], [calls("service:a", ODD, "test://x#L2")]),
    ]
    with writer.session(pipelined=True) as session:
        results = [session.commit(b, source="s", tenant=tenant) for b in batches]
    versions = [r.snapshot_version for r in results]
    assert versions == snapshot_versions(pg, tenant)
    assert versions == list(range(versions[0], versions[0] + 3))  # type: ignore[operator]
    assert [r.counts["edges_closed"] for r in results] == [0, 0, 1]
    assert results[2].counts["nodes_updated"] == 1
    for v in versions:
        assert v is not None
        assert_change_log_matches_graph(driver, pg, tenant, v)
    logged = pg.execute(
        "SELECT element_id, after->'props'->>'note' FROM change_log WHERE tenant_id = %s "
        "AND element_id = %s", (tenant, ODD)).fetchall()
    assert logged == [(ODD, "a\\b\tc")]  # escaped for COPY, stored as given
    assert pg.execute("SELECT count(*) FROM write_intents").fetchone() == (0,)
    assert unpublished(pg, tenant) == 0  # each snapshot's event went out


def test_a_pipelined_session_sends_each_snapshot_s_event_with_the_change_log_s_ids(
    writer: GraphWriter, stack: Settings, pg: psycopg.Connection[Any], tenant: str,
) -> None:
    durable = f"test-{tenant}"
    create_consumer(stack, durable)
    try:
        with writer.session(pipelined=True) as session:
            results = [session.commit(b, source="s", tenant=tenant) for b in (
                GraphBatch([svc("service:a"), svc("service:b")],
                           [calls("service:a", "service:b")]),
                GraphBatch([svc("service:c")], [calls("service:b", "service:c")]),
                GraphBatch([], [calls("service:b", "service:c", "test://x#L9")]))]
        versions = [r.snapshot_version or 0 for r in results]
        got = drain_events(stack, durable, tenant, set(versions))
    finally:
        delete_consumer(stack, durable)
    assert [e["snapshot_version"] for e in got] == versions
    for event, result, version in zip(got, results, versions, strict=True):
        assert event["changed_ids"] == snapshots.changed_ids(pg, version)
        assert event["changed_ids"] == result.changed_ids
    assert got[2]["changed_ids"] == ["service:b", "service:b-[CALLS]->service:c@s",
                                     "service:c"]


def test_a_rejected_batch_leaves_the_session_s_earlier_snapshots_recorded(
    writer: GraphWriter, pg: psycopg.Connection[Any], tenant: str,
) -> None:
    with pytest.raises(ValidationFailed), writer.session(pipelined=True) as session:
        first = session.commit(GraphBatch([svc("service:a")]), source="s", tenant=tenant)
        session.commit(GraphBatch([], [calls("service:a", "service:nowhere")]), source="s",
                       tenant=tenant)
    assert snapshot_versions(pg, tenant) == [first.snapshot_version]
    assert pg.execute("SELECT count(*) FROM write_intents").fetchone() == (0,)
    with writer.session(pipelined=True) as session:  # the lock was released
        assert session.commit(GraphBatch([svc("service:b")]), source="s",
                              tenant=tenant).snapshot_version is not None


def test_an_intent_recorded_as_rows_by_an_older_writer_still_completes(
    stack: Settings, pg: psycopg.Connection[Any], tenant: str,
) -> None:
    """Intents written before V0013 hold their rows in write_intent_changes."""
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn, \
            snapshots.writers_lock(conn):
        version = snapshots.next_version(conn)
        with conn.transaction():
            conn.execute(
                "INSERT INTO write_intents (version, tenant_id, valid_at, source, "
                "content_hash, changed_nodes, changed_edges) VALUES (%s, %s, %s, 's', 'h', 1, 0)",
                (version, tenant, datetime.now(UTC)))
            conn.execute(
                "INSERT INTO write_intent_changes (intent_version, tenant_id, element_kind, "
                "element_id, op, before, after) VALUES (%s, %s, 'node', 'service:old', 'add', "
                "NULL, '{\"label\": \"Service\"}')", (version, tenant))
        assert intents.complete(conn, version)
    rows = pg.execute("SELECT element_id, op, after FROM change_log WHERE snapshot_version = %s",
                      (version,)).fetchall()
    assert rows == [("service:old", "add", {"label": "Service"})]
    assert pg.execute("SELECT count(*) FROM write_intent_changes WHERE intent_version = %s",
                      (version,)).fetchone() == (0,)


def test_the_reconciler_copies_an_intent_s_rows_from_the_intent(
    stack: Settings, pg: psycopg.Connection[Any], tenant: str,
) -> None:
    """Completed without the writer's copy of the rows (as after a crash)."""
    change = snapshots.ChangeRow("node", ODD, "add", None, {"label": "Service", "x": "\\"})
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn, \
            snapshots.writers_lock(conn):
        version = snapshots.next_version(conn)
        with conn.transaction():
            intents.record(conn, version, tenant, datetime.now(UTC), "s", "h", [change], None)
        assert intents.complete(conn, version, reconciled=True)
    rows = pg.execute("SELECT element_kind, element_id, op, before, after FROM change_log "
                      "WHERE snapshot_version = %s", (version,)).fetchall()
    assert rows == [("node", ODD, "add", None, {"label": "Service", "x": "\\"})]


def test_commits_one_after_another_reuse_one_connection_and_survive_its_loss(
        stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str) -> None:
    """Each commit holds the writers' lock in a session of its own (a history replay makes
    hundreds): the next one reuses the connection the last one ended with, its event sent on
    it too. A connection the server dropped in between is replaced, and nothing is lost."""
    writer = GraphWriter(stack, driver)
    first = writer.commit(GraphBatch([svc("service:a")]), source="t", tenant=tenant)
    kept = writer._idle
    assert kept is not None and first.snapshot_version is not None
    backend = kept.info.backend_pid
    second = writer.commit(GraphBatch([svc("service:a"), svc("service:b")]), source="t",
                           tenant=tenant)
    assert writer._idle is kept and kept.info.backend_pid == backend
    pg.execute("SELECT pg_terminate_backend(%s)", (backend,))
    third = writer.commit(GraphBatch([svc("service:a"), svc("service:b"), svc("service:c")]),
                          source="t", tenant=tenant)
    assert writer._idle is not None and writer._idle.info.backend_pid != backend
    versions = [r.snapshot_version for r in (first, second, third)]
    assert versions == sorted(versions) and snapshot_versions(pg, tenant) == versions
    assert unpublished(pg, tenant) == 0  # every event sent
    with snapshots.writers_lock(pg, wait=False) as free:
        assert free  # the kept connection does not hold the writers' lock between commits
