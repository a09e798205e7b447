"""When a part fails: 503 with ``Retry-After`` for a backend that is down, slow or shutting
down; 500 only for bugs, rendered without dropping the keep-alive connection.

Starlette hands ``Exception`` to its outermost ServerErrorMiddleware, which re-raises after
answering, and uvicorn then closes the connection. So bugs are caught one layer inside it by
:class:`CatchAll`, which answers 500 and does not re-raise (unless the response had already
started, where nothing else is possible).
"""

from __future__ import annotations

import asyncio
import logging

import nats.errors
import psycopg
import redis.exceptions
from neo4j.exceptions import (
    ConnectionPoolError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

RETRY_AFTER_S = 5
BACKEND_ERRORS: tuple[type[BaseException], ...] = (
    ServiceUnavailable,  # IncompleteCommit, a refused or lost Bolt connection
    SessionExpired, TransientError,  # Neo4j leader change, lock timeout, out of resources
    ConnectionPoolError,  # no pooled Neo4j connection within the acquisition timeout
    psycopg.OperationalError,  # AdminShutdown, connection refused, PoolTimeout, QueryCanceled
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    nats.errors.Error,
    asyncio.TimeoutError, ConnectionError,  # a deadline passed, a socket was refused
)


def unavailable_body(exc: BaseException) -> dict[str, object]:
    return {"error": {"code": "unavailable",
                      "message": "a backend is unavailable or too slow; retry later",
                      "detail": {"cause": type(exc).__name__, "error": str(exc)[:300]}}}


async def backend_unavailable(request: Request, exc: Exception) -> Response:
    log.warning("503 on %s: %s: %s", request.url.path, type(exc).__name__, exc)
    return JSONResponse(unavailable_body(exc), status_code=503,
                        headers={"Retry-After": str(RETRY_AFTER_S)})


def bug_body(exc: BaseException) -> dict[str, object]:
    return {"error": {"code": "internal_error", "message": type(exc).__name__,
                      "detail": str(exc)[:500]}}


class StartTracker:
    """A ``send`` that remembers whether the response has started (after that an error can
    no longer be answered with another status)."""

    def __init__(self, send: Send) -> None:
        self.send, self.started = send, False

    async def __call__(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self.send(message)


class CatchAll:
    """ASGI middleware: an unexpected exception becomes a 500 (a backend error that escaped
    the route's handlers a 503) and the connection stays open."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracked = StartTracker(send)
        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if tracked.started:
                raise
            if isinstance(exc, BACKEND_ERRORS):
                response = JSONResponse(unavailable_body(exc), status_code=503,
                                        headers={"Retry-After": str(RETRY_AFTER_S)})
            else:
                log.exception("500 on %s", scope.get("path"))
                response = JSONResponse(bug_body(exc), status_code=500)
            await response(scope, receive, send)
