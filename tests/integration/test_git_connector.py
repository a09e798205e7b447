"""The git connector on a repository this test creates, replayed with ``history=True`` into a
throw-away tenant of the real stack.

Three commits with fixed dates:

1. 2026-09-01 checkout + payments + orders-db in docker-compose.yml (image tag and the payments
   host from ``.env``), CODEOWNERS: web owns checkout, payments (+ @dana) owns payments;
2. 2026-09-08 a Kubernetes Deployment ``search`` (namespace shop, Service ``search-svc``)
   calling checkout, commerce takes over checkout in CODEOWNERS (last match wins), ADR 1;
3. 2026-09-15 payments retired (folder and compose service), ADR 2 supersedes ADR 1, an
   incident report (root cause orders-db, impact checkout, misspelt ``chekout-svc`` and
   ``serch-svc``: fuzzy matches that wait for review);
4. (last test) a README edit, replayed after a reviewer decided both fuzzy matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from neo4j import Driver

from substrate.connectors.git_ingest import ingest_git
from substrate.connectors.gitcmd import run_git
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph import review, snapshots
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.gateway_client import auth
from tests.support.graphstate import (
    assert_change_log_matches_graph,
    drop_tenant_graph,
    live_edge,
    new_tenant,
    node_state,
    snapshot_versions,
)

pytestmark = pytest.mark.integration

ENV = "TAG=1.4.2\nPAYMENTS_HOST=payments\n"
COMPOSE_1 = """services:
  checkout:
    image: acme/checkout:${TAG}
    environment:
      PAYMENTS_URL: http://${PAYMENTS_HOST}:8080/v1
    depends_on:
      - orders-db
  payments:
    image: acme/payments:${TAG}
  orders-db:
    image: postgres:16
"""
COMPOSE_3 = """services:
  checkout:
    image: acme/checkout:${TAG}
    depends_on:
      - orders-db
  orders-db:
    image: postgres:16
"""
OWNERS_1 = "# owners\n/services/checkout/ @acme/web\n/services/payments/ @acme/payments @dana\n"
OWNERS_2 = OWNERS_1 + "/services/checkout/ @acme/commerce\n"
K8S = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: search
  namespace: shop
  labels: {app: search}
spec:
  template:
    metadata:
      labels: {app: search}
    spec:
      containers:
        - name: search
          image: acme/search:2.0
          env:
            - name: CHECKOUT_URL
              value: http://checkout:8080
---
apiVersion: v1
kind: Service
metadata:
  name: search-svc
  namespace: shop
spec:
  selector: {app: search}
"""
ADR1 = """# 1. Use Postgres for checkout orders

Date: 2026-09-07

## Status

Accepted

## Context

Orders need transactions.

## Decision

The `checkout` service keeps orders in `orders-db`.
"""
ADR1_SUPERSEDED = ADR1.replace("Accepted", "Superseded by [ADR-2](0002-event-sourced-orders.md)")
ADR2 = """---
status: accepted
date: 2026-09-14
---
# Event-sourced orders

## Context and Problem Statement

Orders grow fast.

## Decision Outcome

The `checkout` service appends order events. Supersedes [ADR-1](0001-use-postgres.md).
"""
INCIDENT = """# Checkout outage 2026-09-12

Date: 2026-09-12
Severity: SEV2

## Summary

Checkout failed for 40 minutes.

## Root cause

The `orders-db` connection pool was exhausted.
Retries from `chekout-svc` made it worse.

## Impact

The `checkout` service returned errors to shoppers.
Some `serch-svc` queries failed as well.
"""
INCIDENT_ID = "incident:2026-09-12-checkout-outage"
DATES = ("2026-09-01T09:00:00Z", "2026-09-08T09:00:00Z", "2026-09-15T09:00:00Z")


def _readme(name: str) -> dict[str, str]:
    return {f"services/{name}/README.md": f"# {name}\n\nThe {name} service.\n"}


