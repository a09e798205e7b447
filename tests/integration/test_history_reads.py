"""Temporal reads over devset histories (issue 9): AT(past) properties, clean diffs, memory
from any entity.

* GSA-TTS/FAC (../shared/devset/fac.bundle) up to 2023-03-15 is replayed into a fresh tenant
  (its ADR texts were rewritten in May 2022; ADR 16 superseded ADR 9 in February 2023). For
  every node of the tenant at five past dates, ``POST /cypher ... AT(<date>)`` returns the
  property values rebuilt from the PostgreSQL change log (folded here, independently; text
  redacted as the gateway redacts every answer) and the same values as
  ``GET /temporal?at=``; properties a node gained later are absent. The same holds for
  scalar projections (``RETURN n.ceid, properties(n)``, ``MATCH (s:Service) RETURN s.env``)
  and for relationship properties (each relationship valid then carries the payload the
  change log recorded when it was opened).
* bank-of-anthos, July-August 2020, replayed into another tenant: a month's diff counts fact
  changes and evidence-only changes apart, and lists the latter only with ``evidence=true``.
* ``/memory/adr:...``: what a decision record decided, what it supersedes / is superseded by,
  which incidents cite it (the demo tenant's post-mortem cites ADR-0012); an unknown id is 404.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from neo4j import Driver

from substrate.connectors.git_ingest import ingest_git
from substrate.graph.writer import GraphWriter
from substrate.security.pii import redact
from substrate.settings import Settings
from tests.support import devset
from tests.support.gateway_client import gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant

pytestmark = pytest.mark.integration

FAC_UNTIL = "2023-03-15"
DATES = ("2022-04-01", "2022-06-01", "2022-08-01", "2022-11-01", "2023-02-01")
BOA_WINDOW = ("2020-07-01", "2020-09-01")
MONTH = ("2020-07-15T00:00:00Z", "2020-08-15T00:00:00Z")
BOA_DATES = ("2020-07-10", "2020-07-25", "2020-08-10", "2020-08-25")
LOG_SQL = """
SELECT element_id, snapshot_version, after FROM change_log
WHERE tenant_id = %s AND element_kind = 'node' AND op IN ('add', 'update') AND after ? 'props'
ORDER BY element_id, snapshot_version, id
"""
EDGE_LOG_SQL = """
SELECT element_id, snapshot_version, after FROM change_log
WHERE tenant_id = %s AND element_kind = 'edge' AND op IN ('add', 'update')
"""


def replay(stack: Settings, driver: Driver, tmp: Path, name: str, since: str | None,
           until: str) -> str:
    repo = devset.clone(name, tmp)
    tenant = new_tenant(f"reads-{name[:4]}")
    ingest_git(GraphWriter(stack, driver, embedder=None), repo, history=True, since=since,
               until=until, tenant=tenant, progress=lambda _m: None)
    return tenant


@pytest.fixture(scope="module")
def tenants(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("devset")
    out = {"fac": replay(stack, driver, tmp, "fac", None, FAC_UNTIL),
           "boa": replay(stack, driver, tmp, "bank-of-anthos", *BOA_WINDOW)}
    yield out
    for tenant in out.values():
        drop_tenant_graph(driver, tenant)


def scrub(value: Any) -> Any:
    """A value as the gateway shows it: secrets and PII in text redacted on the way out."""
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


def change_log(pg: psycopg.Connection[Any], tenant: str
               ) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    out: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for ceid, version, after in pg.execute(LOG_SQL, (tenant,)).fetchall():
        out.setdefault(str(ceid), []).append((int(version), dict(after["props"])))
    return out


def cypher(stack: Settings, tenant: str, query: str) -> dict[str, Any]:
    with gateway(stack, headers={"X-Tenant": tenant}) as client:
        response = client.post("/cypher", json={"query": query})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert not body["truncated"]
    return body


def test_at_past_equals_the_change_log_for_every_node_at_five_dates(
    stack: Settings, pg: psycopg.Connection[Any], tenants: dict[str, str],
) -> None:
    tenant = tenants["fac"]
    log = change_log(pg, tenant)
    now = {row[0]["properties"]["ceid"]: row[0]["properties"] for row in cypher(
        stack, tenant, "MATCH (n:Entity) RETURN n")["rows"]}
    checked, differs_from_today = 0, 0
    for date in DATES:
        body = cypher(stack, tenant, f"MATCH (n:Entity) RETURN n AT('{date}T00:00:00Z')")
        version = body["snapshot_version"]
        assert body["pinned"] and body["rows"], date
        with gateway(stack, headers={"X-Tenant": tenant}) as client:
            state = client.get("/temporal", params={"at": f"{date}T00:00:00Z",
                                                    "limit": 1000}).json()
        temporal = {n["ceid"]: n["props"] for n in state["nodes"]}
        for (node,) in body["rows"]:
            props, ceid = node["properties"], node["properties"]["ceid"]
            expected: dict[str, Any] = {}
            ever: set[str] = set()
            for v, changed in log[ceid]:
                ever.update(changed)
                if v <= version:
                    expected.update(changed)
            expected = scrub(expected)
            assert {k: props.get(k) for k in expected} == expected, (date, ceid)
            assert not (ever - set(expected)) & set(props), (date, ceid)  # not yet set then
            assert {k: temporal[ceid].get(k) for k in expected} == expected, (
                date, ceid, version, state.get("snapshot_version"))
            differs_from_today += any(now.get(ceid, {}).get(k) != v for k, v in expected.items())
            checked += 1
    assert checked >= 5 * 10
    assert differs_from_today > 0  # today's values would have been wrong


def expected_at(log: list[tuple[int, dict[str, Any]]], version: int
                ) -> tuple[dict[str, Any], set[str]]:
    """(a node's properties at ``version`` folded from its change log, as the gateway shows
    them; every key the log ever set)."""
    expected: dict[str, Any] = {}
    ever: set[str] = set()
    for v, changed in log:
        ever.update(changed)
        if v <= version:
            expected.update(changed)
    return scrub(expected), ever


def test_scalar_projections_at_past_equal_the_change_log(
    stack: Settings, pg: psycopg.Connection[Any], tenants: dict[str, str],
) -> None:
    tenant = tenants["fac"]
    log = change_log(pg, tenant)
    today = {row[0]: row[1] for row in cypher(
        stack, tenant, "MATCH (s:Service) RETURN s.ceid, s.env")["rows"]}
    checked, env_differs = 0, 0
    for date in DATES:
        at = f" AT('{date}T00:00:00Z')"
        body = cypher(stack, tenant, "MATCH (n:Entity) RETURN n.ceid, properties(n)" + at)
        assert body["columns"] == ["n.ceid", "properties(n)"] and body["rows"], date
        for ceid, props in body["rows"]:
            expected, ever = expected_at(log[ceid], body["snapshot_version"])
            assert {k: props.get(k) for k in expected} == expected, (date, ceid)
            assert not (ever - set(expected)) & set(props), (date, ceid)
            checked += 1
        services = cypher(stack, tenant, "MATCH (s:Service) RETURN s.ceid, s.env" + at)
        assert services["columns"] == ["s.ceid", "s.env"]
        for ceid, env in services["rows"]:
            expected, _ = expected_at(log[ceid], services["snapshot_version"])
            assert env == expected.get("env"), (date, ceid)
            env_differs += env != today.get(ceid)
    assert checked >= 5 * 10
    assert env_differs > 0  # s.env read today's list before AT rewound projections


def test_relationship_properties_at_past_equal_the_change_log(
    stack: Settings, pg: psycopg.Connection[Any], tenants: dict[str, str],
) -> None:
    """A changed relationship is closed and a new one opened: the one valid at a past date
    carries the payload logged when it was opened."""
    checked, replaced_since, dates_read = 0, 0, 0
    for tenant, dates in ((tenants["fac"], DATES), (tenants["boa"], BOA_DATES)):
        opened = {(str(k), int(v)): after
                  for k, v, after in pg.execute(EDGE_LOG_SQL, (tenant,))}
        for date in dates:
            body = cypher(stack, tenant,
                          f"MATCH (:Entity)-[r]->(:Entity) RETURN r AT('{date}T00:00:00Z')")
            dates_read += bool(body["rows"])
            for (rel,) in body["rows"]:
                props = rel["properties"]
                assert props["valid_from_v"] <= body["snapshot_version"]
                logged = scrub(opened[(props["eid"], props["valid_from_v"])])
                assert props["evidence_ref"] == logged["evidence_ref"], (date, props["eid"])
                assert props["confidence"] == logged["confidence"]
                assert {k: props.get(k) for k in logged["props"]} == logged["props"]
                checked += 1
                replaced_since += props.get("valid_to_v") is not None
    assert dates_read >= 6 and checked >= 30  # FAC's first months hold no relationship yet
    assert replaced_since > 0  # versions since closed (or replaced) are the ones read then


def test_a_scalar_read_at_a_past_date_keeps_its_pin(
    stack: Settings, tenants: dict[str, str],
) -> None:
    body = cypher(stack, tenants["fac"],
                  "MATCH (n:DecisionNode) RETURN count(n) AS c AT('2022-04-01T00:00:00Z')")
    later = cypher(stack, tenants["fac"], "MATCH (n:DecisionNode) RETURN count(n) AS c")
    assert 0 < body["rows"][0][0] < later["rows"][0][0]
    assert body["rewound_nodes"] == 0 and "rewound_nodes" not in later


def test_a_month_of_diff_counts_fact_and_evidence_changes_apart(
    stack: Settings, tenants: dict[str, str],
) -> None:
    params: dict[str, Any] = {"from": MONTH[0], "to": MONTH[1], "limit": 1000}
    with gateway(stack, headers={"X-Tenant": tenants["boa"]}) as client:
        facts = client.get("/temporal", params=params).json()
        both = client.get("/temporal", params={**params, "evidence": "true"}).json()
    counts = facts["counts"]
    assert counts == both["counts"]
    assert facts["fact_changes"] == counts["added"] + counts["removed"] + counts["changed"] > 0
    assert facts["evidence_only_changes"] == counts["evidence"] > 0
    assert facts["evidence"] == [] and not facts["evidence_listed"]
    assert len(both["evidence"]) == counts["evidence"] and both["evidence_listed"]
    for entry in both["evidence"]:  # the same fact, only its evidence differs
        assert set(entry["changed_keys"]) <= {"evidence_ref", "evidence_refs", "attribute_refs",
                                              "alias_evidence"}
    for entry in both["changed"]:  # a fact changed
        assert set(entry["changed_keys"]) - {"evidence_ref", "evidence_refs", "attribute_refs",
                                             "alias_evidence"}


def memory(stack: Settings, tenant: str, ceid: str) -> tuple[int, dict[str, Any]]:
    with gateway(stack, headers={"X-Tenant": tenant}) as client:
        response = client.get(f"/memory/{ceid}")
    return response.status_code, response.json()


def test_memory_from_a_decision_record(stack: Settings, tenants: dict[str, str]) -> None:
    status, old = memory(stack, tenants["fac"], "adr:0009")
    assert status == 200 and old["entity"]["label"] == "DecisionNode"
    assert old["decision"]["superseded_by"] == ["adr:0016"]
    assert old["decision"]["status"] == "superseded"
    status, new = memory(stack, tenants["fac"], "adr:0016")
    assert new["decision"]["supersedes"] == ["adr:0009"]
    assert new["decision"]["decided"] and new["decision"]["path"].endswith(".md")
    assert all(i["provenance"]["evidence_ref"] for i in new["items"])
    # the demo tenant: a post-mortem cites ADR-0012 in its text
    status, cited = memory(stack, stack.tenant, "adr:0012")
    assert status == 200, cited
    assert "incident:2026-09-17-checkout-payment-timeouts" in cited["decision"][
        "cited_by_incidents"]
    assert cited["decision"]["supersedes"] == ["adr:0003"]
    status, missing = memory(stack, tenants["fac"], "adr:9999")
    assert status == 404 and missing["error"]["code"] == "not_found"
    status, service = memory(stack, stack.tenant, "checkout")  # services as before
    assert status == 200 and service["service"]["ceid"] == "service:checkout"
