"""What the real stores hold for one test tenant: snapshots, change log, Neo4j elements, and
the ``graph.updated`` events a durable JetStream consumer received."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from typing import Any

import nats
import psycopg
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import ConsumerConfig, DeliverPolicy
from neo4j import Driver

from substrate.graph import events
from substrate.settings import Settings


def new_tenant(purpose: str) -> str:
    return f"t-{purpose}-{uuid.uuid4().hex[:8]}"


def drop_tenant_graph(driver: Driver, tenant: str) -> None:
    """Delete the tenant's Neo4j nodes (its PostgreSQL history stays)."""
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)


def snapshot_versions(pg: psycopg.Connection[Any], tenant: str) -> list[int]:
    rows = pg.execute(
        "SELECT version FROM snapshots WHERE tenant_id = %s ORDER BY committed_at, version",
        (tenant,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def element_counts(driver: Driver, tenant: str) -> tuple[int, int]:
    """(nodes, relationships) of the tenant, live or closed."""
    nodes, _, _ = driver.execute_query(
        "MATCH (n {tenant_id: $t}) RETURN count(n) AS c", t=tenant)
    rels, _, _ = driver.execute_query(
        "MATCH ()-[r {tenant_id: $t}]->() RETURN count(r) AS c", t=tenant)
    return int(nodes[0]["c"]), int(rels[0]["c"])


def live_edge(driver: Driver, tenant: str, eid: str) -> dict[str, Any] | None:
    rows, _, _ = driver.execute_query(
        "MATCH (a)-[r {eid: $eid}]->(b) WHERE r.tenant_id = $t AND r.valid_to_v IS NULL "
        "RETURN properties(r) AS p, type(r) AS type, a.ceid AS src, b.ceid AS dst",
        t=tenant, eid=eid)
    if not rows:
        return None
    assert len(rows) == 1, f"two live versions of {eid}"
    return {**rows[0]["p"], "type": rows[0]["type"], "src": rows[0]["src"],
            "dst": rows[0]["dst"]}


def edge_versions(driver: Driver, tenant: str, eid: str) -> list[tuple[int, int | None]]:
    """``(valid_from_v, valid_to_v)`` of every version of an edge, oldest first."""
    rows, _, _ = driver.execute_query(
        "MATCH ()-[r {eid: $eid}]->() WHERE r.tenant_id = $t "
        "RETURN r.valid_from_v AS f, r.valid_to_v AS to ORDER BY f", t=tenant, eid=eid)
    return [(int(r["f"]), None if r["to"] is None else int(r["to"])) for r in rows]


def node_state(driver: Driver, tenant: str, ceid: str) -> dict[str, Any] | None:
    rows, _, _ = driver.execute_query(
        "MATCH (n {tenant_id: $t, ceid: $c}) "
        "RETURN apoc.map.removeKeys(properties(n), ['embedding']) AS p, labels(n) AS labels",
        t=tenant, c=ceid)
    return None if not rows else {**rows[0]["p"], "labels": rows[0]["labels"]}


def _change_rows(pg: psycopg.Connection[Any], tenant: str, version: int
                 ) -> list[tuple[str, str, str, Any, Any]]:
    return [tuple(r) for r in pg.execute(
        "SELECT element_kind, element_id, op, before, after FROM change_log "
        "WHERE snapshot_version = %s AND tenant_id = %s", (version, tenant)).fetchall()]


def _graph_at(driver: Driver, tenant: str, version: int) -> dict[str, Any]:
    opened, _, _ = driver.execute_query(
        "MATCH (a)-[r]->(b) WHERE r.tenant_id = $t AND r.valid_from_v = $v "
        "RETURN r.eid AS eid, type(r) AS type, a.ceid AS src, b.ceid AS dst, "
        "properties(r) AS p", t=tenant, v=version)
    closed, _, _ = driver.execute_query(
        "MATCH ()-[r]->() WHERE r.tenant_id = $t AND r.valid_to_v = $v RETURN r.eid AS eid",
        t=tenant, v=version)
    nodes, _, _ = driver.execute_query(
        "MATCH (n {tenant_id: $t}) WHERE $v IN n.iv_from OR $v IN n.iv_to "
        "RETURN n.ceid AS ceid, $v IN n.iv_from AS opened, $v IN n.iv_to AS closed",
        t=tenant, v=version)
    return {"opened": {r["eid"]: r.data() for r in opened},
            "closed": {r["eid"] for r in closed},
            "nodes_opened": {r["ceid"] for r in nodes if r["opened"]},
            "nodes_closed": {r["ceid"] for r in nodes if r["closed"]}}


def _changed_later(pg: psycopg.Connection[Any], tenant: str, element: str, version: int
                   ) -> bool:
    row = pg.execute("SELECT count(*) FROM change_log WHERE tenant_id = %s AND element_id = %s "
                     "AND snapshot_version > %s", (tenant, element, version)).fetchone()
    return bool(row and row[0])


def assert_change_log_matches_graph(
    driver: Driver, pg: psycopg.Connection[Any], tenant: str, version: int
) -> list[tuple[str, str, str, Any, Any]]:
    """Every change-log row of ``version`` is in Neo4j with that version, and every element
    Neo4j opened or closed at ``version`` has its row; a node's logged properties are its
    current ones unless a later snapshot changed it. Returns the rows."""
    rows = _change_rows(pg, tenant, version)
    graph = _graph_at(driver, tenant, version)
    edges = [r for r in rows if r[0] == "edge"]
    assert {r[1] for r in edges if r[2] in ("add", "update")} == set(graph["opened"])
    assert {r[1] for r in edges if r[2] in ("close", "update")} == graph["closed"]
    for _, eid, op, _, after in edges:
        if op == "close":
            continue
        held = graph["opened"][eid]
        assert (held["type"], held["src"], held["dst"]) == (
            after["type"], after["src"], after["dst"])
        for key in ("evidence_ref", "confidence", "weight", "source"):
            assert held["p"][key] == after[key], (eid, key)
        assert {k: held["p"][k] for k in after["props"]} == after["props"]
    nodes = [r for r in rows if r[0] == "node"]
    assert {r[1] for r in nodes if r[2] == "add"} == graph["nodes_opened"]
    assert {r[1] for r in nodes if r[2] == "close"} == graph["nodes_closed"]
    for _, ceid, op, _, after in nodes:
        if op != "close" and after and "props" in after and not _changed_later(
                pg, tenant, ceid, version):
            held_node = node_state(driver, tenant, ceid)
            assert held_node is not None
            assert {k: held_node.get(k) for k in after["props"]} == after["props"], ceid
    return rows


# --- graph.updated on JetStream --------------------------------------------------------------
def create_consumer(settings: Settings, durable: str) -> None:
    """A durable pull consumer on GRAPH / graph.updated that starts with the next message."""

    async def run() -> None:
        nc = await nats.connect(settings.nats_url, connect_timeout=5)
        try:
            js = nc.jetstream()
            await events.ensure_stream(js)
            await js.add_consumer(events.STREAM, ConsumerConfig(
                durable_name=durable, deliver_policy=DeliverPolicy.NEW,
                filter_subject=events.SUBJECT, ack_wait=60))
        finally:
            await nc.close()

    asyncio.run(run())


def drain_events(settings: Settings, durable: str, tenant: str, expect: set[int],
                 rounds: int = 30) -> list[dict[str, Any]]:
    """The tenant's events the consumer has, in delivery order: fetched until every version
    of ``expect`` was seen and the consumer had nothing more."""

    async def run() -> list[dict[str, Any]]:
        nc = await nats.connect(settings.nats_url, connect_timeout=5)
        got: list[dict[str, Any]] = []
        try:
            sub = await nc.jetstream().pull_subscribe_bind(durable, stream=events.STREAM)
            for _ in range(rounds):
                try:
                    msgs = await sub.fetch(batch=256, timeout=1)
                except (TimeoutError, NatsTimeout):  # nats-py raises either
                    if expect <= {e["snapshot_version"] for e in got}:
                        break
                    continue
                for msg in msgs:
                    await msg.ack()
                    event = json.loads(msg.data)
                    if event["tenant_id"] == tenant:
                        got.append(event)
        finally:
            await nc.close()
        return got

    return asyncio.run(run())


def delete_consumer(settings: Settings, durable: str) -> None:
    async def run() -> None:
        nc = await nats.connect(settings.nats_url, connect_timeout=5)
        try:
            await nc.jetstream().delete_consumer(events.STREAM, durable)
        finally:
            await nc.close()

    asyncio.run(run())


def versions_once(events_seen: list[dict[str, Any]]) -> dict[int, int]:
    return dict(Counter(e["snapshot_version"] for e in events_seen))
