"""Time (RSN-07, RSN-UC-06) on a repository this test writes: dated commits add and remove
services, move ownership in CODEOWNERS and add a post-mortem; the history is replayed into a
throw-away tenant, then

* answers AT three dates (/temporal, /ownership, /dependencies, /search with ``at``) equal
  what the repository itself said at those dates (``batch_at`` of the commit then current);
* the diff between two dates lists exactly the changes the commits in between made;
* "what changed in the three days before the incident?" returns the commit before it first;
* bad instants get a 400 that says why.

The tenant's Neo4j nodes are deleted at the end (its snapshot history stays).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from substrate.connectors.git_ingest import ingest_git, with_chunks
from substrate.connectors.gitrepo import batch_at
from substrate.db import neo4j_driver
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import GraphBatch
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.gateway_client import gateway

pytestmark = pytest.mark.integration

D1, D2, D3, D4 = ("2025-03-05T00:00:00Z", "2025-03-12T00:00:00Z", "2025-03-20T00:00:00Z",
                  "2025-03-25T00:00:00Z")
INCIDENT_AT = "2025-03-25T08:00:00Z"


def readme(name: str, what: str) -> str:
    return f"# {name}\n\n{what}\n"


def compose(services: dict[str, dict[str, str]]) -> str:
    lines = ["services:"]
    for name, env in services.items():
        lines += [f"  {name}:", f"    image: ghcr.io/shop/{name}:1"]
        if env:
            lines.append("    environment:")
            lines += [f'      {k}: "{v}"' for k, v in env.items()]
    return "\n".join(lines) + "\n"


def codeowners(rules: dict[str, str]) -> str:
    return "# owners\n" + "".join(f"/services/{s}/    {o}\n" for s, o in rules.items())


POSTMORTEM = f"""---
date: {INCIDENT_AT}
severity: SEV2
---
# Billing timeouts after the ledger removal

## Summary

Invoices failed for two hours.

## Impact

The api service returned errors for checkout pages; the billing service rejected invoices.

## Root Cause

The billing service timeout was lowered to 200 ms while the fraud service answers in 400 ms.
"""


def history() -> list[tuple[str, str, dict[str, str]]]:
    """(when, subject, whole tree) of each commit."""
    docs = {"api": "Public HTTP API.", "billing": "Invoices and payments.",
            "ledger": "Double-entry ledger.", "fraud": "Fraud scoring."}
    env1 = {"api": {"BILLING_URL": "http://billing:8080"},
            "billing": {"LEDGER_URL": "http://ledger:8080", "TIMEOUT_MS": "3000"},
            "ledger": {}}
    owners1 = {"api": "@shop/web", "billing": "@shop/payments", "ledger": "@shop/payments"}
    env2 = {**env1, "billing": {**env1["billing"], "FRAUD_URL": "http://fraud:8080"},
            "fraud": {}}
    owners2 = {**owners1, "fraud": "@shop/risk"}
    owners3 = {**owners2, "billing": "@shop/finance @ana"}
    env4 = {k: v for k, v in env2.items() if k != "ledger"}
    env4["billing"] = {"FRAUD_URL": "http://fraud:8080", "TIMEOUT_MS": "200"}
    owners4 = {k: v for k, v in owners3.items() if k != "ledger"}

    def tree(env: dict[str, dict[str, str]], owners: dict[str, str]) -> dict[str, str]:
        files = {f"services/{s}/README.md": readme(s, docs[s]) for s in env}
        return files | {"docker-compose.yml": compose(env),
                        ".github/CODEOWNERS": codeowners(owners)}

    t4 = tree(env4, owners4)
    return [
        ("2025-03-03T09:00:00Z", "Import api, billing and ledger", tree(env1, owners1)),
        ("2025-03-10T10:00:00Z", "fraud: new service called by billing (#2)", tree(env2, owners2)),
        ("2025-03-17T11:00:00Z", "billing moves to the finance team (#3)", tree(env2, owners3)),
        ("2025-03-24T12:00:00Z", "remove ledger; billing timeout 200 ms (#4)", t4),
        ("2025-03-26T15:00:00Z", "postmortem: billing timeouts (#5)",
         t4 | {"docs/postmortems/2025-03-25-billing-timeouts.md": POSTMORTEM}),
    ]


@pytest.fixture(scope="module")
def replayed(stack: Settings, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[str, Path, list[tuple[str, str]]]]:
    """(tenant, repo, [(when, sha)]) after the repository's history was replayed."""
    tenant = f"t-time-{uuid.uuid4().hex[:8]}"
    repo = init_repo(tmp_path_factory.mktemp("repos") / f"shop-{tenant}")
    commits = [(when, commit_tree(repo, files, subject, when))
               for when, subject, files in history()]
    driver = neo4j_driver(stack)
    try:
        results = ingest_git(GraphWriter(stack, driver), repo, history=True, tenant=tenant,
                             progress=lambda _: None)
        assert all(r.snapshot_version for r in results)
        yield tenant, repo, commits
    finally:
        for label in ("Entity", "Chunk"):
            driver.execute_query(f"MATCH (n:{label} {{tenant_id: $t}}) DETACH DELETE n",
                                 t=tenant)
        driver.close()


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


