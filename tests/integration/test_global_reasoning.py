"""Global GraphRAG map-reduce (RSN-14), RAPTOR (RSN-05) and their policy on the real stack.

A throw-away tenant holds two public clusters (storefront: shop-web, shop-search, product
catalogue; money: billing, invoices) and one internal service, ``vault-keeper``, that three
public services depend on. The communities job runs at the public and internal levels. A
public reader must never get a community summary or RAPTOR node that names the internal
service, over the stores or over HTTP. The map step is scored without a model and with the
``scout`` role (the OpenAI-compatible stub server: a real local HTTP peer), a failing scout
falls back batch by batch, the reduce cites the members' evidence, and ``WS /stream`` carries
the map results as they come.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
import websockets

from gds_jobs.communities import run_every_level
from gds_jobs.raptor import tree_nodes
from gds_jobs.runtime import JobContext, job_context, job_scope
from substrate.db import neo4j_driver
from substrate.embeddings import TextEmbedder, make_embedder
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.context import SearchContext, SearchOptions, StrategyResult
from substrate.retrieval.global_mapreduce import global_mapreduce
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.router import classify
from substrate.retrieval.scope import ReadScope, clearance_for
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.gateway_client import auth, gateway
from tests.support.graphstate import drop_tenant_graph
from tests.support.openai_stub_server import OpenAIStubServer, StubHTTPError

pytestmark = pytest.mark.integration

SECRET = "vault-keeper"
PUBLIC = {"shop-web": "Storefront web pages for shoppers",
          "shop-search": "Product search for the storefront",
          "catalogue": "Product catalogue with prices and pictures",
          "billing": "Bills customers for their orders",
          "invoices": "Issues invoices and credit notes"}
EDGES = [("shop-web", "shop-search"), ("shop-web", "catalogue"), ("shop-search", "catalogue"),
         ("billing", "invoices"), ("invoices", "billing"),
         ("shop-web", SECRET), ("billing", SECRET), ("invoices", SECRET)]
QUESTION = "How does the storefront find products for shoppers?"


def _batch() -> GraphBatch:
    nodes = [NodeRecord(f"service:{n}", "Service", {"name": n, "description": d,
                                                    "classification": "public"})
             for n, d in PUBLIC.items()]
    nodes.append(NodeRecord(f"service:{SECRET}", "Service", {
        "name": SECRET, "description": "Holds the signing keys", "classification": "internal"}))
    edges = [EdgeRecord("CALLS", f"service:{a}", f"service:{b}", f"test://{a}/{b}#L1",
                        source="test") for a, b in EDGES]
    return GraphBatch(nodes, edges)


@pytest.fixture(scope="module")
def embedder(stack: Settings) -> TextEmbedder:
    return make_embedder(stack)


@pytest.fixture(scope="module")
def tenant(stack: Settings, embedder: TextEmbedder) -> Iterator[str]:
    name = f"t-global-{uuid.uuid4().hex[:8]}"
    driver = neo4j_driver(stack)
    try:
        GraphWriter(stack, driver, embedder=None).commit(_batch(), source="test", tenant=name)
        with job_context(stack) as ctx:
            run_every_level(ctx, job_scope(stack, name), embedder, ("public", "internal"))
        yield name
    finally:
        drop_tenant_graph(driver, name)
        driver.close()
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            for table in ("community_summaries", "community_state", "raptor_nodes"):
                conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (name,))


def _stored_text(stack: Settings, tenant: str, clearance: str) -> list[str]:
    with psycopg.connect(stack.postgres_dsn) as conn:
        rows = conn.execute(
            "SELECT title || ' ' || summary || ' ' || members::text FROM community_summaries "
            "WHERE tenant_id = %s AND clearance = %s UNION ALL "
            "SELECT title || ' ' || summary || ' ' || members::text FROM raptor_nodes "
            "WHERE tenant_id = %s AND clearance = %s",
            (tenant, clearance, tenant, clearance)).fetchall()
    return [str(r[0]) for r in rows]


def test_a_public_reader_never_sees_a_summary_naming_an_internal_member(
    stack: Settings, tenant: str
) -> None:
    public, internal = _stored_text(stack, tenant, "public"), _stored_text(stack, tenant,
                                                                          "internal")
    assert public and not any(SECRET in t for t in public)
    assert any(SECRET in t for t in internal)  # the internal level does know it
    body = {"query": "Which service holds the signing keys billing relies on?",
            "options": {"strategies": ["global_graphrag", "raptor", "community_search"],
                        "rerank": False}}
    with gateway(stack, headers={"X-Tenant": tenant, "X-Clearance": "public"}) as client:
        answer = client.post("/search", json=body)
    assert answer.status_code == 200
    assert SECRET not in answer.text
    assert answer.json()["strategies"]["global_graphrag"]["trace"]  # it did read summaries
    with gateway(stack, headers={"X-Tenant": tenant, "X-Clearance": "internal"}) as client:
        assert SECRET in client.post("/search", json=body).text


async def _run(settings: Settings, tenant: str, emitted: list[tuple[str, Any]],
               clearance: str = "internal") -> StrategyResult:
    services = open_services(settings, check_templates=False)
    embedder = make_embedder(settings)

    async def embed(text: str) -> list[float]:
        return list(embedder.embed_query(text))

    async def emit(stage: str, data: dict[str, Any]) -> None:
        emitted.append((stage, data))

    try:
        ctx = SearchContext(settings, QUESTION, classify(QUESTION),
                            ReadScope(tenant, 2**53 - 2, clearance_for(clearance), False),
                            GraphReader(services.async_driver, services.cypher),
                            embed_query=embed, options=SearchOptions(), services=services,
                            emit=emit)
        return await global_mapreduce(ctx)
    finally:
        await services.aclose()


def test_map_reduce_without_a_model_scores_every_summary_and_cites_evidence(
    stack: Settings, tenant: str
) -> None:
    emitted: list[tuple[str, Any]] = []
    result = asyncio.run(_run(stack, tenant, emitted))
    maps = [d for s, d in emitted if s == "map"]
    scored = {x["community_id"] for d in maps for x in d["scores"]}
    assert scored == {t["community_id"] for t in result.trace}  # every summary was mapped
    assert all(d["scorer"] == "embedding+keyword" for d in maps)
    best = result.trace[0]
    assert best["reduced"] and "shop-search" in best["title"]
    assert result.note is not None and re.search(r"\[\d+\]", result.note)
    assert result.hops and all(h["evidence_ref"].startswith("test://") for h in result.hops)
    assert any(h["from"] == "service:shop-web" for h in result.hops)


def _scout_reply(prompt: str) -> str:
    if "Summaries:" not in prompt:  # the reduce step
        return "The storefront searches products through shop-search [1]."
    ids = re.findall(r"^id: (\S+)$", prompt, re.M)
    blocks = prompt.split("\n\nid: ")
    scores = [{"id": i, "score": 9 if "shop-search" in b else 1} for i, b in
              zip(ids, blocks[1:] if len(blocks) > len(ids) else blocks, strict=False)]
    return json.dumps({"scores": scores})


def test_map_reduce_with_the_scout_role_and_its_failure(stack: Settings, tenant: str) -> None:
    with OpenAIStubServer(chat_responder=_scout_reply) as server:
        env = {**stack.env, "MODEL_SCOUT_URL": server.base_url, "MODEL_SCOUT_NAME": "scout",
               "MODEL_MAX_RETRIES": "0"}
        emitted: list[tuple[str, Any]] = []
        result = asyncio.run(_run(replace(stack, env=env), tenant, emitted))
    assert {d["scorer"] for s, d in emitted if s == "map"} == {"scout"}
    assert result.note == "The storefront searches products through shop-search [1]."
    usage = result.facts[-1]["model_usage"]
    assert {c["role"] for c in usage["calls"]} == {"scout"} and len(usage["calls"]) >= 2

    def broken(prompt: str) -> str:
        raise StubHTTPError(500)

    with OpenAIStubServer(chat_responder=broken) as server:
        env = {**stack.env, "MODEL_SCOUT_URL": server.base_url, "MODEL_MAX_RETRIES": "0"}
        emitted = []
        failed = asyncio.run(_run(replace(stack, env=env), tenant, emitted))
    assert {d["scorer"] for s, d in emitted if s == "map"} == {
        "embedding+keyword (scout failed)"}
    assert failed.note is not None and failed.note.startswith("Across the system:")
    assert failed.facts[0]["reduce_error"]


def test_raptor_summaries_come_from_the_scout_role_when_configured(
    stack: Settings, tenant: str
) -> None:
    with OpenAIStubServer(chat_responder=lambda p: "A storefront domain.") as server:
        env = {**stack.env, "MODEL_SCOUT_URL": server.base_url, "MODEL_MAX_RETRIES": "0"}
        with job_context(stack) as ctx:
            nodes = _tree(ctx, replace(stack, env=env), tenant)
    assert {n.summary for n in nodes if n.level in (0, 1)} == {"A storefront domain."}
    assert all(n.summary != "A storefront domain." for n in nodes if n.level in (2, 3))


def _tree(ctx: JobContext, settings: Settings, tenant: str) -> list[Any]:
    from gds_jobs.communities import detect_communities, summarise

    scope = job_scope(settings, tenant, clearance="internal")
    items = summarise(ctx, scope, detect_communities(ctx, scope))
    members = sorted({m for i in items for m in i.community.members})
    facts = {r["member"]["ceid"]: r for r in ctx.rows("gds/entity_facts", scope, ceids=members)}
    return tree_nodes(items, facts, {}, settings)


def test_stream_carries_the_map_results_before_the_answer(stack: Settings, tenant: str) -> None:
    async def run() -> list[dict[str, Any]]:
        url = f"ws://127.0.0.1:{stack.gateway_port}/stream"
        out = []
        headers = auth(stack, **{"X-Tenant": tenant, "X-Clearance": "internal"})
        async with websockets.connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps({"query": QUESTION, "options": {
                "strategies": ["global_graphrag", "raptor"], "rerank": False}}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 120))
                out.append(msg)
                if msg["stage"] in ("done", "error"):
                    return out

    stages = [m["stage"] for m in asyncio.run(run())]
    assert "map" in stages and stages[-1] == "done"
    assert stages.index("map") < stages.index("answer")
