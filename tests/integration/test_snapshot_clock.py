"""The gateway's in-process snapshot clock (issue 12, thin hot path): an unpinned read is
scoped from memory, moved forward by ``graph.updated``; a request after a write's event sees
the new snapshot; without NATS the scope comes from PostgreSQL, so writes are still seen.

Cross-process read-your-writes (issue 14, Neo4j routing): the event carries the Neo4j
bookmarks of the write's transaction and the gateway's next read of that tenant runs with
them; /cache/stats ``snapshot_clock.bookmarked_reads`` counts reads Neo4j accepted with a
snapshot's bookmarks (and a digest of the last ones) and those whose bookmarks it refused
(Neo4j Community checks them too: a malformed one is refused, the read must still answer).

Writes go through the real write path (GraphWriter: Neo4j, PostgreSQL snapshot and change
log, the outbox's event on the stack's NATS) into a throw-away tenant; reads through the
running gateway (``X-Tenant``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nats
import psycopg
import pytest
from neo4j import Driver

from substrate.graph.events import SUBJECT
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.bookmarks import fingerprint
from substrate.settings import Settings
from tests.support.gateway_client import gateway as stack_gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant
from tests.support.local_procs import free_port, gateway

pytestmark = pytest.mark.integration


def _calls(src: str, dst: str) -> GraphBatch:
    nodes = [NodeRecord(f"service:{n}", "Service", {"name": n}) for n in (src, dst)]
    edge = EdgeRecord("CALLS", f"service:{src}", f"service:{dst}",
                      f"test://clock/{src}-{dst}#L1", source="test")
    return GraphBatch(nodes, [edge])


def _commit(writer: GraphWriter, tenant: str, src: str, dst: str) -> int:
    result = writer.commit(_calls(src, dst), source="test", tenant=tenant)
    assert result.snapshot_version is not None
    return result.snapshot_version


def _targets(body: dict[str, Any]) -> set[str]:
    return {row["target"]["ceid"] for row in body["dependencies"]}


def _clock(client: httpx.Client) -> dict[str, Any]:
    clock: dict[str, Any] = client.get("/cache/stats").json()["snapshot_clock"]
    return clock


def _live(client: httpx.Client) -> bool:
    """Whether the gateway's clock is live (subscribed and refreshed), within 20 s."""
    deadline = time.monotonic() + 20
    while not (live := bool(_clock(client)["live"])) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live


def _write_and_see_event(stack: Settings, writer: GraphWriter, tenant: str, src: str,
                         dst: str) -> dict[str, Any]:
    """Commit through the write path while subscribed to ``graph.updated``; return the
    commit's event once it was delivered (to this subscriber, and so to every other one)."""

    async def run() -> dict[str, Any]:
        nc = await nats.connect(stack.nats_url, connect_timeout=2)
        seen: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def on_event(msg: Any) -> None:
            await seen.put(json.loads(msg.data))

        try:
            await nc.subscribe(SUBJECT, cb=on_event)
            await nc.flush()
            version = await asyncio.to_thread(_commit, writer, tenant, src, dst)
            while True:
                event = await asyncio.wait_for(seen.get(), timeout=20)
                if event["tenant_id"] == tenant and event["snapshot_version"] == version:
                    return event
        finally:
            await nc.close()

    return asyncio.run(run())


@pytest.fixture(scope="module")
def tenant(stack: Settings, driver: Driver) -> Iterator[str]:
    name = new_tenant("clock")
    _commit(GraphWriter(stack, driver), name, "alpha", "beta")
    yield name
    drop_tenant_graph(driver, name)


@pytest.fixture
def client(stack: Settings, tenant: str) -> Iterator[httpx.Client]:
    with stack_gateway(stack, {"X-Tenant": tenant}) as c:
        yield c


def test_request_after_a_writes_event_sees_the_new_snapshot(
    client: httpx.Client, stack: Settings, driver: Driver, tenant: str
) -> None:
    assert _live(client), _clock(client)
    first = client.get("/dependencies/alpha")  # the first read of a tenant may ask PostgreSQL
    assert first.status_code == 200, first.text
    assert _targets(first.json()) == {"service:beta"}
    cached = client.get("/dependencies/alpha").json()
    assert cached["cache"]["hit"] is True

    writer = GraphWriter(stack, driver)
    callees = ("gamma", "delta", "epsilon")
    for n, callee in enumerate(callees):
        before = _clock(client)
        version = _write_and_see_event(stack, writer, tenant, "alpha", callee)[
            "snapshot_version"]
        body = client.get("/dependencies/alpha").json()  # right after the event, no retry
        after = _clock(client)
        assert body["snapshot_version"] >= version
        assert _targets(body) == {"service:beta", *(f"service:{c}" for c in callees[: n + 1])}
        assert body["cache"]["hit"] is False  # the cached answer of the older snapshot is not
        # scoped from memory: served grows, PostgreSQL was not asked
        assert after["served"] > before["served"]
        assert after["fallbacks"] == before["fallbacks"]
        assert after["events"] > before["events"] and after["latest"] >= version