def said_at(repo: Path, commits: list[tuple[str, str]], when: str) -> GraphBatch:
    """What the repository said at ``when``: the batch of the newest commit not after it (its
    prose pages, the services' READMEs among them, only at the last commit: a history replay
    reads them there)."""
    sha = [s for w, s in commits if w <= when][-1]
    return with_chunks(batch_at(repo, sha, prose=sha == commits[-1][1]))


def get(api: httpx.Client, tenant: str, path: str, **params: Any) -> dict[str, Any]:
    r = api.get(path, params=params, headers={"X-Tenant": tenant})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def full_state(api: httpx.Client, tenant: str, at: str) -> tuple[list[dict[str, Any]],
                                                                  list[dict[str, Any]]]:
    """Every node and relationship at ``at``, read page by page (small pages)."""
    nodes: list[dict[str, Any]] = []
    rels: list[dict[str, Any]] = []
    params: dict[str, Any] = {"at": at, "limit": 7}
    while True:
        body = get(api, tenant, "/temporal", **params)
        nodes += body["nodes"]
        rels += body["relationships"]
        if body["next_cursor"] is None:
            return nodes, rels
        params["cursor"] = body["next_cursor"]


def key(eid: str) -> str:
    return eid.rsplit("@", 1)[0]


@pytest.mark.parametrize("at", [D1, D2, D3, D4])
def test_state_at_a_date_is_what_the_repository_said(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]], at: str,
) -> None:
    tenant, repo, commits = replayed
    said = said_at(repo, commits, at)
    entities = {n.ceid: n for n in said.nodes if n.label != "Chunk"}
    nodes, rels = full_state(api, tenant, at)
    assert {n["ceid"] for n in nodes} == set(entities)
    assert len(nodes) == len(entities)  # no page repeated a node
    assert {key(r["eid"]) for r in rels} == {e.eid for e in said.edges
                                             if e.src in entities and e.dst in entities}
    for n in nodes:  # properties as they were then, not as they are now
        assert n["props"] == entities[n["ceid"]].props, n["ceid"]
    for r in rels:
        assert r["evidence_ref"] and r["evidence_ref"].endswith(tuple(s[:7] for _, s in commits))
    body = get(api, tenant, "/temporal", at=at, label="Service")
    assert {n["ceid"] for n in body["nodes"]} == {c for c, n in entities.items()
                                                  if n.label == "Service"}
    sha = [s for w, s in commits if w <= at][-1]
    assert body["snapshot"]["commit"] == sha and body["snapshot"]["tenant"] == tenant


