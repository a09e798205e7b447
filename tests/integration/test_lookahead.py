"""A pipelined write session prepares the next batch while this one's Neo4j transaction
commits (``substrate/graph/lookahead.py``): the same commits write the same snapshots as one
session per commit; a commit that fails after the preparation started drops it and the
tenant's memory; a transaction the driver runs again never hands on what it prepared."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from neo4j import Driver
from neo4j.exceptions import SessionExpired

from substrate.errors import ValidationFailed
from substrate.graph.records import GraphBatch
from substrate.graph.writer import GraphWriter, WriteSession
from tests.integration.test_session_memory import STEPS, calls, change_log, run_steps, svc
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    live_edge,
    snapshot_versions,
)

pytestmark = pytest.mark.integration


def _options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "refused"}


def run_ahead(writer: GraphWriter, tenant: str) -> tuple[list[dict[str, Any]], int]:
    """``STEPS`` in one pipelined session, each next step announced before its predecessor
    commits; each step's counts (``refused`` when refused) and how many were prepared
    ahead."""
    writer.commit(GraphBatch([svc("pre")]), source="before", tenant=tenant)
    out: list[dict[str, Any]] = []
    with writer.session(pipelined=True) as session:
        for k, (batch, options) in enumerate(STEPS):
            if k + 1 < len(STEPS):
                following, next_options = STEPS[k + 1]
                session.ahead(batch, following, source="s", tenant=tenant,
                              **_options(next_options))
            if options.get("refused"):
                with pytest.raises(ValidationFailed):
                    session.commit(batch, source="s", tenant=tenant, **_options(options))
                out.append({"refused": True})
                continue
            result = session.commit(batch, source="s", tenant=tenant, **_options(options))
            out.append(dict(result.counts or {}))
        used = session.ahead_used
    return out, used


def test_batches_prepared_ahead_write_what_one_session_per_commit_writes(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any],
    tenants: tuple[str, str],
) -> None:
    each, one = tenants
    expected = run_steps(writer, each, session_per_commit=True)
    got, used = run_ahead(writer, one)
    assert got == expected
    assert change_log(pg, one) == change_log(pg, each)
    for version in snapshot_versions(pg, one):
        assert_change_log_matches_graph(driver, pg, one, version)
    # every step after one that wrote was prepared ahead, the refused one included (its
    # preparation read the node closed just before, once that commit was through)
    wrote = [k for k, counts in enumerate(expected[:-1]) if not counts.get("refused")]
    assert used == len(wrote), (used, expected)


def test_a_commit_failing_after_the_next_batch_was_prepared_drops_it(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any],
    tenants: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant = tenants[0]
    first = GraphBatch([svc("a"), svc("b")])
    failing = GraphBatch([], [calls("a", "b")])
    following = GraphBatch([svc("c")], [calls("b", "c")])
    start_next = WriteSession._start_next

    def then_fail(self: WriteSession, *args: Any) -> None:
        start_next(self, *args)
        raise RuntimeError("the connection dropped before COMMIT")

    with writer.session(pipelined=True) as session:
        session.commit(first, source="s", tenant=tenant)
        session.ahead(failing, following, source="s", tenant=tenant)
        with monkeypatch.context() as patch:
            patch.setattr(WriteSession, "_start_next", then_fail)
            with pytest.raises(RuntimeError, match="before COMMIT"):
                session.commit(failing, source="s", tenant=tenant)
        assert tenant not in session.memory.tenants
        result = session.commit(following, source="s", tenant=tenant)
        assert session.ahead_used == 0
        assert (result.counts or {}).get("edges_added") == 1
    assert len(snapshot_versions(pg, tenant)) == 2
    assert live_edge(driver, tenant, "service:a-[CALLS]->service:b@s") is None
    assert live_edge(driver, tenant, "service:b-[CALLS]->service:c@s") is not None
    for version in snapshot_versions(pg, tenant):
        assert_change_log_matches_graph(driver, pg, tenant, version)


def test_a_transaction_run_again_hands_on_nothing_it_prepared(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any],
    tenants: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant = tenants[0]
    first = GraphBatch([svc("a"), svc("b")])
    retried = GraphBatch([svc("c")], [calls("a", "c")])
    following = GraphBatch([], [calls("c", "b"), calls("a", "c")])
    start_next = WriteSession._start_next
    runs: list[int] = []

    def expire_once(self: WriteSession, *args: Any) -> None:
        start_next(self, *args)
        runs.append(1)
        if len(runs) == 1:  # the driver runs the transaction function again
            raise SessionExpired("routing table went stale")

    with writer.session(pipelined=True) as session:
        session.commit(first, source="s", tenant=tenant)
        session.ahead(retried, following, source="s", tenant=tenant)
        monkeypatch.setattr(WriteSession, "_start_next", expire_once)
        session.commit(retried, source="s", tenant=tenant)
        assert len(runs) == 2
        assert tenant not in session.memory.tenants  # element ids of the rolled-back run
        result = session.commit(following, source="s", tenant=tenant)
        assert session.ahead_used == 0
    assert result.counts == {"nodes_added": 0, "nodes_updated": 0, "nodes_closed": 0,
                             "edges_added": 1, "edges_closed": 0}
    assert len(snapshot_versions(pg, tenant)) == 3
    for version in snapshot_versions(pg, tenant):
        assert_change_log_matches_graph(driver, pg, tenant, version)
