"""Policy (issue 10, part 3) against the real stack: PII of every kind, planted through the
write path, is redacted from /search, /memory, /cypher and the WebSocket stream, the response
names the kinds, and every decision has its policy_audit row; jurisdiction restrictions hold
in the templates, /cypher and the cache; community summaries are per clearance and snapshot."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
import websockets
from neo4j import Driver

from gds_jobs import risks_store
from gds_jobs.communities import run_every_level
from gds_jobs.runtime import job_context, job_scope
from substrate.embeddings import make_embedder
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.global_search import global_search
from substrate.security.apikeys import Grant, create
from substrate.security.pii import KINDS
from substrate.settings import Settings
from tests.support.gateway_client import auth, gateway

PII = {
    "email": "oncall.lead@example.com",
    "phone": "+44 20 7946 0958",
    "ssn": "123-45-6789",
    "nino": "AB 12 34 56 C",
    "iban": "GB82 WEST 1234 5698 7654 32",
    "card": "4111 1111 1111 1111",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n"
                   "-----END RSA PRIVATE KEY-----",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
           "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "aws_key": "AKIAIOSFODNN7EXAMPLE",
    "api_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "password": "hunter2xyz",
    "token": "Zx9Qm2Lk8Pw3Rt7Yu1Io5Ap6Sd4Fg0HjKl",
}
NOTE = (f"Checkout outage notes: page {PII['email']} or call {PII['phone']}. Customer ssn "
        f"{PII['ssn']}, NI {PII['nino']}, refund to {PII['iban']}, card {PII['card']}. Leaked "
        f"key {PII['private_key']} and bearer {PII['jwt']}; aws {PII['aws_key']}, stripe "
        f"{PII['api_key']}, db password={PII['password']}, session {PII['token']}.")
ALL_KINDS = dict.fromkeys(KINDS, 1)


def node(ceid: str, label: str, **props: Any) -> NodeRecord:
    return NodeRecord(ceid, label, {"name": ceid.split(":", 1)[1], **props})


def edge(kind: str, a: str, b: str) -> EdgeRecord:
    return EdgeRecord(kind, a, b, f"test:{a}-{b}#L1", 1.0)


@pytest.fixture(scope="module")
def tenant(stack: Settings, driver: Driver) -> Iterator[str]:
    """checkout (public) with a memory note full of PII; billing services restricted to
    jurisdictions (EU, US, EU+UK) and one without."""
    name = f"t-pol-{uuid.uuid4().hex[:8]}"
    nodes = [node("service:checkout", "Service", classification="public"),
             node("memory:outage-notes", "MemoryNode", classification="public", text=NOTE),
             node("service:billing-eu", "Service", classification="public", jurisdiction="EU"),
             node("service:billing-us", "Service", classification="public", jurisdiction=["US"]),
             node("service:billing-gb", "Service", classification="public",
                  jurisdiction=["EU", "UK"]),
             node("service:billing-any", "Service", classification="public")]
    edges = [edge("MENTIONS", "memory:outage-notes", "service:checkout"),
             *(edge("CALLS", "service:checkout", f"service:billing-{j}")
               for j in ("eu", "us", "gb", "any"))]
    GraphWriter(stack, driver).commit(GraphBatch(nodes=nodes, edges=edges), source="test",
                                      tenant=name)
    yield name
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=name)


def key_for(stack: Settings, tenant: str, **grant: Any) -> str:
    spec = {"tenants": (tenant,), "clearance": "internal", "roles": ("reader",), **grant}
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        return create(conn, f"test-policy-{uuid.uuid4().hex[:6]}", Grant(**spec))[1]


@pytest.fixture(scope="module")
def api(stack: Settings, tenant: str) -> Iterator[httpx.Client]:
    with gateway(stack, key=key_for(stack, tenant)) as client:
        yield client


def audit_rows(stack: Settings, request_id: str, expected: int) -> list[dict[str, Any]]:
    """The audit rows of one request (written just after the response: wait for them)."""
    deadline = time.monotonic() + 10
    while True:
        with psycopg.connect(stack.postgres_dsn) as conn:
            cur = conn.execute("SELECT principal, tenant_id, action, decision, reason, detail "
                               "FROM policy_audit WHERE request_id = %s ORDER BY id",
                               (request_id,))
            names = [d.name for d in cur.description or ()]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def assert_clean(text: str) -> None:
    leaked = [kind for kind, value in PII.items() if value in text]
    assert leaked == [], leaked


def assert_redacted_and_audited(stack: Settings, body: dict[str, Any], action: str,
                                kinds: dict[str, int]) -> None:
    assert_clean(json.dumps(body))
    policy = body["policy"]
    assert {k: policy["redacted"].get(k, 0) >= 1 for k in kinds} == dict.fromkeys(kinds, True)
    rows = audit_rows(stack, policy["request_id"], 2)
    assert [r["decision"] for r in rows] == ["allowed", "redacted"]
    assert {r["action"] for r in rows} == {action}
    assert rows[0]["principal"].startswith("key:")
    assert rows[1]["detail"]["redacted"] == policy["redacted"]
    assert "PII redacted" in rows[1]["reason"]


def test_memory_redacts_every_kind(stack: Settings, api: httpx.Client) -> None:
    r = api.get("/memory/checkout")
    assert r.status_code == 200, r.text
    body = r.json()
    summary = body["items"][0]["summary"]
    for kind in KINDS:
        assert f"[REDACTED:{kind}]" in summary, kind
    assert body["policy"]["redacted"] == ALL_KINDS
    assert_redacted_and_audited(stack, body, "read:/memory", ALL_KINDS)


def test_cypher_string_values_are_redacted(stack: Settings, api: httpx.Client) -> None:
    r = api.post("/cypher", json={"query": "MATCH (m:MemoryNode) RETURN m.text AS text, m"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["rows"] and body["policy"]["redacted"] == {k: 2 for k in KINDS}
    assert_redacted_and_audited(stack, body, "read:/cypher", ALL_KINDS)


def test_search_answers_and_evidence_are_redacted(stack: Settings, api: httpx.Client) -> None:
    r = api.post("/search", json={"query": "What do the checkout outage notes say?"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert "[REDACTED:" in json.dumps(body)
    assert_redacted_and_audited(stack, body, "read:/search", ALL_KINDS)


def test_cached_answers_are_redacted_too(stack: Settings, api: httpx.Client) -> None:
    first = api.get("/memory/checkout").json()
    again = api.get("/memory/checkout").json()
    assert again["cache"]["hit"] is True
    assert again["policy"]["redacted"] == first["policy"]["redacted"] == ALL_KINDS
    assert_clean(json.dumps(again))


def test_stream_frames_are_redacted(stack: Settings, tenant: str) -> None:
    url = f"ws://127.0.0.1:{stack.gateway_port}/stream"
    headers = auth(stack, key_for(stack, tenant))

    async def run() -> list[dict[str, Any]]:
        frames: list[dict[str, Any]] = []
        async with websockets.connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps({"query": "What do the checkout outage notes say?"}))
            while not frames or frames[-1]["stage"] not in ("done", "error"):
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 120)))
        return frames

    frames = asyncio.run(run())
    assert frames[-1]["stage"] == "done", frames[-1]
    assert_clean(json.dumps(frames))
    policy = frames[-1]["data"]["policy"]
    assert policy["redacted"]
    rows = audit_rows(stack, policy["request_id"], 2)
    assert [r["decision"] for r in rows] == ["allowed", "redacted"]


def test_redaction_off_is_a_setting(stack: Settings) -> None:
    assert Settings.from_env({"PII_REDACTION": "off"}).pii_redaction is False
    assert Settings.from_env({}).pii_redaction is True


def test_denied_reads_are_audited(stack: Settings, tenant: str) -> None:
    with gateway(stack, key=key_for(stack, tenant, clearance="public")) as client:
        r = client.get("/memory/checkout", headers={"X-Clearance": "restricted"})
    assert r.status_code == 403, r.text
    request_id = r.headers["x-request-id"]
    rows = audit_rows(stack, request_id, 1)
    assert rows and rows[-1]["decision"] == "denied"
    assert "clearance" in rows[-1]["reason"]


def test_the_audit_is_queryable_by_an_admin(stack: Settings, api: httpx.Client) -> None:
    request_id = api.get("/memory/checkout").json()["policy"]["request_id"]
    audit_rows(stack, request_id, 2)
    with gateway(stack) as admin:
        r = admin.get("/admin/audit", params={"request_id": request_id})
    assert r.status_code == 200, r.text
    assert {i["decision"] for i in r.json()["items"]} == {"allowed", "redacted"}


# --- jurisdictions --------------------------------------------------------------------------
def billing(client: httpx.Client) -> set[str]:
    r = client.get("/dependencies/checkout")
    assert r.status_code == 200, r.text
    return {d["target"]["ceid"].split("-", 1)[1] for d in r.json()["dependencies"]}


@pytest.mark.parametrize(("jurisdictions", "visible"), [
    ((), {"eu", "us", "gb", "any"}),
    (("EU",), {"eu", "gb", "any"}),
    (("UK",), {"gb", "any"}),
    (("US", "UK"), {"us", "gb", "any"}),
])
def test_a_principal_sees_only_its_jurisdictions(
    stack: Settings, tenant: str, jurisdictions: tuple[str, ...], visible: set[str],
) -> None:
    with gateway(stack, key=key_for(stack, tenant, jurisdictions=jurisdictions)) as client:
        assert billing(client) == visible
        assert billing(client) == visible  # the cached answer keeps the restriction
        rows = client.post("/cypher", json={
            "query": "MATCH (s:Service) WHERE s.name STARTS WITH 'billing' "
                     "RETURN s.name AS n ORDER BY n"}).json()["rows"]
        assert {r[0].split("-", 1)[1] for r in rows} == visible


def test_a_diff_around_a_service_outside_the_jurisdictions_is_not_found(
    stack: Settings, tenant: str,
) -> None:
    """``/temporal?from&to&service=`` resolves the service in the reader's view: an EU-only
    service is unknown to a US principal (it was resolved without the jurisdictions)."""
    with psycopg.connect(stack.postgres_dsn) as conn:
        row = conn.execute("SELECT min(valid_at), max(valid_at) FROM snapshots "
                           "WHERE tenant_id = %s", (tenant,)).fetchone()
    assert row is not None
    window = {"from": row[0].isoformat(), "to": row[1].isoformat(), "service": "billing-eu"}
    with gateway(stack, key=key_for(stack, tenant, jurisdictions=("US",))) as client:
        hidden = client.get("/temporal", params=window)
    with gateway(stack, key=key_for(stack, tenant, jurisdictions=("EU",))) as client:
        seen = client.get("/temporal", params=window)
    assert hidden.status_code == 404, hidden.text  # before: 200, the service as the seed
    assert seen.status_code == 200, seen.text
    assert [s["ceid"] for s in seen.json()["evidence_bundle"]["seed"]] == ["service:billing-eu"]


def test_stored_risk_rankings_respect_jurisdictions(stack: Settings, tenant: str) -> None:
    with job_context(stack) as ctx:
        ranked = {item.ceid for item in risks_store.compute_and_store(ctx, job_scope(stack,
                                                                                    tenant))}
    assert "service:billing-us" in ranked
    ask = {"query": "What are the top 10 architectural risks?",
           "options": {"strategies": ["risks"], "top_k": 20}}
    with gateway(stack, key=key_for(stack, tenant, jurisdictions=("EU",))) as client:
        eu = client.post("/search", json=ask)
    with gateway(stack, key=key_for(stack, tenant)) as client:
        everyone = client.post("/search", json=ask)
    assert eu.status_code == everyone.status_code == 200, (eu.text, everyone.text)
    assert "billing-us" in json.dumps(everyone.json())
    assert "billing-us" not in json.dumps(eu.json())


def test_browser_procedures_in_cypher_are_refused_to_a_restricted_principal(
    stack: Settings, tenant: str,
) -> None:
    call = {"query": "CALL custom.substrate_retrieval_dependencies('x', 1, [], "
                     "'service:checkout') YIELD target RETURN target"}
    with gateway(stack, key=key_for(stack, tenant, jurisdictions=("EU",))) as client:
        refused = client.post("/cypher", json=call)
    assert refused.status_code == 403, refused.text
    assert "jurisdictions" in refused.json()["error"]["message"]
    with gateway(stack, key=key_for(stack, tenant)) as client:
        assert client.post("/cypher", json=call).status_code == 200


# --- community summaries per clearance and per snapshot ----------------------------------------
@pytest.fixture(scope="module")
def communities(stack: Settings, driver: Driver) -> Iterator[tuple[str, int, int]]:
    """v1: shop-a, shop-b (public, jurisdiction US) and vault-c (internal) call each other;
    v2: shop-d joins. Summaries are built at every level at v1 and again at v2."""
    name = f"t-com-{uuid.uuid4().hex[:8]}"
    writer = GraphWriter(stack, driver)
    svc = [node("service:shop-a", "Service", classification="public"),
           node("service:shop-b", "Service", classification="public", jurisdiction="US"),
           node("service:vault-c", "Service", classification="internal")]
    calls = [edge("CALLS", "service:shop-a", "service:shop-b"),
             edge("CALLS", "service:shop-b", "service:vault-c"),
             edge("CALLS", "service:vault-c", "service:shop-a")]
    embedder = make_embedder(stack)
    versions: list[int] = []
    for batch in (GraphBatch(nodes=svc, edges=calls),
                  GraphBatch(nodes=[node("service:shop-d", "Service", classification="public")],
                             edges=[edge("CALLS", "service:shop-d", "service:shop-a")])):
        version = writer.commit(batch, source="test", tenant=name).snapshot_version
        assert version is not None
        versions.append(version)
        with job_context(stack) as ctx:
            run_every_level(ctx, job_scope(stack, name), embedder)
    yield name, versions[0], versions[1]
    driver.execute_query("MATCH (n {tenant_id: $t}) DETACH DELETE n", t=name)
    with psycopg.connect(stack.postgres_dsn) as conn:
        conn.execute("DELETE FROM community_summaries WHERE tenant_id = %s", (name,))


def summaries(stack: Settings, tenant: str, **kw: Any) -> list[dict[str, Any]]:
    embedder = make_embedder(stack)
    return asyncio.run(global_search(stack, tenant, embedder.embed_query("shop services"), 10,
                                     **kw))


def test_a_public_reader_never_sees_a_summary_mentioning_an_internal_member(
    stack: Settings, communities: tuple[str, int, int],
) -> None:
    tenant, _, _ = communities
    public = summaries(stack, tenant, clearance="public")
    internal = summaries(stack, tenant, clearance="internal")
    assert public and internal
    assert all("vault-c" not in json.dumps(r, default=str) for r in public)
    assert any("vault-c" in r["summary"] for r in internal)
    with gateway(stack, key=key_for(stack, tenant, clearance="public")) as client:
        body = client.post("/search", json={"query": "Which communities do the shop services "
                                            "form?", "options": {
                                                "strategies": ["global_graphrag"]}}).json()
    assert "global_graphrag" in json.dumps(body["strategies"])
    assert "vault-c" not in json.dumps(body)


def test_a_pinned_read_gets_the_summaries_of_its_snapshot(
    stack: Settings, communities: tuple[str, int, int],
) -> None:
    tenant, v1, v2 = communities
    old = summaries(stack, tenant, clearance="internal", version=v1)
    new = summaries(stack, tenant, clearance="internal", version=v2)
    assert {r["snapshot_version"] for r in old} == {v1}
    assert {r["snapshot_version"] for r in new} == {v2}
    assert not any("shop-d" in r["summary"] for r in old)
    assert any("shop-d" in r["summary"] for r in new)
    with gateway(stack, key=key_for(stack, tenant)) as client:
        pinned = client.post("/search", json={
            "query": "Which communities do the shop services form?", "snapshot_version": v1,
            "options": {"strategies": ["global_graphrag"]}}).json()
    assert "shop-d" not in json.dumps(pinned)


def test_summaries_of_entities_outside_a_jurisdiction_are_not_served(
    stack: Settings, communities: tuple[str, int, int],
) -> None:
    tenant, _, _ = communities
    everyone = summaries(stack, tenant)
    assert any("shop-b" in r["summary"] for r in everyone)
    eu = summaries(stack, tenant, jurisdictions=["EU"])
    assert all("shop-b" not in json.dumps(r, default=str) for r in eu)
    assert len(eu) < len(everyone)
    assert summaries(stack, tenant, jurisdictions=["US"]) == everyone