def _trees() -> list[dict[str, str]]:
    first = {**_readme("checkout"), **_readme("payments"), ".env": ENV,
             "docker-compose.yml": COMPOSE_1, ".github/CODEOWNERS": OWNERS_1}
    second = {**first, ".github/CODEOWNERS": OWNERS_2, "deploy/k8s/search.yaml": K8S,
              **_readme("search"), "docs/adr/0001-use-postgres.md": ADR1}
    third = {k: v for k, v in second.items() if not k.startswith("services/payments/")}
    third |= {"docker-compose.yml": COMPOSE_3, "docs/adr/0001-use-postgres.md": ADR1_SUPERSEDED,
              "docs/adr/0002-event-sourced-orders.md": ADR2,
              "docs/postmortems/2026-09-12-checkout-outage.md": INCIDENT}
    return [first, second, third]


@dataclass(frozen=True)
class Replay:
    tenant: str
    repo: Path
    shas: list[str]
    versions: list[int]


@pytest.fixture(scope="module")
def replay(stack: Settings, driver: Driver, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Replay]:
    repo = init_repo(tmp_path_factory.mktemp("git") / "shop")
    shas = [commit_tree(repo, files, f"commit {i + 1}", when)
            for i, (files, when) in enumerate(zip(_trees(), DATES, strict=True))]
    tenant = new_tenant("git")
    results = ingest_git(GraphWriter(stack, driver), repo, history=True, tenant=tenant,
                         progress=lambda m: None)
    versions = [r.snapshot_version for r in results]
    assert all(isinstance(v, int) for v in versions)
    yield Replay(tenant, repo, shas, [v for v in versions if v is not None])
    drop_tenant_graph(driver, tenant)


def entities_at(driver: Driver, tenant: str, v: int) -> set[str]:
    rows, _, _ = driver.execute_query(
        "MATCH (n:Entity {tenant_id: $t}) WHERE any(i IN range(0, size(n.iv_from) - 1) "
        "WHERE n.iv_from[i] <= $v AND $v < n.iv_to[i]) RETURN n.ceid AS c", t=tenant, v=v)
    return {r["c"] for r in rows}


def edges_at(driver: Driver, tenant: str, v: int) -> set[tuple[str, str, str]]:
    rows, _, _ = driver.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.tenant_id = $t AND r.valid_from_v <= $v "
        "AND (r.valid_to_v IS NULL OR r.valid_to_v > $v) "
        "RETURN a.ceid AS a, type(r) AS t, b.ceid AS b", t=tenant, v=v)
    return {(r["a"], r["t"], r["b"]) for r in rows}


def evidence_at(driver: Driver, tenant: str, v: int) -> set[tuple[str, str, str, str]]:
    rows, _, _ = driver.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.tenant_id = $t AND r.valid_from_v <= $v "
        "AND (r.valid_to_v IS NULL OR r.valid_to_v > $v) "
        "RETURN a.ceid AS a, type(r) AS t, b.ceid AS b, r.evidence_ref AS e", t=tenant, v=v)
    return {(r["a"], r["t"], r["b"], r["e"]) for r in rows}


def git_edges(driver: Driver, tenant: str) -> list[dict[str, Any]]:
    rows, _, _ = driver.execute_query(
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.tenant_id = $t RETURN a.ceid AS src, "
        "b.ceid AS dst, b.name AS dst_name, a.name AS src_name, type(r) AS type, "
        "properties(r) AS p", t=tenant)
    return [r.data() for r in rows]


def test_one_snapshot_per_commit_stamped_with_its_time(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], replay: Replay
) -> None:
    assert len(replay.versions) == 3 and replay.versions == sorted(set(replay.versions))
    assert snapshot_versions(pg, replay.tenant) == replay.versions
    rows = pg.execute("SELECT version, valid_at, note FROM snapshots WHERE tenant_id = %s "
                      "ORDER BY version", (replay.tenant,)).fetchall()
    for (version, valid_at, note), sha, when in zip(rows, replay.shas, DATES, strict=True):
        assert valid_at == datetime.fromisoformat(when).astimezone(UTC)
        assert note.startswith(sha)
        assert_change_log_matches_graph(driver, pg, replay.tenant, version)
    assert snapshots.version_at(pg, replay.tenant, datetime(2026, 9, 10, tzinfo=UTC)) == \
        replay.versions[1]
    again = ingest_git(GraphWriter(stack, driver), replay.repo, history=True,
                       tenant=replay.tenant, progress=lambda m: None)
    assert again == [] and snapshot_versions(pg, replay.tenant) == replay.versions