def test_state_offsets_match_cursors_and_neighbourhoods(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
) -> None:
    tenant = replayed[0]
    nodes, rels = full_state(api, tenant, D2)
    items = [n["ceid"] for n in nodes] + [r["eid"] for r in rels]
    by_offset: list[str] = []
    for offset in range(0, len(items), 5):
        body = get(api, tenant, "/temporal", at=D2, limit=5, offset=offset)
        by_offset += [n["ceid"] for n in body["nodes"]] + [r["eid"] for r in body["relationships"]]
    assert by_offset == items
    assert body["totals"] == {"nodes": len(nodes), "relationships": len(rels)}
    near = get(api, tenant, "/temporal", at=D2, service="billing", types="CALLS")
    assert {n["ceid"] for n in near["nodes"]} == {
        "service:api", "service:billing", "service:ledger", "service:fraud"}
    assert {key(r["eid"]) for r in near["relationships"]} == {
        "service:api-[CALLS]->service:billing", "service:billing-[CALLS]->service:ledger",
        "service:billing-[CALLS]->service:fraud"}
    assert near["evidence_bundle"]["seed"][0]["ceid"] == "service:billing"
    assert len(near["evidence_bundle"]["hops"]) == 3
    gone = api.get("/temporal", params={"at": D1, "service": "fraud"},
                   headers={"X-Tenant": tenant})
    assert gone.status_code == 404  # fraud did not exist yet


def test_a_neighbourhood_pages_like_its_one_page(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
) -> None:
    """A service's neighbourhood read in pages of 2 (by cursor, and by offset) gives the
    items of one large page in the same order, and the same totals on every page."""
    tenant = replayed[0]
    whole = get(api, tenant, "/temporal", at=D2, service="billing", depth=2, limit=1000)
    items = [n["ceid"] for n in whole["nodes"]] + [r["eid"] for r in whole["relationships"]]
    assert whole["next_cursor"] is None and len(items) > 4
    by_cursor: list[str] = []
    params: dict[str, Any] = {"at": D2, "service": "billing", "depth": 2, "limit": 2}
    while True:
        body = get(api, tenant, "/temporal", **params)
        assert body["totals"] == whole["totals"]
        by_cursor += [n["ceid"] for n in body["nodes"]] + [r["eid"] for r in body["relationships"]]
        if body["next_cursor"] is None:
            break
        params["cursor"] = body["next_cursor"]
    assert by_cursor == items
    by_offset: list[str] = []
    for offset in range(0, len(items) + 2, 2):
        body = get(api, tenant, "/temporal", at=D2, service="billing", depth=2, limit=2,
                   offset=offset)
        by_offset += [n["ceid"] for n in body["nodes"]] + [r["eid"] for r in body["relationships"]]
    assert by_offset == items
    assert whole["totals"] == {"nodes": len(whole["nodes"]),
                               "relationships": len(whole["relationships"])}


@pytest.mark.parametrize("at", [D1, D2, D3, D4])
def test_ownership_and_dependencies_at_a_date(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]], at: str,
) -> None:
    tenant, repo, commits = replayed
    said = said_at(repo, commits, at)
    owners = {e.src for e in said.edges
              if e.type in ("OWNS", "PRIMARY_OWNER") and e.dst == "service:billing"}
    deps = {e.dst for e in said.edges
            if e.type in ("CALLS", "DEPENDS_ON") and e.src == "service:billing"}
    own = get(api, tenant, "/ownership/billing", at=at)
    assert {o["ceid"] for o in own["owners"]} == owners
    dep = get(api, tenant, "/dependencies/billing", at=at)
    assert {d["target"]["ceid"] for d in dep["dependencies"]} == deps
    expected = {D1: ({"team:payments"}, {"service:ledger"}),
                D2: ({"team:payments"}, {"service:ledger", "service:fraud"}),
                D3: ({"team:finance", "dev:ana"}, {"service:ledger", "service:fraud"}),
                D4: ({"team:finance", "dev:ana"}, {"service:fraud"})}[at]
    assert (owners, deps) == expected  # the repository really changed as intended


def test_search_with_at_answers_as_of_that_date(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
) -> None:
    tenant = replayed[0]
    for at, owner, other in ((D1, "team:payments", "team:finance"),
                             (D3, "team:finance", "team:payments")):
        r = api.post("/search", headers={"X-Tenant": tenant},
                     json={"query": "Who owns the billing service?", "at": at})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["pinned"] is True and body["route"]["intent"] == "ownership"
        cited = {c["from"] for c in body["citations"]}
        assert owner in cited and other not in cited, body["answer"]


