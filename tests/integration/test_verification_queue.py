"""The verification queue against the real stack: low-confidence items wait in PostgreSQL, not in
the graph, and are listed, approved (written with their evidence) or rejected by the CLI and by
the running gateway's HTTP endpoints."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from neo4j import Driver

from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import PROJECT_ROOT, Settings
from tests.support.gateway_client import admin_key, gateway
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    drop_tenant_graph,
    live_edge,
    new_tenant,
    node_state,
    snapshot_versions,
)

pytestmark = pytest.mark.integration
SOURCE = "tracing"
APPROVED = f"review:{SOURCE}"  # what a reviewer approved is written under its own source


def svc(name: str, confidence: float = 1.0) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name}, confidence=confidence)


def calls(a: str, b: str, confidence: float = 1.0) -> EdgeRecord:
    return EdgeRecord("CALLS", f"service:{a}", f"service:{b}", f"trace:{a}-{b}/span-7",
                      confidence)


def key(a: str, b: str, source: str = SOURCE) -> str:
    return f"service:{a}-[CALLS]->service:{b}@{source}"


@pytest.fixture(scope="module")
def tenant(stack: Settings, driver: Driver) -> Iterator[str]:
    name = new_tenant("queue")
    GraphWriter(stack, driver).commit(
        GraphBatch([svc(n) for n in ("web", "cart", "orders", "stock")]), source="seed",
        tenant=name)
    yield name
    drop_tenant_graph(driver, name)


@pytest.fixture(scope="module")
def writer(stack: Settings, driver: Driver) -> GraphWriter:
    return GraphWriter(stack, driver)


@pytest.fixture(scope="module")
def api(stack: Settings, tenant: str) -> Iterator[httpx.Client]:
    with gateway(stack, headers={"X-Tenant": tenant}, timeout=120) as client:
        yield client


def pending(pg: psycopg.Connection[Any], tenant: str) -> dict[str, dict[str, Any]]:
    """Pending items by the record's ceid or edge eid."""
    rows = pg.execute("SELECT id, kind, record, reason FROM verification_queue "
                      "WHERE tenant_id = %s AND status = 'pending'", (tenant,)).fetchall()
    out = {}
    for item_id, kind, record, reason in rows:
        name = record["ceid"] if kind == "node" else EdgeRecord(
            record["type"], record["src"], record["dst"], "").eid
        out[name] = {"id": item_id, "kind": kind, "record": record, "reason": reason}
    return out