def test_pinned_read_within_the_clock_needs_no_postgres(
    client: httpx.Client, tenant: str
) -> None:
    assert _live(client)
    latest = client.get("/dependencies/alpha").json()["snapshot_version"]
    before = _clock(client)
    body = client.get(f"/dependencies/alpha?snapshot_version={latest}")
    assert body.status_code == 200 and body.json()["snapshot_version"] == latest
    assert _clock(client)["fallbacks"] == before["fallbacks"]
    # a version past the newest one the clock knows is checked in PostgreSQL: 400
    beyond = client.get(f"/dependencies/alpha?snapshot_version={latest + 10_000_000}")
    assert beyond.status_code == 400
    assert beyond.json()["error"]["code"] == "bad_request"
    assert client.get("/dependencies/alpha", headers={"X-Tenant": "t-clock-nobody"}
                      ).status_code == 404


def test_without_nats_the_scope_comes_from_postgres(
    stack: Settings, driver: Driver, tenant: str, tmp_path: Path
) -> None:
    """No NATS: the clock is not live; every read resolves its scope in PostgreSQL, so a
    write is seen at once, with no event."""
    dead = f"nats://127.0.0.1:{free_port()}"
    with gateway(tmp_path, tenant, NATS_URL=dead) as down:
        before = down.get("/dependencies/alpha").json()
        dead_nats = Settings.from_env({**os.environ, "NATS_URL": dead})
        version = _commit(GraphWriter(dead_nats, driver), tenant, "alpha", "zeta")
        body = down.get("/dependencies/alpha").json()
        clock = _clock(down)
    assert "service:zeta" not in _targets(before)
    assert "service:zeta" in _targets(body) and body["snapshot_version"] >= version
    assert clock["live"] is False and clock["served"] == 0 and clock["fallbacks"] >= 1


def _publish(stack: Settings, event: dict[str, Any]) -> None:
    async def run() -> None:
        nc = await nats.connect(stack.nats_url, connect_timeout=2)
        try:
            await nc.publish(SUBJECT, json.dumps(event).encode())
            await nc.flush()
        finally:
            await nc.close()

    asyncio.run(run())


def _wait(client: httpx.Client, ok: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while not ok(clock := _clock(client)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return clock


def test_the_event_carries_the_writes_bookmarks_and_the_next_read_uses_them(
    client: httpx.Client, stack: Settings, driver: Driver, tenant: str
) -> None:
    assert _live(client), _clock(client)
    assert client.get("/dependencies/alpha").status_code == 200  # the tenant is known
    before = _clock(client)
    event = _write_and_see_event(stack, GraphWriter(stack, driver), tenant, "alpha", "eta")
    marks = event["bookmarks"]
    assert marks and all(isinstance(b, str) and b for b in marks), event
    with psycopg.connect(stack.postgres_dsn) as conn:  # recorded with the snapshot row
        row = conn.execute("SELECT neo4j_bookmarks FROM snapshots WHERE version = %s",
                           (event["snapshot_version"],)).fetchone()
    assert row is not None and sorted(row[0]) == sorted(marks)

    body = client.get("/dependencies/alpha").json()
    after = _clock(client)
    assert body["snapshot_version"] >= event["snapshot_version"]
    assert "service:eta" in _targets(body)
    assert after["events_with_bookmarks"] > before["events_with_bookmarks"]
    reads, reads_before = after["bookmarked_reads"], before["bookmarked_reads"]
    assert reads["reads"] > reads_before["reads"]  # Neo4j accepted them
    assert reads["last_fingerprint"] == fingerprint(marks)
    assert reads["refused"] == reads_before["refused"]


def test_a_refused_bookmark_falls_back_to_none_and_is_counted(
    client: httpx.Client, stack: Settings, driver: Driver, tenant: str
) -> None:
    assert _live(client), _clock(client)
    event = _write_and_see_event(stack, GraphWriter(stack, driver), tenant, "alpha", "theta")
    seen = _clock(client)["events"]
    # the same snapshot again, as a broken publisher would send it: its bookmark is garbage
    _publish(stack, {**event, "changed_ids": [], "bookmarks": [f"not-a-bookmark-{tenant}"]})
    before = _wait(client, lambda c: c["events"] > seen)
    body = client.get("/dependencies/alpha")
    after = _clock(client)
    assert body.status_code == 200, body.text  # answered, without the bookmark
    assert "service:theta" in _targets(body.json())
    reads, reads_before = after["bookmarked_reads"], before["bookmarked_reads"]
    assert reads["refused"] == reads_before["refused"] + 1
    assert "InvalidBookmark" in reads["last_refusal"]
    assert reads["reads"] == reads_before["reads"]  # no read ran with it
    # refused once: not offered again (another, uncached read of the same snapshot)
    again = client.get("/ownership/alpha")
    assert again.status_code == 200, again.text
    assert _clock(client)["bookmarked_reads"]["refused"] == reads["refused"]
