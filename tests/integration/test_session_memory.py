"""A write session remembers what its own commits read, created and closed
(``substrate/graph/session_memory.py``) instead of reading it back: the same commits give
the same snapshots in one session as one session each, with fewer reads, and a failed
commit makes the session forget the tenant."""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.errors import ValidationFailed
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.session_memory import SessionMemory
from substrate.graph.writer import GraphWriter
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    snapshot_versions,
)

pytestmark = pytest.mark.integration


def svc(name: str, **props: Any) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name, **props})


def calls(a: str, b: str, ref: str = "src/a.py#L1@c1", **props: Any) -> EdgeRecord:
    return EdgeRecord("CALLS", f"service:{a}", f"service:{b}", ref, props=props)


# (batch, commit options): new nodes, edges between nodes created earlier in the session, an
# edge stated again unchanged and changed, a node closed then named by an edge (refused)
# and stated again, an edge to a node that existed before the session
STEPS: list[tuple[GraphBatch, dict[str, Any]]] = [
    (GraphBatch([svc("a"), svc("b"), svc("c")]), {}),
    (GraphBatch([], [calls("a", "b"), calls("b", "c")]), {}),
    (GraphBatch([], [calls("a", "b"), calls("a", "c", proto="grpc")]), {}),
    (GraphBatch([], [calls("b", "c", ref="src/b.py#L9@c2"), calls("c", "a")]), {}),
    (GraphBatch([svc("d")], [calls("d", "a"), calls("a", "d")]), {}),
    (GraphBatch([]), {"deletes": ["service:c"]}),
    (GraphBatch([], [calls("a", "c")]), {"refused": True}),
    (GraphBatch([svc("c", tier="gold")], [calls("a", "c"), calls("c", "pre")]), {}),
    (GraphBatch([], [calls("a", "b"), calls("c", "a"), calls("pre", "d")]), {}),
]


def run_steps(writer: GraphWriter, tenant: str, session_per_commit: bool,
              first_in_session: bool = False) -> list[dict[str, Any]]:
    """Each step's CommitResult counts (``refused`` when refused), in a session per commit
    or all in one session. A first snapshot (one node) is written before, in a session of
    its own, or (``first_in_session``) as the session's first commit: the session then
    knows the tenant whole."""
    first = GraphBatch([svc("pre")])
    if not first_in_session:
        writer.commit(first, source="before", tenant=tenant)
    out: list[dict[str, Any]] = []

    def commit(session: Any, batch: GraphBatch, options: dict[str, Any]) -> None:
        opts = {k: v for k, v in options.items() if k != "refused"}
        if options.get("refused"):
            with pytest.raises(ValidationFailed):
                session.commit(batch, source="s", tenant=tenant, **opts)
            out.append({"refused": True})
            return
        result = session.commit(batch, source="s", tenant=tenant, **opts)
        out.append(dict(result.counts or {}))

    if session_per_commit:
        for batch, options in STEPS:
            with writer.session(pipelined=True) as session:
                commit(session, batch, options)
    else:
        with writer.session(pipelined=True) as session:
            if first_in_session:
                session.commit(first, source="before", tenant=tenant)
                assert session.memory.tenants[tenant].complete
            for batch, options in STEPS:
                commit(session, batch, options)
                if options.get("refused"):  # a refused commit: the tenant is read again
                    assert tenant not in session.memory.tenants
    return out


def change_log(pg: psycopg.Connection[Any], tenant: str) -> list[tuple[Any, ...]]:
    """The tenant's change log, snapshots numbered from 0 (so two tenants compare)."""
    versions = snapshot_versions(pg, tenant)
    rows = pg.execute(
        "SELECT snapshot_version, element_kind, element_id, op, after FROM change_log "
        "WHERE tenant_id = %s ORDER BY snapshot_version, element_kind, element_id, op",
        (tenant,)).fetchall()
    return [(versions.index(v), kind, element, op, _plain(after))
            for v, kind, element, op, after in rows]


def _plain(after: Any) -> Any:
    if not isinstance(after, dict):
        return after
    return {k: v for k, v in after.items() if k not in ("valid_from_ts", "valid_at")}


def test_one_session_writes_what_one_session_per_commit_writes(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any],
    tenants: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: Counter[str] = Counter()
    read = GraphWriter._read

    def counted(self: GraphWriter, name: str, ctx: dict[str, Any], **params: Any
                ) -> list[dict[str, Any]]:
        reads[f"{params.get('tenant')} {name}"] += len(params.get("rows")
                                                      or params.get("ceids") or [])
        return read(self, name, ctx, **params)

    monkeypatch.setattr(GraphWriter, "_read", counted)
    each, one = tenants
    assert run_steps(writer, each, session_per_commit=True) == run_steps(
        writer, one, session_per_commit=False)
    assert change_log(pg, each) == change_log(pg, one)
    for tenant in (each, one):
        for version in snapshot_versions(pg, tenant):
            assert_change_log_matches_graph(driver, pg, tenant, version)
    # the session read fewer edges and edge ends: those it had created or found itself
    for template in ("graph/live_edges", "graph/live_ceids"):
        assert reads[f"{one} {template}"] < reads[f"{each} {template}"], (template, reads)


