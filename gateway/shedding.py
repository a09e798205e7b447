"""Back-pressure and deadlines, as pure ASGI middleware: latency stays bounded under load.

* At most ``MAX_INFLIGHT_REQUESTS`` requests run at once (per gateway process); up to
  ``MAX_QUEUED_REQUESTS`` more wait for a slot, each at most ``QUEUE_WAIT_SECONDS``. Beyond
  that, or after that wait, the answer is 503 with ``Retry-After`` (load shed) at once.
* Every request has ``REQUEST_DEADLINE_SECONDS`` (the /search budget too); past it the work is
  cancelled and the answer is 503 with ``Retry-After``: a client never waits longer, whatever
  a backend does (a stopped PostgreSQL or Neo4j included).

Probes, metrics and the OpenAPI document are exempt (they must answer while shedding).
WebSockets are not counted: each message of /stream is bounded by the search's own budget.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.failures import StartTracker
from substrate.settings import Settings

log = logging.getLogger(__name__)

EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/openapi.json"})
RETRY_AFTER_S = 2


@dataclass
class SheddingStats:
    inflight: int = 0
    queued: int = 0
    shed: int = 0
    deadline_exceeded: int = 0


def _unavailable(code: str, message: str, detail: dict[str, object]) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "detail": detail}},
                        status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})


class SheddingMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.deadline = settings.request_deadline_seconds
        self.max_queued = settings.max_queued_requests
        self.queue_wait = settings.queue_wait_seconds
        self.slots = asyncio.Semaphore(settings.max_inflight_requests)
        self.stats = SheddingStats()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if not await self._acquire():
            self.stats.shed += 1
            await _unavailable("overloaded", "the gateway is at capacity; retry later",
                               {"queued": self.stats.queued})(scope, receive, send)
            return
        self.stats.inflight += 1
        try:
            await self._within_deadline(scope, receive, send)
        finally:
            self.stats.inflight -= 1
            self.slots.release()

    async def _acquire(self) -> bool:
        if not self.slots.locked():
            await self.slots.acquire()
            return True
        if self.stats.queued >= self.max_queued:
            return False
        self.stats.queued += 1
        try:
            await asyncio.wait_for(self.slots.acquire(), self.queue_wait)
            return True
        except TimeoutError:
            return False
        finally:
            self.stats.queued -= 1

    async def _within_deadline(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracked = StartTracker(send)
        try:
            async with asyncio.timeout(self.deadline):  # no task per request (wait_for's)
                await self.app(scope, receive, tracked)
        except TimeoutError:
            self.stats.deadline_exceeded += 1
            log.warning("deadline of %.0f s passed on %s", self.deadline, scope["path"])
            if tracked.started:
                raise
            await _unavailable("deadline_exceeded",
                               f"no answer within the {self.deadline:.0f} s deadline",
                               {"deadline_s": self.deadline})(scope, receive, send)
