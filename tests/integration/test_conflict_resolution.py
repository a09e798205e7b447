"""Conflict resolution strategies on a planted conflict: two teams each claim to be the
PRIMARY_OWNER of one service (single-valued), from two sources, the second claim newer and
less confident. The bundle always keeps both values with their evidence."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from substrate.db import neo4j_driver
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.gateway_client import gateway

pytestmark = pytest.mark.integration

ALPHA, BETA = "team:alpha", "team:beta"


@pytest.fixture(scope="module")
def tenant(stack: Settings) -> Iterator[str]:
    tenant = f"t-conf-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    writer = GraphWriter(stack, driver)
    nodes = [NodeRecord("service:billing", "Service", {"name": "billing"}),
             NodeRecord(ALPHA, "Team", {"name": "alpha"}),
             NodeRecord(BETA, "Team", {"name": "beta"})]
    writer.commit(GraphBatch(nodes=nodes, edges=[
        EdgeRecord("PRIMARY_OWNER", ALPHA, "service:billing", "catalog:billing#L3", 0.99)]),
        source="catalog", tenant=tenant)
    writer.commit(GraphBatch(nodes=nodes[:1] + nodes[2:], edges=[
        EdgeRecord("PRIMARY_OWNER", BETA, "service:billing", "CODEOWNERS#L7@abc1234", 0.95)]),
        source="codeowners", tenant=tenant)
    yield tenant
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=tenant)
    driver.close()


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


def ask(api: httpx.Client, tenant: str, strategy: str | None) -> dict[str, Any]:
    options = {} if strategy is None else {"conflict_strategy": strategy}
    r = api.post("/search", json={"query": "Who owns the billing service?", "options": options},
                 headers={"X-Tenant": tenant})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def conflict(body: dict[str, Any]) -> dict[str, Any]:
    found = [c for c in body["evidence_bundle"]["conflicts"]
             if c["subject"] == "service:billing" and c["predicate"] == "PRIMARY_OWNER"]
    assert len(found) == 1, body["evidence_bundle"]["conflicts"]
    assert {v["value"] for v in found[0]["values"]} == {ALPHA, BETA}  # losers kept
    return found[0]


def answer_teams(body: dict[str, Any]) -> set[str]:
    return {t for t in (ALPHA, BETA)
            if any(t in (c["from"], c["to"]) for c in body["citations"]
                   if c["edge"] == "PRIMARY_OWNER")}


@pytest.mark.parametrize(("strategy", "kept", "dropped"), [
    ("highest_confidence", [ALPHA], [BETA]),
    ("newest", [BETA], [ALPHA]),
    ("merge", [ALPHA, BETA], []),
])
def test_each_strategy_on_the_planted_conflict(api: httpx.Client, tenant: str, strategy: str,
                                               kept: list[str], dropped: list[str]) -> None:
    body = ask(api, tenant, strategy)
    assert conflict(body)["resolution"] == {"strategy": strategy, "kept": kept,
                                            "dropped": dropped}
    assert answer_teams(body) == set(kept)


def test_default_leaves_the_conflict_unresolved(api: httpx.Client, tenant: str) -> None:
    body = ask(api, tenant, None)
    assert conflict(body)["resolution"] is None
    assert answer_teams(body) == {ALPHA, BETA}


def test_unknown_strategy_is_a_400(api: httpx.Client, tenant: str) -> None:
    r = api.post("/search", json={"query": "Who owns billing?",
                                  "options": {"conflict_strategy": "loudest"}},
                 headers={"X-Tenant": tenant})
    assert r.status_code == 400 and r.json()["error"]["detail"]["allowed"]
