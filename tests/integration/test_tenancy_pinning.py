"""Tenant isolation, snapshot pinning, degraded strategies and bad input (issue 4)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from substrate.db import neo4j_driver
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.context import SearchContext, SearchOptions, StrategyResult
from substrate.retrieval.registry import STRATEGIES
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.gateway_client import gateway


def service(name: str) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name})


def calls(a: str, b: str) -> EdgeRecord:
    return EdgeRecord("CALLS", f"service:{a}", f"service:{b}", f"test:{a}-{b}#L1", 1.0)


@pytest.fixture(scope="module")
def tenant_b(stack: Settings) -> Iterator[str]:
    tenant = f"t-iso-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    writer = GraphWriter(stack, driver)
    batch = GraphBatch(nodes=[service("checkout"), service("secret-b"), service("vault-b")],
                       edges=[calls("checkout", "secret-b")])
    writer.commit(batch, source="test", tenant=tenant)
    yield tenant
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)
    driver.close()


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


def deps(api: httpx.Client, tenant: str, **params: Any) -> set[str]:
    r = api.get("/dependencies/checkout", params=params, headers={"X-Tenant": tenant})
    assert r.status_code == 200, r.text
    return {d["target"]["ceid"] for d in r.json()["dependencies"]}


def test_each_tenant_sees_only_its_own_graph(api: httpx.Client, tenant_b: str) -> None:
    assert deps(api, tenant_b) == {"service:secret-b"}
    assert "service:secret-b" not in deps(api, "acme")
    q = {"query": "MATCH (n:Service) RETURN DISTINCT n.tenant_id AS t"}
    rows_b = api.post("/cypher", json=q, headers={"X-Tenant": tenant_b}).json()["rows"]
    rows_a = api.post("/cypher", json=q, headers={"X-Tenant": "acme"}).json()["rows"]
    assert rows_b == [[tenant_b]] and rows_a == [["acme"]]
    leak = api.post("/cypher", json={"query": "MATCH (n {ceid: 'service:secret-b'}) RETURN n"},
                    headers={"X-Tenant": "acme"}).json()
    assert leak["rows"] == []
    body = api.post("/search", json={"query": "What does secret-b depend on?"},
                    headers={"X-Tenant": "acme"}).json()
    assert "service:secret-b" not in str(body)
    assert api.get("/ownership/secret-b", headers={"X-Tenant": "acme"}).status_code == 404


def test_pinned_bundle_is_identical_after_a_later_write(
    api: httpx.Client, tenant_b: str, stack: Settings
) -> None:
    headers = {"X-Tenant": tenant_b}
    first = api.post("/search", json={"query": "What does checkout depend on?"},
                     headers=headers).json()
    pin = first["snapshot_version"]
    driver = neo4j_driver(stack)
    try:
        GraphWriter(stack, driver).commit(GraphBatch(edges=[calls("checkout", "vault-b")]),
                                          source="test", tenant=tenant_b)
    finally:
        driver.close()
    again = api.post("/search", json={"query": "What does checkout depend on?",
                                      "snapshot_version": pin}, headers=headers).json()
    assert again["evidence_bundle"] == first["evidence_bundle"]
    assert again["evidence_bundle"]["bundle_hash"] == first["evidence_bundle"]["bundle_hash"]
    latest = api.post("/search", json={"query": "What does checkout depend on?"},
                      headers=headers).json()
    assert latest["snapshot_version"] > pin
    assert "service:vault-b" in {h["target"] for h in latest["evidence_bundle"]["hops"]}
    assert deps(api, tenant_b) == {"service:secret-b", "service:vault-b"}
    assert deps(api, tenant_b, snapshot_version=pin) == {"service:secret-b"}


def test_a_failing_strategy_degrades_the_answer(stack: Settings) -> None:
    async def boom(ctx: SearchContext) -> StrategyResult:
        raise RuntimeError("strategy exploded")

    async def run() -> dict[str, Any]:
        services = open_services(stack, check_templates=False)
        try:
            read = ReadService(services)
            scope = await read.scope("acme")
            opts = SearchOptions(strategies=("dependencies", "boom"))
            return await read.search("What does checkout depend on?", scope, opts)
        finally:
            await services.aclose()

    STRATEGIES["boom"] = boom
    try:
        body = asyncio.run(run())
    finally:
        del STRATEGIES["boom"]
    assert body["degraded"] == ["boom"]
    assert body["strategies"]["boom"]["status"] == "failed"
    assert "exploded" in body["strategies"]["boom"]["error"]
    assert body["strategies"]["dependencies"]["status"] == "ok"
    assert body["confidence"]["low_confidence_warning"] is True
    assert "service:payment" in body["answer"] or "payment" in body["answer"]


BAD = [
    ("get", "/dependencies/no-such-service", None, 404),
    ("get", "/dependencies/checkout?depth=7", None, 400),
    ("get", "/dependencies/checkout?depth=two", None, 400),
    ("get", "/dependencies/checkout?direction=sideways", None, 400),
    ("get", "/dependencies/checkout?types=LIKES", None, 400),
    ("get", "/dependencies/team:payments", None, 400),
    ("get", "/ownership/checkout?snapshot_version=999999999", None, 400),
    ("get", "/ownership/checkout?at=yesterday-ish", None, 400),
    ("get", "/memory/checkout?limit=0", None, 400),
    ("post", "/search", b"{not json", 400),
    ("post", "/search", b"[1, 2]", 400),
    ("post", "/search", {"query": 42}, 400),
    ("post", "/search", {"query": ""}, 400),
    ("post", "/search", {"query": "x" * 5000}, 400),
    ("post", "/search", {"query": "ok", "options": {"top_k": 500}}, 400),
    ("post", "/search", {"query": "ok", "options": {"bogus": 1}}, 400),
    ("post", "/search", {"query": "ok", "options": {"strategies": ["nope"]}}, 400),
    ("post", "/search", {"query": "ok", "snapshot_version": "3"}, 400),
    ("post", "/search", {"query": "ok", "snapshot_version": 1, "at": "2026-01-01"}, 400),
    ("post", "/search", {"query": "ok", "unknown_field": 1}, 400),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), BAD)
def test_bad_input_gets_a_4xx_with_the_error_body(
    api: httpx.Client, method: str, path: str, body: Any, status: int
) -> None:
    if method == "get":
        r = api.get(path)
    elif isinstance(body, bytes):  # malformed JSON, declared as JSON (else 415)
        r = api.post(path, content=body, headers={"Content-Type": "application/json"})
    else:
        r = api.post(path, json=body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"code", "message", "detail"} and error["message"]