def expected_changes(old: GraphBatch, new: GraphBatch) -> set[tuple[str, str, str]]:
    """The writer's own notion of a change, applied to what the repository said."""
    def comparable(e: Any) -> str:
        return json.dumps([e.evidence_ref, e.confidence, e.weight, e.props], sort_keys=True)

    on, nn = {n.ceid: n for n in old.nodes}, {n.ceid: n for n in new.nodes}
    out = {("node", c, "added") for c in nn.keys() - on.keys()}
    out |= {("node", c, "removed") for c in on.keys() - nn.keys()}
    out |= {("node", c, "changed") for c in nn.keys() & on.keys()
            if any(on[c].props.get(k) != v for k, v in nn[c].props.items())}
    oe, ne = {e.eid: e for e in old.edges}, {e.eid: e for e in new.edges}
    out |= {("edge", k, "added") for k in ne.keys() - oe.keys()}
    out |= {("edge", k, "removed") for k in oe.keys() - ne.keys()}
    out |= {("edge", k, "changed") for k in ne.keys() & oe.keys()
            if comparable(ne[k]) != comparable(oe[k])}
    return out


def test_diff_between_two_dates_lists_exactly_the_changes(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
) -> None:
    tenant, repo, commits = replayed
    body = get(api, tenant, "/temporal", **{"from": D1, "to": D3})
    got = {(e["kind"], key(e["id"]), e["change"])
           for k in ("added", "removed", "changed") for e in body[k]}
    assert got == expected_changes(said_at(repo, commits, D1), said_at(repo, commits, D3))
    assert body["transient"] == []
    assert ("edge", "service:billing-[CALLS]->service:fraud", "added") in got
    assert ("edge", "team:payments-[PRIMARY_OWNER]->service:billing", "removed") in got
    assert [s["commit"] for s in body["snapshots"]] == [commits[1][1], commits[2][1]]
    assert body["from_snapshot"]["commit"] == commits[0][1]
    assert body["to_snapshot"]["commit"] == commits[2][1]
    by_id = {key(e["id"]): e for k in ("added", "removed", "changed") for e in body[k]}
    fraud = by_id["service:billing-[CALLS]->service:fraud"]
    assert fraud["snapshot"]["commit"] == commits[1][1]
    assert fraud["evidence"] == [fraud["after"]["evidence_ref"]]
    assert fraud["evidence"][0].startswith("docker-compose.yml#L")
    assert fraud["evidence"][0].endswith(f"@{commits[1][1][:7]}")  # the line that commit wrote
    billing = by_id["service:billing"]
    assert set(billing["changed_keys"]) == {"env"}
    removal = by_id["team:payments-[PRIMARY_OWNER]->service:billing"]
    assert removal["snapshot"]["commit"] == commits[2][1]
    assert removal["evidence"][0].startswith(".github/CODEOWNERS#L")


def test_diff_pages_and_filters(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
) -> None:
    tenant = replayed[0]
    window = {"from": D1, "to": D4}
    whole = get(api, tenant, "/temporal", **window)
    everything = [e["id"] for k in ("added", "removed", "changed", "transient")
                  for e in whole[k]]
    paged: list[str] = []
    params: dict[str, Any] = {**window, "limit": 4}
    while True:
        body = get(api, tenant, "/temporal", **params)
        paged += [e["id"] for k in ("added", "removed", "changed", "transient") for e in body[k]]
        if body["next_cursor"] is None:
            break
        params["cursor"] = body["next_cursor"]
    assert sorted(paged) == sorted(everything) and len(paged) == len(set(paged))
    calls = get(api, tenant, "/temporal", **window, types="CALLS")
    assert {(key(e["id"]), e["change"]) for k in ("added", "removed") for e in calls[k]} == {
        ("service:billing-[CALLS]->service:fraud", "added"),
        ("service:billing-[CALLS]->service:ledger", "removed")}
    near = get(api, tenant, "/temporal", **window, service="ledger", depth=0)
    assert {key(e["id"]) for k in ("added", "removed", "changed") for e in near[k]} >= {
        "service:ledger", "service:billing-[CALLS]->service:ledger"}
    assert all(e["distance"] == 0 for k in ("added", "removed", "changed") for e in near[k])


