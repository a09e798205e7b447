"""Issue 4, "Cypher as the product's stored logic": the retrieval templates installed as
``custom.substrate_*`` procedures answer exactly what the gateway answers on the demo tenant,
and every saved Browser script runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from neo4j import Driver

from substrate import browser
from substrate.cypher import CypherLibrary
from substrate.settings import Settings
from tests.support.gateway_client import gateway

CLEARANCE = ["public", "internal"]


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


@pytest.fixture(scope="module")
def installed(stack: Settings, driver: Driver) -> dict[str, list[str]]:
    return browser.install(driver, CypherLibrary.load())


def call(driver: Driver, procedure: str, *args: Any) -> list[dict[str, Any]]:
    names = ", ".join(f"$a{i}" for i in range(len(args)))
    records, _, _ = driver.execute_query(f"CALL custom.{procedure}({names})",
                                         {f"a{i}": a for i, a in enumerate(args)}, routing_="r")
    return [json.loads(json.dumps(r.data())) for r in records]


def get(api: httpx.Client, path: str, **params: Any) -> dict[str, Any]:
    r = api.get(path, params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_every_retrieval_template_is_callable(driver: Driver,
                                              installed: dict[str, list[str]]) -> None:
    wanted = {p.name for p in browser.procedures(CypherLibrary.load())}
    assert {"substrate_retrieval_dependencies", "substrate_retrieval_dependencies_callers",
            "substrate_retrieval_ownership", "substrate_retrieval_memory",
            "substrate_retrieval_epic_impact"} <= wanted
    records, _, _ = driver.execute_query(
        "SHOW PROCEDURES YIELD name WHERE name STARTS WITH 'custom.substrate_' RETURN name")
    assert wanted <= {r["name"].removeprefix("custom.") for r in records}
    assert set(installed["installed"]) | set(installed["unchanged"]) == wanted


def test_install_is_idempotent(driver: Driver, installed: dict[str, list[str]]) -> None:
    again = browser.install(driver, CypherLibrary.load())
    assert again["installed"] == [] and again["dropped"] == []
    assert set(again["unchanged"]) == set(installed["installed"]) | set(installed["unchanged"])


def test_dependencies_procedure_returns_the_gateway_rows(api: httpx.Client, driver: Driver,
                                                         installed: Any) -> None:
    body = get(api, "/dependencies/checkout")
    rows = call(driver, "substrate_retrieval_dependencies", "acme", body["snapshot_version"],
                CLEARANCE, "service:checkout", 0.0, False, 101)
    assert rows == body["dependencies"]
    assert {r["target"]["ceid"] for r in rows} == {
        "service:cart", "service:payment", "service:orders", "service:shipping",
        "service:pricing", "service:fraud", "infra:kafka", "infra:redis"}


def test_callers_and_deeper_variants_match_the_gateway(api: httpx.Client, driver: Driver,
                                                       installed: Any) -> None:
    for procedure, params in (
        ("substrate_retrieval_dependencies_callers", {"direction": "in"}),
        ("substrate_retrieval_dependencies_depth2", {"depth": 2}),
        ("substrate_retrieval_dependencies_callers_depth3", {"direction": "in", "depth": 3}),
    ):
        body = get(api, "/dependencies/auth", **params)
        rows = call(driver, procedure, "acme", body["snapshot_version"], CLEARANCE,
                    "service:auth", 0.0, False, 101)
        assert rows == body["dependencies"], procedure
    callers = call(driver, "substrate_retrieval_dependencies_callers", "acme", browser.LIVE,
                   CLEARANCE, "service:auth")
    assert {r["target"]["ceid"] for r in callers} == {"service:api-gateway", "service:mobile-bff"}


def claims_from_rows(rows: list[dict[str, Any]]) -> set[str]:
    return {json.dumps({"owner": r["owner"]["ceid"], "primary": r["primary"], **r["hop"]},
                       sort_keys=True) for r in rows}


def claims_from_gateway(body: dict[str, Any]) -> set[str]:
    return {json.dumps({"owner": o["ceid"], **c}, sort_keys=True)
            for o in body["owners"] for c in o["claims"]}


def test_ownership_procedure_matches_the_gateway_now_and_pinned(api: httpx.Client,
                                                                driver: Driver,
                                                                installed: Any) -> None:
    now = get(api, "/ownership/checkout")
    rows = call(driver, "substrate_retrieval_ownership", "acme", now["snapshot_version"],
                CLEARANCE, "service:checkout")
    assert claims_from_rows(rows) == claims_from_gateway(now)
    before = get(api, "/ownership/checkout", at="2026-09-01T00:00:00Z")
    old = call(driver, "substrate_retrieval_ownership", "acme", before["snapshot_version"],
               CLEARANCE, "service:checkout")
    assert claims_from_rows(old) == claims_from_gateway(before)
    primary = {r["owner"]["ceid"] for r in old if r["primary"]}
    assert primary == {"team:commerce"}  # before the move of 2026-09-08 (EXPECTED.md)


def test_memory_procedure_returns_the_gateway_items(api: httpx.Client, driver: Driver,
                                                    installed: Any) -> None:
    body = get(api, "/memory/payment", limit=100)
    rows = call(driver, "substrate_retrieval_memory", "acme", body["snapshot_version"],
                CLEARANCE, "service:payment", 101)
    assert {r["item"]["ceid"] for r in rows} == {i["ceid"] for i in body["items"]}
    adr3 = next(r for r in rows if r["item"]["ceid"] == "adr:0003")
    assert adr3["superseded_by"] == ["adr:0012"]


def test_procedures_are_tenant_scoped(driver: Driver, installed: Any) -> None:
    assert call(driver, "substrate_retrieval_dependencies", "t-nobody", browser.LIVE,
                CLEARANCE, "service:checkout") == []
    assert call(driver, "substrate_retrieval_ownership", "t-nobody", browser.LIVE,
                CLEARANCE, "service:checkout") == []


def run_script(driver: Driver, text: str) -> list[dict[str, Any]]:
    """What Browser does with a saved script: evaluate each :param, then run the query."""
    script = browser.parse_script(text)
    params = {name: driver.execute_query(f"RETURN {expr} AS value").records[0]["value"]
              for name, expr in script.params.items()}
    records, _, _ = driver.execute_query(script.query, params, routing_="r")
    return [r.data() for r in records]


def test_every_browser_script_runs_on_the_demo(driver: Driver, installed: Any) -> None:
    scripts = browser.browser_scripts()
    assert [p.name[:9] for p in scripts] == [f"rsn-uc-0{i}" for i in range(1, 9)]
    results = {p.name[:9]: run_script(driver, p.read_text()) for p in scripts}
    assert all(results.values()), [k for k, v in results.items() if not v]
    assert {r["dependency"] for r in results["rsn-uc-01"]} == {
        "service:fraud", "service:ledger", "service:currency", "infra:kafka",
        "infra:payments-db"}
    assert {r["owner"] for r in results["rsn-uc-02"] if r["primary"]} == {"team:payments"}
    assert results["rsn-uc-03"][0]["pull_request"] == "PR #447"
    assert [r["component"] for r in results["rsn-uc-04"]] == [
        "infra:kafka", "infra:redis", "service:user"]
    assert {r["item"] for r in results["rsn-uc-05"]} >= {"adr:0003", "adr:0008", "adr:0012"}
    assert ("service:checkout", "CALLS", "service:fraud") in {
        (r["from"], r["relation"], r["to"]) for r in results["rsn-uc-06"]}
    assert {r["caller"] for r in results["rsn-uc-07"]} == {
        "service:api-gateway", "service:mobile-bff"}
    assert {r["service"] for r in results["rsn-uc-08"] if r["depth"] == 0} == {
        "service:checkout", "service:payment", "service:cart", "service:pricing"}


def test_a_procedure_no_template_produces_is_dropped(driver: Driver, installed: Any) -> None:
    library = CypherLibrary.load()
    stray = "substrate_retrieval_stray_probe"
    driver.execute_query(library.text("procedures/install"), {
        "signature": f"{stray}(tenant :: STRING) :: (value :: ANY)",
        "statement": "RETURN $tenant AS value", "database": browser.DATABASE,
        "description": "left over from an older template"}, database_="system")
    outcome = browser.install(driver, library)
    assert outcome["dropped"] == [stray] and outcome["installed"] == []
    again = browser.install(driver, library)
    assert again["dropped"] == []