def cli(tenant: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SUBSTRATE_TENANT": tenant}
    return subprocess.run([sys.executable, "-m", "substrate.cli", *args], cwd=PROJECT_ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def audit_rows(pg: psycopg.Connection[Any], tenant: str, target: str) -> list[tuple[Any, ...]]:
    return pg.execute("SELECT actor, action, detail FROM audit_log WHERE tenant_id = %s "
                      "AND target = %s ORDER BY id", (tenant, target)).fetchall()


def test_low_confidence_edge_goes_to_postgres_not_the_graph(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    batch = GraphBatch([], [calls("web", "cart", 0.8), calls("cart", "orders", 0.99)])
    result = writer.commit(batch, source=SOURCE, tenant=tenant)
    assert result.queued == 1 and result.counts["edges_added"] == 1
    assert live_edge(driver, tenant, key("web", "cart")) is None
    assert live_edge(driver, tenant, key("cart", "orders")) is not None
    item = pending(pg, tenant)["service:web-[CALLS]->service:cart"]
    assert item["reason"] == "confidence 0.8 < 0.92"
    assert item["record"]["evidence_ref"] == "trace:web-cart/span-7"
    versions = snapshot_versions(pg, tenant)
    again = writer.commit(batch, source=SOURCE, tenant=tenant)  # not queued twice
    assert (again.snapshot_version, again.queued) == (None, 0)
    assert snapshot_versions(pg, tenant) == versions


def test_the_threshold_is_configurable(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    lenient = GraphWriter(dataclasses.replace(stack, verify_threshold=0.75), driver)
    result = lenient.commit(GraphBatch([], [calls("orders", "stock", 0.8)]), source=SOURCE,
                            tenant=tenant)
    assert result.queued == 0
    edge = live_edge(driver, tenant, key("orders", "stock"))
    assert edge is not None and edge["confidence"] == pytest.approx(0.8)


def test_cli_lists_approves_and_rejects(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str
) -> None:
    writer.commit(GraphBatch([], [calls("web", "cart", 0.8), calls("web", "stock", 0.6)]),
                  source=SOURCE, tenant=tenant)
    items = pending(pg, tenant)
    listed = cli(tenant, "queue", "list")
    assert listed.returncode == 0, listed.stderr
    assert {i["id"] for i in json.loads(listed.stdout)} == {i["id"] for i in items.values()}
    approve_id = items["service:web-[CALLS]->service:cart"]["id"]
    reject_id = items["service:web-[CALLS]->service:stock"]["id"]

    done = cli(tenant, "queue", "approve", str(approve_id), "--actor", "alice")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    version = out["snapshot_version"]
    assert out["status"] == "approved" and isinstance(version, int)
    edge = live_edge(driver, tenant, key("web", "cart", APPROVED))
    assert edge is not None
    assert (edge["evidence_ref"], edge["confidence"], edge["valid_from_v"]) == (
        "trace:web-cart/span-7", pytest.approx(0.8), version)
    assert_change_log_matches_graph(driver, pg, tenant, version)
    assert audit_rows(pg, tenant, str(approve_id))[0][:2] == ("alice", "verification.approve")

    no = cli(tenant, "queue", "reject", str(reject_id), "--actor", "bob")
    assert no.returncode == 0 and json.loads(no.stdout)["status"] == "rejected"
    assert live_edge(driver, tenant, key("web", "stock", APPROVED)) is None
    rejected = json.loads(cli(tenant, "queue", "list", "--status", "rejected").stdout)
    assert [(r["id"], r["decided_by"]) for r in rejected] == [(reject_id, "bob")]

    twice = cli(tenant, "queue", "approve", str(approve_id))
    assert twice.returncode == 1 and f"item {approve_id} is already approved" in twice.stderr

    # the proposing source runs again (sync): decided items are not queued again, and the
    # approved edge, written under the reviewer's source, stays
    rerun = writer.commit(GraphBatch([], [calls("web", "cart", 0.8), calls("web", "stock", 0.6),
                                          calls("cart", "orders", 0.99)]),
                          source=SOURCE, tenant=tenant, mode="sync")
    assert rerun.queued == 0 and pending(pg, tenant) == {}
    assert live_edge(driver, tenant, key("web", "cart", APPROVED)) is not None


def test_http_lists_approves_and_rejects(
    writer: GraphWriter, driver: Driver, pg: psycopg.Connection[Any], tenant: str,
    api: httpx.Client,
) -> None:
    batch = GraphBatch([svc("ledger", confidence=0.5)],
                       [calls("orders", "ledger"), calls("stock", "web", 0.7)])
    assert writer.commit(batch, source=SOURCE, tenant=tenant).queued == 3
    items = pending(pg, tenant)
    node, edge = items["service:ledger"], items["service:orders-[CALLS]->service:ledger"]
    assert edge["reason"] == "an endpoint is waiting for verification"

    listed = api.get("/queue", params={"status": "pending", "limit": 50})
    assert listed.status_code == 200, listed.text
    assert {i["id"] for i in listed.json()["items"]} == {i["id"] for i in items.values()}
    assert len(api.get("/queue", params={"limit": 1}).json()["items"]) == 1

    # its endpoint is not in the graph yet
    early = api.post(f"/queue/{edge['id']}/approve", json={})
    assert early.status_code == 422 and early.json()["error"]["code"] == "validation_failed"
    assert edge["id"] in {i["id"] for i in api.get("/queue").json()["items"]}

    first = api.post(f"/queue/{node['id']}/approve", json={"comment": "seen in traces"})
    assert first.status_code == 200, first.text
    ledger = node_state(driver, tenant, "service:ledger")
    assert ledger is not None and ledger["valid_from_v"] == first.json()["snapshot_version"]
    second = api.post(f"/queue/{edge['id']}/approve", json={})
    assert second.status_code == 200, second.text
    written = live_edge(driver, tenant, key("orders", "ledger", APPROVED))
    assert written is not None and written["evidence_ref"] == "trace:orders-ledger/span-7"

    other = items["service:stock-[CALLS]->service:web"]["id"]
    assert api.post(f"/queue/{other}/reject", json={}).status_code == 200
    assert live_edge(driver, tenant, key("stock", "web", APPROVED)) is None
    approved = {i["id"]: i["decided_by"]
                for i in api.get("/queue", params={"status": "approved"}).json()["items"]}
    # decisions are recorded under the authenticated principal (the admin key), whatever
    # the body says
    reviewer = f"key:{admin_key(Settings.from_env()).split('_')[1]}"
    assert approved[node["id"]] == reviewer and approved[edge["id"]] == reviewer


def test_http_errors_have_the_standard_body(
    pg: psycopg.Connection[Any], tenant: str, api: httpx.Client
) -> None:
    decided = pg.execute("SELECT id, status FROM verification_queue WHERE tenant_id = %s "
                         "AND status <> 'pending' LIMIT 1", (tenant,)).fetchone()
    assert decided is not None
    cases = [
        (api.get("/queue", params={"status": "maybe"}), 400),
        (api.get("/queue", params={"limit": 0}), 400),
        (api.get("/queue", params={"limit": "ten"}), 400),
        (api.post("/queue/999999999/approve", json={}), 404),
        (api.post("/queue/999999999/reject", json={}), 404),
        (api.post("/queue/abc/approve", json={}), 400),
        (api.post(f"/queue/{decided[0]}/reject", json={}), 400),
        (api.post(f"/queue/{decided[0]}/approve", json={}), 400),
        (api.post("/queue/1/reject", content=b"[1]",
                  headers={"Content-Type": "application/json"}), 400),
        (api.post("/queue/1/reject", json={"actor": "mallory"}), 400),
        (api.post("/queue/1/reject", data={"comment": "x"}), 415),
        (api.post("/queue/1/reject"), 415),
    ]
    for response, status in cases:
        assert response.status_code == status, response.text
        body = response.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "detail"}
    other = api.post(f"/queue/{decided[0]}/approve", json={}, headers={"X-Tenant": "t-nobody"})
    assert other.status_code == 404  # another tenant's item is not visible


def test_openapi_documents_the_queue_routes(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    assert set(paths["/queue"]) == {"get"}
    assert set(paths["/queue/{item_id}/approve"]) == set(paths["/queue/{item_id}/reject"]) == {
        "post"}
