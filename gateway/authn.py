"""Authentication, as the outermost pure ASGI middleware: who is calling, from where.

Every HTTP request and WebSocket must present credentials, except liveness, readiness and
the OpenAPI document. This module only reads the request; what the credentials are worth
is decided by :class:`substrate.security.authenticate.Authenticator`:

* ``Authorization: Bearer sk_…`` — an API key (:mod:`substrate.security.apikeys`);
* ``Authorization: Bearer <JWT>`` — an OIDC token checked against the configured JWKS
  (:mod:`substrate.security.tokens`);
* ``X-Substrate-Identity: <JWT>`` — a trusted upstream gateway's signed identity (HS256 with
  ``UPSTREAM_IDENTITY_SECRET``); bare identity headers are never trusted;
* WebSocket only (browsers cannot set headers there): ``?access_token=`` carries the same.

Before that: the ``Host`` header must name an allowed host (DNS rebinding: a page of
``evil.example`` resolving to 127.0.0.1 gets 400), a WebSocket's ``Origin`` must be allowed
(no ``Origin``: not a browser, allowed), and request bodies of POSTs must be
``application/json`` (415): a cross-site form cannot post to the gateway. The principal and a
request id go into ``scope["state"]`` (``request.state.principal``/``request_id``); the id is
echoed as ``X-Request-Id``. Refusals are JSON error bodies (401 with ``WWW-Authenticate``,
400, 403, 415; a WebSocket is closed with 1008) and are written to the policy audit.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import uuid
from typing import Any
from urllib.parse import parse_qs

from psycopg_pool import AsyncConnectionPool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.limits import _send_error
from gateway.observe import METRICS_PATH, METRICS_PRINCIPAL
from substrate.errors import (
    BadRequest,
    Forbidden,
    SubstrateError,
    Unauthorized,
    UnsupportedMediaType,
)
from substrate.security import audit
from substrate.security.audit import PolicyDecision
from substrate.security.authenticate import Authenticator, Credentials
from substrate.security.principal import Principal
from substrate.settings import Settings

log = logging.getLogger(__name__)
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/browser/guide"})
REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
WS_POLICY_VIOLATION = 1008
MAX_PENDING_AUDITS = 256


def _headers(scope: Scope) -> dict[bytes, str]:
    return {k.lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}


def host_name(host: str) -> str:
    """``127.0.0.1:8080`` -> ``127.0.0.1``; ``[::1]:8080`` -> ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class AuthMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        self.settings = settings or Settings.from_env()
        self.hosts = {h.lower() for h in self.settings.host_allow_list}
        self.origins = {o.lower().rstrip("/") for o in self.settings.origin_allow_list}
        self.authenticator = Authenticator(self.settings, self._pool)
        self._app_state: Any = None
        self._pending: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self._app_state is None and "app" in scope:
            self._app_state = scope["app"].state
        headers = _headers(scope)
        state = scope.setdefault("state", {})
        incoming = headers.get(b"x-request-id", "")
        request_id = incoming if REQUEST_ID.match(incoming) else uuid.uuid4().hex
        state["request_id"] = request_id
        if scope["type"] == "http":
            send = self._with_request_id(send, request_id)
        try:
            self._check_host(headers)
            if scope["path"] not in OPEN_PATHS:
                if scope["type"] == "websocket":
                    self._check_origin(headers)
                state["principal"] = await self._authenticate(scope, headers)
                if scope["type"] == "http" and scope.get("method") in ("POST", "PUT", "PATCH"):
                    self._check_json(headers)
        except SubstrateError as exc:
            self._audit(scope, state.get("principal"), request_id, exc)
            await self._refuse(scope, receive, send, exc)
            return
        await self.app(scope, receive, send)

    # --- checks --------------------------------------------------------------------------
    def _check_host(self, headers: dict[bytes, str]) -> None:
        host = host_name(headers.get(b"host", ""))
        if host not in self.hosts:
            raise BadRequest("this Host is not served here (allowed hosts: ALLOWED_HOSTS)",
                             {"host": host[:100]})

    def _check_origin(self, headers: dict[bytes, str]) -> None:
        origin = headers.get(b"origin")
        if origin is not None and origin.lower().rstrip("/") not in self.origins:
            raise Forbidden("WebSocket Origin not allowed (ALLOWED_ORIGINS)",
                               {"origin": origin[:100]})

    @staticmethod
    def _check_json(headers: dict[bytes, str]) -> None:
        kind = headers.get(b"content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            raise UnsupportedMediaType("request bodies must be application/json",
                                       {"content_type": kind or None})

    async def _authenticate(self, scope: Scope, headers: dict[bytes, str]) -> Principal:
        if scope["path"] == METRICS_PATH and self._is_metrics_token(headers):
            return METRICS_PRINCIPAL  # METRICS_TOKEN opens /metrics and nothing else
        access_token = ""
        if scope["type"] == "websocket":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            access_token = (query.get("access_token") or [""])[0]
        return await self.authenticator.authenticate(Credentials.from_authorization(
            headers.get(b"authorization", ""), headers.get(b"x-substrate-identity", ""),
            access_token))

    def _is_metrics_token(self, headers: dict[bytes, str]) -> bool:
        token = self.settings.env.get("METRICS_TOKEN", "")
        given = headers.get(b"authorization", "").removeprefix("Bearer ").strip()
        return bool(token) and hmac.compare_digest(given.encode(), token.encode())

    def _pool(self) -> AsyncConnectionPool[Any] | None:
        read = getattr(self._app_state, "read", None) if self._app_state else None
        return getattr(read, "pool", None)

    # --- answers -------------------------------------------------------------------------
    @staticmethod
    def _with_request_id(send: Send, request_id: str) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        return wrapped

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send,
                      exc: SubstrateError) -> None:
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": WS_POLICY_VIOLATION,
                        "reason": exc.message[:120]})
            return
        extra = {"WWW-Authenticate": 'Bearer realm="substrate"'} \
            if isinstance(exc, Unauthorized) else {}
        if exc.status == 503:
            extra["Retry-After"] = "5"
        await _send_error(send, exc, extra)

    def _audit(self, scope: Scope, principal: Principal | None, request_id: str,
               exc: SubstrateError) -> None:
        read = getattr(scope["app"].state, "read", None) if "app" in scope else None
        pool = getattr(read, "pool", None)
        if pool is None or len(self._pending) >= MAX_PENDING_AUDITS:
            return  # a flood of refusals must not queue unbounded database writes
        decision = PolicyDecision(
            principal=principal.id if principal else "anonymous", request_id=request_id,
            action=f"authenticate:{scope.get('method', 'WS')} {scope['path']}"[:200],
            decision="denied", reason=f"{exc.status} {exc.code}: {exc.message}"[:500])
        task = asyncio.get_running_loop().create_task(audit.record(pool, decision))
        self._pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("authentication audit write failed: %r", task.exception())
