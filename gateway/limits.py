"""Bounded work per request, as pure ASGI middleware (inside authentication, so the caller is
the authenticated principal when there is one, else the client address).

* Body size: a ``Content-Length`` over ``MAX_BODY_BYTES`` is refused before the app runs; a
  body without one is counted while it streams in and refused (413) as soon as it passes the
  limit, so at most one chunk beyond the limit is ever held (uvicorn stops reading the socket
  while the app does not consume). ``gateway.errors.json_body`` keeps its own check.
* Rate: GCRA in Redis per caller (``RATE_LIMIT_PER_MINUTE``, ``RATE_LIMIT_BURST``) -> 429 with
  ``Retry-After``; fails open when Redis is unreachable (see substrate/security/limits.py).
* Concurrency: at most ``MAX_CONCURRENT_PER_PRINCIPAL`` requests in flight per caller, counted
  per gateway process (one replica) -> 429 with ``Retry-After: 1``.

``/healthz`` (liveness, no work) is exempt from rate and concurrency limits so a supervisor
can tell a busy gateway from a dead one. A WebSocket connection counts as one request when it
opens; its messages are bounded by uvicorn's ``ws_max_size`` (= MAX_BODY_BYTES).
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from substrate.cache import redis_client
from substrate.errors import SubstrateError
from substrate.security.limits import (
    ConcurrencyCap,
    PayloadTooLarge,
    RateLimited,
    RateLimiter,
    caller_key,
)
from substrate.settings import Settings

EXEMPT_PATHS = frozenset({"/healthz"})
WS_TRY_AGAIN_LATER = 1013


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_error(send: Send, exc: SubstrateError, headers: dict[str, str]) -> None:
    body = json.dumps(exc.to_dict()).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           *((k.lower().encode(), v.encode()) for k, v in headers.items())]
    await send({"type": "http.response.start", "status": exc.status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class LimitsMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        self.settings = settings or Settings.from_env()
        self.max_body = self.settings.max_body_bytes
        self.rate = RateLimiter(redis_client(self.settings), self.settings.rate_limit_per_minute,
                                self.settings.rate_limit_burst)
        self.concurrency = ConcurrencyCap(self.settings.max_concurrent_per_principal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        caller = caller_key(scope.get("state"), scope.get("client"))
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send, caller)
            return
        length = _content_length(scope)
        if length is not None and length > self.max_body:
            await _send_error(send, self._too_large(length), {"Connection": "close"})
            return
        if not self.concurrency.acquire(caller):
            await _send_error(send, self._too_many(), {"Retry-After": "1"})
            return
        try:
            decision = await self.rate.check(caller)
            if not decision.allowed:
                refusal = self._rate_limited(decision.retry_after_header)
                await _send_error(send, refusal, {"Retry-After": str(refusal.retry_after)})
                return
            await self._bounded_body(scope, receive, send)
        finally:
            self.concurrency.release(caller)

    async def _bounded_body(self, scope: Scope, receive: Receive, send: Send) -> None:
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise self._too_large(received)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except PayloadTooLarge as exc:  # the app let it through: answer it here
            if started:
                raise
            await _send_error(send, exc, {"Connection": "close"})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send, caller: str) -> None:
        decision = await self.rate.check(caller)
        if not decision.allowed:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": WS_TRY_AGAIN_LATER,
                        "reason": f"rate limited; retry after {decision.retry_after_header}s"})
            return
        await self.app(scope, receive, send)

    # --- refusals ------------------------------------------------------------------------
    def _too_large(self, size: int) -> PayloadTooLarge:
        return PayloadTooLarge(f"request body larger than {self.max_body} bytes",
                               {"limit": self.max_body, "received_at_least": size})

    def _too_many(self) -> RateLimited:
        return RateLimited(
            f"more than {self.concurrency.limit} requests in flight for this caller", 1,
            {"limit": self.concurrency.limit, "kind": "concurrency"})

    def _rate_limited(self, retry_after: int) -> RateLimited:
        s = self.settings
        return RateLimited(
            f"rate limit of {s.rate_limit_per_minute} requests per minute "
            f"(burst {s.rate_limit_burst}) exceeded", retry_after,
            {"limit_per_minute": s.rate_limit_per_minute, "burst": s.rate_limit_burst,
             "retry_after_s": retry_after, "kind": "rate"})