def test_a_session_that_began_with_an_empty_tenant_reads_none_of_its_own_writes(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any],
    tenants: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    each, one = tenants
    expected = run_steps(writer, each, session_per_commit=True)
    reads: Counter[str] = Counter()
    read = GraphWriter._read

    def counted(self: GraphWriter, name: str, ctx: dict[str, Any], **params: Any
                ) -> list[dict[str, Any]]:
        if params.get("tenant") == one:
            reads[name] += len(params.get("rows") or params.get("ceids") or [])
        return read(self, name, ctx, **params)

    monkeypatch.setattr(GraphWriter, "_read", counted)
    assert run_steps(writer, one, session_per_commit=False, first_in_session=True) == expected
    assert change_log(pg, one) == change_log(pg, each)
    for version in snapshot_versions(pg, one):
        assert_change_log_matches_graph(driver, pg, one, version)
    # read: the restated edges and nodes it made, the node it closed, and after the refused
    # commit (which ends what it knew) what the next commits name
    assert reads["graph/live_edges"] < 8 and reads["graph/live_nodes"] < 6, reads


def test_a_failed_write_makes_the_session_forget_the_tenant(
    writer: GraphWriter, pg: psycopg.Connection[Any], tenants: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant = tenants[0]
    with writer.session() as session:
        session.commit(GraphBatch([svc("a"), svc("b")]), source="s", tenant=tenant)
        assert set(session.memory.tenants[tenant].born) == {"service:a", "service:b"}

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("Neo4j went away")

        with monkeypatch.context() as patch:
            patch.setattr(GraphWriter, "_write_neo4j", broken)
            with pytest.raises(RuntimeError):
                session.commit(GraphBatch([], [calls("a", "b")]), source="s", tenant=tenant)
        assert tenant not in session.memory.tenants
        # the next commit reads what it needs again, and finds the edge absent
        result = session.commit(GraphBatch([], [calls("a", "b")]), source="s", tenant=tenant)
        assert (result.counts or {}).get("edges_added") == 1
    assert len(snapshot_versions(pg, tenant)) == 2


def test_memory_handed_to_the_next_session_is_kept_only_when_nobody_wrote_between(
    writer: GraphWriter, tenants: tuple[str, str],
) -> None:
    mine, other = tenants
    memory = SessionMemory()
    with writer.session(memory=memory) as session:
        session.commit(GraphBatch([svc("a"), svc("b")]), source="s", tenant=mine)
        assert memory.tenants[mine].complete  # it had no node: known whole
    with writer.session(memory=memory) as session:  # nobody wrote in between: kept
        assert set(memory.tenants[mine].born) == {"service:a", "service:b"}
        session.commit(GraphBatch([], [calls("a", "b")]), source="s", tenant=mine)
    assert memory.tenants[mine].made
    writer.commit(GraphBatch([svc("x")]), source="s", tenant=other)  # another writer
    with writer.session(memory=memory) as session:
        assert memory.tenants == {}  # forgotten: the graph may have changed under it
        result = session.commit(GraphBatch([], [calls("a", "b")]), source="s", tenant=mine)
        assert not (result.counts or {}).get("edges_added")  # read again: already there
        assert not memory.tenants[mine].complete


def test_memory_that_saw_no_snapshot_is_not_handed_on(
    writer: GraphWriter, tenants: tuple[str, str],
) -> None:
    """A session whose commits to a tenant all changed nothing began a memory of it (empty:
    known whole) but committed no version: nothing proves that the next session follows it."""
    mine, _ = tenants
    memory = SessionMemory()
    with writer.session(memory=memory) as session:
        assert session.commit(GraphBatch([]), source="s", tenant=mine).snapshot_version is None
    writer.commit(GraphBatch([svc("a"), svc("b")], [calls("a", "b")]), source="s",
                  tenant=mine)  # another writer, in between
    with writer.session(memory=memory) as session:
        result = session.commit(GraphBatch([], [calls("a", "b")]), source="s", tenant=mine)
        assert not (result.counts or {}).get("edges_added")  # read: already there


def test_a_batch_restated_in_a_new_session_changes_nothing_and_copies_no_edge(
    writer: GraphWriter, driver: Driver, tenants: tuple[str, str],
) -> None:
    """A fresh memory of a tenant that has data knows nothing of it: a batch written before
    and stated again (as ``substrate up`` restates the demo's organisation file on every
    start) is read, found unchanged, and written nowhere, in one session or several."""
    tenant = tenants[0]
    batch = GraphBatch([svc("a"), svc("b"), svc("c")],
                       [calls("a", "b"), calls("b", "c"), calls("c", "a", proto="grpc")])
    first = writer.commit(batch, source="org", tenant=tenant)
    assert (first.counts or {}).get("edges_added") == 3
    with writer.session(pipelined=True) as session:
        again = [session.commit(batch, source="org", tenant=tenant) for _ in range(2)]
    assert [r.snapshot_version for r in again] == [None, None]
    assert writer.commit(batch, source="org", tenant=tenant).snapshot_version is None
    copies, _, _ = driver.execute_query(
        "MATCH (:Entity {tenant_id: $tenant})-[r]->() WHERE r.valid_to_v IS NULL "
        "RETURN r.eid AS eid, count(*) AS n", tenant=tenant)
    assert sorted((r["eid"].split("@")[0], r["n"]) for r in copies) == [
        ("service:a-[CALLS]->service:b", 1), ("service:b-[CALLS]->service:c", 1),
        ("service:c-[CALLS]->service:a", 1)]