def test_nodes_per_commit(driver: Driver, replay: Replay) -> None:
    v1, v2, v3 = replay.versions
    first = {"service:checkout", "service:payments", "infra:orders-db", "team:web",
             "team:payments", "dev:dana", "repo:shop"}
    second = first | {"service:search", "infra:namespace-shop", "team:commerce", "adr:0001"}
    # payments retired: its folder's CODEOWNERS rule still names it, a path no service claims
    # the replay's last commit also reads the prose pages: the services' READMEs (payments'
    # folder has none any more)
    third = (second - {"service:payments"}) | {"adr:0002", INCIDENT_ID,
                                               "module:services-payments",
                                               "doc:services-checkout-readme-md",
                                               "doc:services-search-readme-md"}
    assert [entities_at(driver, replay.tenant, v) for v in (v1, v2, v3)] == [
        first, second, third]
    checkout = node_state(driver, replay.tenant, "service:checkout")
    assert checkout is not None and checkout["image"] == "acme/checkout:1.4.2"  # from .env
    payments = node_state(driver, replay.tenant, "service:payments")
    assert payments is not None  # retired: closed, not deleted
    assert (payments["iv_from"], payments["iv_to"], payments["valid_to_v"]) == ([v1], [v3], v3)
    search = node_state(driver, replay.tenant, "service:search")
    assert search is not None and search["aliases"] == ["search-svc"]
    k8s_ref = f"deploy/k8s/search.yaml#L22@{replay.shas[1][:7]}"  # the Service's name line
    assert search["alias_evidence"] == [f"search-svc={k8s_ref}"]
    adr1 = node_state(driver, replay.tenant, "adr:0001")
    assert adr1 is not None and adr1["status"] == "superseded"
    incident = node_state(driver, replay.tenant, INCIDENT_ID)
    assert incident is not None and (incident["severity"], incident["date"]) == (
        "SEV2", "2026-09-12")


def test_edges_per_commit(driver: Driver, pg: psycopg.Connection[Any], replay: Replay) -> None:
    v1, v2, v3 = replay.versions
    at = [edges_at(driver, replay.tenant, v) for v in (v1, v2, v3)]
    web, commerce = "team:web", "team:commerce"
    checkout, payments = "service:checkout", "service:payments"
    for rel in ("OWNS", "PRIMARY_OWNER"):
        assert [(web, rel, checkout) in e for e in at] == [True, False, False]
        assert [(commerce, rel, checkout) in e for e in at] == [False, True, True]
        assert [("team:payments", rel, payments) in e for e in at] == [True, True, False]
    assert [(checkout, "CALLS", payments) in e for e in at] == [True, True, False]
    assert [(checkout, "DEPENDS_ON", "infra:orders-db") in e for e in at] == [True] * 3
    assert [("service:search", "CALLS", checkout) in e for e in at] == [False, True, True]
    assert [("infra:namespace-shop", "HOSTS", "service:search") in e for e in at] == [
        False, True, True]
    assert [("adr:0001", "WHY", checkout) in e for e in at] == [False, True, True]
    assert [("adr:0002", "SUPERSEDES", "adr:0001") in e for e in at] == [False, False, True]
    assert (INCIDENT_ID, "CAUSED_BY", "infra:orders-db") in at[2]
    assert (INCIDENT_ID, "AFFECTED", checkout) in at[2]
    assert (INCIDENT_ID, "CAUSED_BY", checkout) not in at[2]  # fuzzy: waits for review
    status = pg.execute(
        "SELECT before ->> 'status', after -> 'props' ->> 'status' FROM change_log "
        "WHERE snapshot_version = %s AND element_id = 'adr:0001'", (v3,)).fetchone()
    assert status == ("accepted", "superseded")


