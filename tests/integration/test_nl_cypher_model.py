"""The ``cypher`` model role against the local OpenAI-compatible server (real HTTP), scripted
to answer with valid, invalid, write-attempting, other-tenant and slow Cypher: each ends in
the right rows, a repair, a refusal or a fallback with its reason — never a write, never
another tenant's data. The queries run on the stack's real Neo4j through ``run_cypher``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from substrate.retrieval.context import SearchContext, SearchOptions
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher.strategy import nl_cypher
from substrate.retrieval.router import classify
from substrate.retrieval.scope import ReadScope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.openai_stub_server import OpenAIStubServer

VALID = "MATCH (s:Service)-[:CALLS]->(:Service {ceid: 'service:auth'}) RETURN s.ceid AS ceid"
INVALID = "MATCH (s:Service)-[:CALLS]->(t RETURN s"
WRITE = "MATCH (s:Service {ceid: 'service:auth'}) DETACH DELETE s"
OTHER_TENANT = "MATCH (s:Service) WHERE s.tenant_id = 'globex' RETURN s.ceid AS ceid"
ALL = "MATCH (s:Service) RETURN s.ceid AS ceid, s.tenant_id AS tenant"


def scripted(*replies: str, delay: float = 0.0) -> Callable[[str], str]:
    queue = list(replies)

    def respond(prompt: str) -> str:
        time.sleep(delay)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


@pytest.fixture
def run(stack: Settings) -> Iterator[Callable[..., dict[str, Any]]]:
    servers: list[OpenAIStubServer] = []

    def go(*replies: str, delay: float = 0.0, tenant: str = "acme",
           timeout: str = "5") -> dict[str, Any]:
        server = OpenAIStubServer(chat_responder=scripted(*replies, delay=delay)).start()
        servers.append(server)
        env = {**stack.env, "MODEL_CYPHER_URL": server.base_url, "MODEL_CYPHER_NAME": "cypher-lora",
               "MODEL_CYPHER_TIMEOUT_SECONDS": timeout, "MODEL_MAX_RETRIES": "0",
               "NL_CYPHER_TRANSLATOR": "model", "MODEL_COSTS": "cypher=0.5"}
        settings = replace(stack, env=env)
        result = asyncio.run(_strategy(settings, tenant))
        fact: dict[str, Any] = result.facts[0]
        fact["_requests"] = [b for p, b in server.requests if p == "/v1/chat/completions"]
        fact["_hits"] = [h.id for h in result.hits]
        return fact

    yield go
    for s in servers:
        s.stop()


async def _strategy(settings: Settings, tenant: str) -> Any:
    services = open_services(settings, check_templates=False)
    try:
        question = "Find all services calling auth directly"
        ctx = SearchContext(settings, question, classify(question),
                            ReadScope(tenant, 2**53 - 2, ("public", "internal"), False),
                            GraphReader(services.async_driver, services.cypher),
                            embed_query=_no_embedding, options=SearchOptions(),
                            services=services)
        return await nl_cypher(ctx)
    finally:
        await services.aclose()


async def _no_embedding(text: str) -> list[float]:
    raise AssertionError("the nl_cypher strategy needs no embedding")


def test_valid_cypher_returns_the_rows_and_accounts_the_call(run: Callable[..., Any]) -> None:
    fact = run("```cypher\n" + VALID + "\n```")
    assert fact["translator"] == "model" and fact["cypher"] == VALID
    assert sorted(fact["_hits"]) == ["service:api-gateway", "service:mobile-bff"]
    (call,) = fact["usage"]["calls"]
    assert call["role"] == "cypher" and call["model"] == "cypher-lora" and call["ok"]
    assert fact["_requests"][0]["model"] == "cypher-lora"
    prompt = fact["_requests"][0]["messages"][-1]["content"]
    assert "(:Service)-[:CALLS]->(:Service)" in prompt  # the live schema
    assert "Find all services calling auth directly" in prompt and "QUERY:" in prompt


def test_invalid_cypher_gets_one_repair_round_with_the_error(run: Callable[..., Any]) -> None:
    fact = run(INVALID, VALID)
    assert [a["outcome"] for a in fact["attempts"]] == ["invalid", "ok"]
    assert fact["attempts"][1]["repair"] is True
    repair_prompt = fact["_requests"][1]["messages"][-1]["content"]
    assert INVALID in repair_prompt and "Error:" in repair_prompt
    assert sorted(fact["_hits"]) == ["service:api-gateway", "service:mobile-bff"]


def test_still_invalid_after_repair_falls_back_with_the_reason(run: Callable[..., Any]) -> None:
    fact = run(INVALID, INVALID)
    assert [a["outcome"] for a in fact["attempts"]] == ["invalid", "invalid"]
    assert "rows" not in fact and "model: invalid query" in fact["fallback"]


def test_a_write_is_refused_and_nothing_is_written(run: Callable[..., Any],
                                                   stack: Settings) -> None:
    fact = run(WRITE)
    assert [a["outcome"] for a in fact["attempts"]] == ["refused"]
    assert fact["attempts"][0]["status"] == 403 and "refused" in fact["fallback"]
    assert sorted(run(VALID)["_hits"]) == ["service:api-gateway", "service:mobile-bff"]


def test_another_tenants_data_is_out_of_scope(run: Callable[..., Any]) -> None:
    fact = run(OTHER_TENANT)
    assert fact["attempts"][0]["outcome"] == "empty" and "no rows" in fact["fallback"]
    fact = run(ALL, tenant="globex")  # the acme graph is invisible to another tenant
    assert fact["attempts"][0]["outcome"] == "empty"
    fact = run(ALL)
    assert {row[1] for row in fact["rows"]} == {"acme"}


def test_a_slow_model_times_out_into_the_fallback(run: Callable[..., Any]) -> None:
    fact = run(VALID, delay=3.0, timeout="1")
    assert [a["outcome"] for a in fact["attempts"]] == ["model_error"]
    assert "model call failed" in fact["fallback"]
    assert fact["usage"]["calls"][0]["ok"] is False
