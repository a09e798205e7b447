"""A Neo4j routing URI (``neo4j://``) works unchanged: the gateway answers over it (reads go
out as routed read transactions), a write through it is read back at once (the driver's
bookmarks), and ``substrate doctor`` checks a stack addressed that way."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from substrate.db import neo4j_driver
from substrate.doctor.checks import run_doctor
from substrate.settings import Settings
from tests.support.gateway_client import gateway
from tests.support.local_procs import gateway as second_gateway

pytestmark = pytest.mark.integration


def routed(stack: Settings) -> Settings:
    return Settings.from_env({**stack.env, "NEO4J_URI": stack.neo4j_uri.replace(
        "bolt://", "neo4j://")})


def test_a_gateway_on_a_routing_uri_answers_as_on_bolt(stack: Settings, tmp_path: Path) -> None:
    uri = routed(stack).neo4j_uri
    assert uri.startswith("neo4j://")
    def targets(body: dict[str, Any]) -> list[str]:
        return sorted(d["target"]["ceid"] for d in body["dependencies"])

    with gateway(stack) as direct:
        expected = targets(direct.get("/dependencies/checkout").json())
    with second_gateway(tmp_path, stack.tenant, NEO4J_URI=uri) as client:
        r = client.get("/dependencies/checkout")
        assert r.status_code == 200, r.text
        assert targets(r.json()) == expected and expected
        assert client.post("/search", json={"query": "Who owns checkout?"}).status_code == 200


def test_a_write_is_read_back_through_the_routing_driver(stack: Settings) -> None:
    driver = neo4j_driver(routed(stack))
    tenant = f"t-routing-{uuid.uuid4().hex[:8]}"
    try:
        driver.execute_query("CREATE (:RoutingProbe {tenant_id: $t})", t=tenant)
        records, _, _ = driver.execute_query(
            "MATCH (n:RoutingProbe {tenant_id: $t}) RETURN count(n) AS n", t=tenant,
            routing_="r")
        assert records[0]["n"] == 1
    finally:
        driver.execute_query("MATCH (n:RoutingProbe {tenant_id: $t}) DELETE n", t=tenant)
        driver.close()


def test_doctor_checks_a_stack_addressed_by_a_routing_uri(stack: Settings) -> None:
    findings = run_doctor(routed(stack))
    assert [f for f in findings if not f.ok] == []