def test_every_evidence_ref_shows_its_fact_at_that_line(driver: Driver, replay: Replay) -> None:
    checked = 0
    for edge in git_edges(driver, replay.tenant):
        ref, props = edge["p"]["evidence_ref"], edge["p"]
        if edge["type"] == "HAS_CHUNK":
            continue
        match = re.fullmatch(r"(.+)#L(\d+)@([0-9a-f]{7})", ref)
        assert match, ref
        path, line_no, sha = match.group(1), int(match.group(2)), match.group(3)
        assert any(s.startswith(sha) for s in replay.shas), ref
        line = run_git(replay.repo, "show", f"{sha}:{path}").decode().splitlines()[line_no - 1]
        assert _states(edge, props, line), (edge["type"], edge["src"], edge["dst"], ref, line)
        checked += 1
    assert checked >= 18


def _states(edge: dict[str, Any], props: dict[str, Any], line: str) -> bool:
    """Whether ``line`` says what the edge claims."""
    kind = edge["type"]
    if kind in ("OWNS", "PRIMARY_OWNER"):
        return line.split()[0] == props["pattern"] and props["handle"] in line.split()
    if kind in ("WHY", "MENTIONS", "CAUSED_BY", "AFFECTED"):
        return f"`{props['surface']}`" in line or props["surface"] in line
    if props.get("via") == "depends_on":
        return line.strip() == f"- {edge['dst_name']}"
    if props.get("via") == "env":
        return (props["var"] in line or edge["dst_name"] in line) and "8080" in line
    if kind == "HOSTS":
        return line.strip() == "namespace: shop"
    if kind == "SUPERSEDES":
        return "supersede" in line.lower()
    if kind == "PART_OF" and edge["src"].startswith("module:"):  # a path a rule names
        return line.split()[0] == edge["src_name"]
    if kind == "PART_OF":
        return line == f"# {edge['src_name']}"
    return False


def test_evidence_names_the_commit_that_wrote_the_line(driver: Driver, replay: Replay) -> None:
    refs = {(e["src"], e["type"], e["dst"]): e["p"]["evidence_ref"]
            for e in git_edges(driver, replay.tenant)}
    c1, c2, c3 = (s[:7] for s in replay.shas)
    assert refs[("team:web", "OWNS", "service:checkout")] == f".github/CODEOWNERS#L2@{c1}"
    assert refs[("team:commerce", "OWNS", "service:checkout")] == f".github/CODEOWNERS#L4@{c2}"
    assert refs[("service:checkout", "DEPENDS_ON", "infra:orders-db")] == \
        f"docker-compose.yml#L7@{c1}"  # unchanged line: still the first commit's
    assert refs[("service:checkout", "CALLS", "service:payments")] == \
        f"docker-compose.yml#L5@{c1}"
    assert refs[("infra:namespace-shop", "HOSTS", "service:search")] == \
        f"deploy/k8s/search.yaml#L5@{c2}"
    assert refs[(INCIDENT_ID, "AFFECTED", "service:checkout")] == \
        f"docs/postmortems/2026-09-12-checkout-outage.md#L17@{c3}"


def queued(pg: psycopg.Connection[Any], tenant: str) -> dict[tuple[str, str, str], Any]:
    rows = pg.execute("SELECT id, record, status FROM verification_queue WHERE tenant_id = %s",
                      (tenant,)).fetchall()
    return {(r["type"], r["src"], r["dst"]): (i, r, status) for i, r, status in rows}


FUZZY_CAUSE = ("CAUSED_BY", INCIDENT_ID, "service:checkout")
FUZZY_IMPACT = ("AFFECTED", INCIDENT_ID, "service:search")


def test_fuzzy_name_matches_go_to_the_queue_with_their_evidence(
    pg: psycopg.Connection[Any], replay: Replay
) -> None:
    items = queued(pg, replay.tenant)
    assert set(items) == {FUZZY_CAUSE, FUZZY_IMPACT}
    assert {s for _, _, s in items.values()} == {"pending"}
    path, c3 = "docs/postmortems/2026-09-12-checkout-outage.md", replay.shas[2][:7]
    cause, impact = items[FUZZY_CAUSE][1], items[FUZZY_IMPACT][1]
    assert cause["evidence_ref"] == f"{path}#L13@{c3}"
    assert cause["props"]["reason"] == "fuzzy match of 'chekout-svc' to service:checkout"
    assert impact["evidence_ref"] == f"{path}#L18@{c3}"


