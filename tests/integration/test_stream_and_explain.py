"""WS /stream streams the pipeline's stages; with a chat endpoint the answer is generated and
citations that are not in the bundle are dropped; /openapi.json documents the routes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import httpx
import websockets

from substrate.retrieval.context import SearchOptions
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.gateway_client import auth
from tests.support.openai_stub_server import OpenAIStubServer


def test_stream_sends_every_stage_in_order(stack: Settings) -> None:
    async def run() -> list[dict[str, Any]]:
        url = f"ws://127.0.0.1:{stack.gateway_port}/stream"
        messages = []
        async with websockets.connect(url, additional_headers=auth(stack)) as ws:
            await ws.send(json.dumps({"query": "What does checkout depend on?"}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                messages.append(msg)
                if msg["stage"] in ("done", "error"):
                    break
            await ws.send("{broken")
            messages.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
        return messages

    messages = asyncio.run(run())
    stages = [m["stage"] for m in messages]
    assert stages[0] == "route" and stages[-2:] == ["done", "error"]
    assert stages.index("answer") < stages.index("bundle") < stages.index("done")
    strategies = [m["data"]["name"] for m in messages if m["stage"] == "strategy"]
    assert set(strategies) == set(messages[0]["data"]["plan"])
    assert messages[0]["data"]["route"]["intent"] == "dependency"
    assert messages[-1]["data"]["error"]["code"] == "bad_request"


def test_generated_answer_keeps_only_citations_in_the_bundle(stack: Settings) -> None:
    def respond(prompt: str) -> str:
        assert "Evidence:" in prompt and "[1]" in prompt
        return "checkout calls payment [1] and fraud [2]; also the moon [99]."

    async def run(settings: Settings) -> dict[str, Any]:
        services = open_services(settings, check_templates=False)
        try:
            read = ReadService(services)
            scope = await read.scope("acme")
            return await read.search("What does checkout depend on?", scope, SearchOptions())
        finally:
            await services.aclose()

    with OpenAIStubServer(chat_responder=respond) as server:
        settings = dataclasses.replace(stack, chat_url=server.base_url, chat_model="stub")
        body = asyncio.run(run(settings))
        prompts = [b for path, b in server.requests if path.endswith("chat/completions")]
    assert prompts, "the chat endpoint was asked"
    assert "[1]" in body["answer"] and "[2]" in body["answer"]
    assert "[99]" not in body["answer"]
    assert body["degraded"] == []


def test_openapi_lists_the_endpoints(stack: Settings) -> None:
    spec = httpx.get(f"http://127.0.0.1:{stack.gateway_port}/openapi.json", timeout=10).json()
    for path in ("/search", "/cypher", "/dependencies/{service_id}", "/ownership/{service_id}",
                 "/memory/{service_id}", "/healthz", "/readyz"):
        assert path in spec["paths"], path


def test_hyde_runs_only_with_a_chat_endpoint_and_a_weak_match(stack: Settings) -> None:
    question = "zxqv flurble wombat procurement?"  # nothing in the graph is close to this

    async def run(settings: Settings) -> dict[str, Any]:
        services = open_services(settings, check_templates=False)
        try:
            read = ReadService(services)
            scope = await read.scope("acme")
            opts = SearchOptions(strategies=("hyde",), rerank=False)
            return await read.search(question, scope, opts)
        finally:
            await services.aclose()

    without = asyncio.run(run(stack))
    assert without["strategies"]["hyde"]["note"].startswith("skipped: no explain/cypher model role")
    assert without["results"] == []

    def respond(prompt: str) -> str:
        assert question in prompt
        return "The payment service authorises card payments through the fraud service."

    with OpenAIStubServer(chat_responder=respond) as server:
        settings = dataclasses.replace(stack, chat_url=server.base_url, chat_model="stub")
        body = asyncio.run(run(settings))
    assert body["strategies"]["hyde"]["status"] == "ok"
    assert body["strategies"]["hyde"]["note"] is None
    assert "service:payment" in [h["id"] for h in body["results"]]
