"""The limits middleware in process, with Redis unreachable: the rate limit fails open (the
service keeps answering), the body-size and concurrency limits still hold."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.errors import EXCEPTION_HANDLERS, json_body
from gateway.limits import LimitsMiddleware
from substrate.security.limits import ConcurrencyCap, caller_key
from substrate.settings import Settings


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _app(tmp_path: Path, gate: asyncio.Event | None = None) -> Starlette:
    settings = Settings.from_env({"SUBSTRATE_HOME": str(tmp_path), "MAX_BODY_BYTES": "1000",
                                  "MAX_CONCURRENT_PER_PRINCIPAL": "2",
                                  "REDIS_URL": f"redis://127.0.0.1:{_dead_port()}/0"})

    async def echo(request: Request) -> JSONResponse:
        body = await json_body(request)
        if gate is not None:
            await gate.wait()
        return JSONResponse({"keys": sorted(body)})

    return Starlette(routes=[Route("/echo", echo, methods=["POST"])],
                     middleware=[Middleware(LimitsMiddleware, settings=settings)],
                     exception_handlers=EXCEPTION_HANDLERS)


def _client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def test_redis_down_fails_open(tmp_path: Path) -> None:
    async def run() -> int:
        async with _client(_app(tmp_path)) as client:
            return (await client.post("/echo", json={"a": 1})).status_code

    assert asyncio.run(run()) == 200


def test_bodies_over_the_limit_are_413_declared_or_streamed(tmp_path: Path) -> None:
    async def chunks() -> object:
        for _ in range(10):
            yield b" " * 400

    async def run() -> tuple[int, int, str]:
        async with _client(_app(tmp_path)) as client:
            declared = await client.post("/echo", content=b"{}" + b" " * 2000)
            streamed = await client.post("/echo", content=chunks())  # type: ignore[arg-type]
            return declared.status_code, streamed.status_code, streamed.json()["error"]["code"]

    assert asyncio.run(run()) == (413, 413, "payload_too_large")


def test_the_concurrency_cap_refuses_at_once(tmp_path: Path) -> None:
    async def run() -> list[int]:
        gate = asyncio.Event()
        async with _client(_app(tmp_path, gate)) as client:
            tasks = [asyncio.create_task(client.post("/echo", json={})) for _ in range(3)]
            done, _ = await asyncio.wait(tasks, timeout=2, return_when=asyncio.FIRST_COMPLETED)
            refused = [t.result() for t in done]
            gate.set()
            rest = await asyncio.gather(*(t for t in tasks if t not in done))
            return sorted(r.status_code for r in [*refused, *rest])

    assert asyncio.run(run()) == [200, 200, 429]


def test_cap_counts_per_caller_and_releases() -> None:
    cap = ConcurrencyCap(1)
    assert cap.acquire("a") and not cap.acquire("a") and cap.acquire("b")
    cap.release("a")
    assert cap.acquire("a") and cap.inflight == {"a": 1, "b": 1}


def test_the_caller_is_the_principal_else_the_address() -> None:
    class P:
        id = "key:k1"

    assert caller_key({"principal": P()}, ("10.0.0.1", 5)) == "principal:key:k1"
    assert caller_key({}, ("10.0.0.1", 5)) == "addr:10.0.0.1"
    assert caller_key(None, None) == "addr:unknown"