def test_who_owned_checkout_on_a_date_over_http(stack: Settings, replay: Replay) -> None:
    url = f"http://{stack.gateway_host}:{stack.gateway_port}/ownership/checkout"

    def primary(at: str) -> tuple[int, list[str]]:
        body = httpx.get(url, params={"at": at}, headers=auth(stack, **{"X-Tenant": replay.tenant}),
                         timeout=60).json()
        owners = [o["ceid"] for o in body["owners"] if any(c["primary"] for c in o["claims"])]
        return body["snapshot_version"], owners

    v1, v2, v3 = replay.versions
    assert primary("2026-09-05T00:00:00Z") == (v1, ["team:web"])
    assert primary("2026-09-20T00:00:00Z") == (v3, ["team:commerce"])


def test_a_later_replay_keeps_what_a_reviewer_decided(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], replay: Replay
) -> None:
    writer = GraphWriter(stack, driver)
    items = queued(pg, replay.tenant)
    approved = review.approve(writer, replay.tenant, items[FUZZY_CAUSE][0], "alice")
    review.reject(stack.postgres_dsn, replay.tenant, items[FUZZY_IMPACT][0], "alice")
    fourth = {**_trees()[2], **_readme("search")}
    fourth["services/search/README.md"] += "\nNow with typo tolerance.\n"
    commit_tree(replay.repo, fourth, "commit 4", "2026-09-22T09:00:00Z")
    results = ingest_git(writer, replay.repo, history=True, tenant=replay.tenant,
                         progress=lambda m: None)
    assert len(results) == 1 and results[0].queued == 0  # decided: not queued again
    assert {s for _, _, s in queued(pg, replay.tenant).values()} == {"approved", "rejected"}
    cause = f"{INCIDENT_ID}-[CAUSED_BY]->service:checkout@review:git:shop"
    edge = live_edge(driver, replay.tenant, cause)  # the sync replay did not close it
    assert edge is not None and edge["valid_from_v"] == approved["snapshot_version"]
    v = edge["valid_from_v"]
    assert (INCIDENT_ID, "AFFECTED", "service:search") not in edges_at(driver, replay.tenant, v)


def test_a_commit_too_large_for_one_transaction_is_written_in_parts_to_the_same_graph(
    stack: Settings, driver: Driver, pg: psycopg.Connection[Any], replay: Replay,
    tmp_path: Path,
) -> None:
    # the writer told NEO4J_TX_MEMORY is 200k (the server keeps its own): the first commit's
    # changes are over its 150 KiB budget, so they are written in parts, then its sync commit
    # closes what it no longer says; the graph at each commit is the one-snapshot replay's
    tenant = new_tenant("gitparts")
    log: list[str] = []
    try:
        repo = init_repo(tmp_path / "shop")  # the fixture's three commits (others may
        shas = [commit_tree(repo, files, f"commit {i + 1}", when)  # add to its repository)
                for i, (files, when) in enumerate(zip(_trees(), DATES, strict=True))]
        assert shas == replay.shas[:3]
        results = ingest_git(GraphWriter(replace(stack, neo4j_tx_memory="200k"), driver),
                             repo, history=True, tenant=tenant, progress=log.append)
        versions = [r.snapshot_version for r in results]
        assert len(versions) == 3 and all(isinstance(v, int) for v in versions)
        assert any("too large for one Neo4j transaction" in m for m in log)
        made = snapshot_versions(pg, tenant)
        assert len(made) > 3 and versions[-1] == made[-1]
        notes = pg.execute("SELECT note FROM snapshots WHERE tenant_id = %s ORDER BY version",
                           (tenant,)).fetchall()
        assert {n.split(" ", 1)[0] for (n,) in notes} == set(replay.shas)
        for mine, reference in zip(versions, replay.versions, strict=True):
            assert entities_at(driver, tenant, mine) == \
                entities_at(driver, replay.tenant, reference)
            assert edges_at(driver, tenant, mine) == edges_at(driver, replay.tenant, reference)
            assert evidence_at(driver, tenant, mine) == \
                evidence_at(driver, replay.tenant, reference)
    finally:
        drop_tenant_graph(driver, tenant)
