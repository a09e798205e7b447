"""503 for backends, 500 only for bugs (gateway.failures), and load shedding / deadlines
(gateway.shedding), on a small Starlette app in process."""

from __future__ import annotations

import asyncio
import threading

import psycopg
from neo4j.exceptions import IncompleteCommit
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from gateway.errors import EXCEPTION_HANDLERS
from gateway.failures import CatchAll
from gateway.shedding import SheddingMiddleware
from substrate.settings import Settings


async def incomplete(request: Request) -> JSONResponse:
    raise IncompleteCommit("connection lost during commit")


async def shutdown(request: Request) -> JSONResponse:
    raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")


async def bug(request: Request) -> JSONResponse:
    raise KeyError("oops")


async def slow(request: Request) -> JSONResponse:
    await asyncio.sleep(float(request.query_params.get("s", "5")))
    return JSONResponse({"ok": True})


def app(**env: str) -> Starlette:
    settings = Settings.from_env(env)
    routes = [Route("/incomplete", incomplete), Route("/shutdown", shutdown),
              Route("/bug", bug), Route("/slow", slow)]
    return Starlette(routes=routes, exception_handlers=EXCEPTION_HANDLERS, middleware=[
        Middleware(CatchAll), Middleware(SheddingMiddleware, settings=settings)])


def test_backend_failures_are_503_with_retry_after() -> None:
    with TestClient(app(), raise_server_exceptions=False) as client:
        for path, cause in (("/incomplete", "IncompleteCommit"), ("/shutdown", "AdminShutdown")):
            response = client.get(path)
            assert response.status_code == 503 and response.headers["retry-after"]
            assert response.json()["error"]["detail"]["cause"] == cause


def test_a_bug_is_a_500_with_the_error_body_not_a_raised_exception() -> None:
    # raise_server_exceptions=True: an exception that escaped CatchAll would raise here
    with TestClient(app(), raise_server_exceptions=True) as client:
        response = client.get("/bug")
        assert response.status_code == 500
        assert response.json()["error"]["code"] == "internal_error"
        assert client.get("/slow?s=0").status_code == 200


def test_past_the_deadline_the_answer_is_503() -> None:
    with TestClient(app(REQUEST_DEADLINE_SECONDS="0.2")) as client:
        response = client.get("/slow?s=5")
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "deadline_exceeded"
        assert response.headers["retry-after"]


def test_beyond_capacity_requests_are_shed_at_once() -> None:
    with TestClient(app(MAX_INFLIGHT_REQUESTS="1", MAX_QUEUED_REQUESTS="0")) as client:
        codes: list[int] = []
        first = threading.Thread(target=lambda: codes.append(client.get("/slow?s=1").status_code))
        first.start()
        threading.Event().wait(0.3)
        shed = client.get("/slow?s=0")
        first.join()
        assert shed.status_code == 503 and shed.json()["error"]["code"] == "overloaded"
        assert codes == [200]


def test_a_queued_request_waits_for_a_slot() -> None:
    with TestClient(app(MAX_INFLIGHT_REQUESTS="1", MAX_QUEUED_REQUESTS="4",
                        QUEUE_WAIT_SECONDS="5")) as client:
        codes: list[int] = []
        first = threading.Thread(target=lambda: codes.append(client.get("/slow?s=0.5").status_code))
        first.start()
        threading.Event().wait(0.1)
        assert client.get("/slow?s=0").status_code == 200
        first.join()
        assert codes == [200]