def test_what_changed_before_the_incident(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
) -> None:
    tenant, _, commits = replayed
    r = api.post("/search", headers={"X-Tenant": tenant}, json={
        "query": "What changed in the three days before the billing timeouts incident?"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["route"]["intent"] == "temporal"
    assert body["strategies"]["temporal"]["status"] == "ok"
    answer = body["answer"]
    assert "incident:2025-03-25-billing-timeouts" in answer
    first = answer.split("\n")[1]
    assert first.startswith(f"1. {commits[3][1][:7]} ")  # remove ledger; timeout 200 ms
    assert "Service service:billing changed (env: TIMEOUT_MS 3000→200, -LEDGER_URL)" in first
    assert "1 snapshot(s)" in answer and len(answer.split("\n")) == 2  # only that commit
    hops = {(h["source"], h["edge"], h["target"]) for h in body["evidence_bundle"]["hops"]}
    assert ("service:billing", "CALLS", "service:ledger") in hops  # the removed call, cited
    refs = {h["evidence_ref"] for h in body["evidence_bundle"]["hops"]}
    assert any(ref.endswith(f"@{commits[4][1][:7]}") for ref in refs)  # the post-mortem's links


def test_uc06_on_the_demo_checkout_incident(api: httpx.Client) -> None:
    """EXPECTED.md: bda96bb (PR #431: checkout env, new CALLS checkout->fraud) comes first."""
    r = api.post("/search", json={
        "query": "What changed in the three days before the checkout incident?"})
    assert r.status_code == 200, r.text
    answer = r.json()["answer"]
    assert "incident:2026-09-17-checkout-payment-timeouts" in answer
    lines = answer.split("\n")
    assert lines[1].startswith("1. bda96bb (2026-09-15T10:12:00+00:00")
    assert "Service service:checkout changed (env: PAYMENT_RETRIES 1→5, PAYMENT_TIMEOUT_MS " \
           "5000→800, +FRAUD_URL)" in lines[1]
    assert "CALLS service:checkout -> service:fraud added [docker-compose.yml#L117@bda96bb]" \
        in lines[1]
    assert lines[2].startswith("2. 7be96b9") and len(lines) == 3
    assert "2501eec" not in answer  # the fix came after the incident started


@pytest.mark.parametrize(("params", "needle"), [
    ({"at": "not-a-date"}, "not an ISO-8601 timestamp"),
    ({"at": "2025-01-01T00:00:00Z"}, "before the first snapshot"),
    ({"at": "2999-01-01T00:00:00Z"}, "in the future"),
    ({"from": "2025-01-01T00:00:00Z", "to": D3}, "before the first snapshot"),
    ({"from": D3, "to": D1}, "'from' is after 'to'"),
    ({"from": D1, "to": "2999-01-01T00:00:00Z"}, "in the future"),
    ({"from": "yesterday", "to": D3}, "not an ISO-8601 timestamp"),
    ({"from": D1}, "needs both"),
    ({"at": D1, "from": D1, "to": D3}, "not both"),
])
def test_bad_instants_are_refused_with_the_reason(
    api: httpx.Client, replayed: tuple[str, Path, list[tuple[str, str]]],
    params: dict[str, str], needle: str,
) -> None:
    tenant = replayed[0]
    r = api.get("/temporal", params=params, headers={"X-Tenant": tenant})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert needle in error["message"]
    if needle == "before the first snapshot":
        assert str(error["detail"]["first_snapshot_at"]).startswith("2025-03-03")
    for path in ("/ownership/billing", "/dependencies/billing", "/memory/billing"):
        if "at" in params and "from" not in params:
            assert api.get(path, params=params,
                           headers={"X-Tenant": tenant}).status_code == 400
