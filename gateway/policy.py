"""The policy step of every request, as pure ASGI middleware (inside authentication and the
limits, so the principal is known): one decision before the route runs, PII redaction of what
it answers, one audit INSERT per request afterwards.

* Decision: :mod:`substrate.security.policy` (built-in rules, or OPA when ``OPA_URL`` is set)
  on {principal, action, tenant, clearance, resource}. Denied -> 403; the engine unavailable
  -> 503 with ``Retry-After`` (the request is denied, never let through unchecked).
* Redaction: every string of a JSON response (and of every WebSocket frame) goes through
  :class:`substrate.security.pii.Redactor` with the kinds the verdict names; a successful JSON
  object response gets ``"policy": {"redacted": {kind: count}, "engine", "request_id"}``. A
  route answering with :func:`policy_json` has its data redacted before it is serialised
  (once); every other JSON body is parsed, redacted and serialised again here.
* Audit: the decision (``allowed``/``denied``) and, when anything was redacted, a
  ``redacted`` row with the counts — queued when the response is sent and written with the
  other requests' rows by a background task within ``audit.AUDIT_FLUSH_S`` (one INSERT batch,
  no PostgreSQL connection per request; an audit failure is logged, it never fails one).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.limits import _send_error
from substrate import jsonwire
from substrate.errors import Forbidden
from substrate.retrieval.scope import DEFAULT_CLEARANCE
from substrate.security import audit, pii
from substrate.security.audit import PolicyDecision
from substrate.security.pii import Redactor
from substrate.security.policy import (
    ANONYMOUS,
    PolicyEngine,
    PolicyInput,
    PolicyUnavailable,
    Verdict,
    make_engine,
)
from substrate.security.principal import Principal
from substrate.settings import Settings

log = logging.getLogger(__name__)
# /metrics carries no tenant data: authentication and its handler's role check guard it
EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/metrics",
                          "/browser/guide"})
WS_POLICY_VIOLATION = 1008
WS_TRY_AGAIN_LATER = 1013


def action_for(method: str, path: str) -> str:
    """``read:/search``, ``write:/queue/approve``, ``admin:/admin/audit``."""
    parts = [p for p in path.split("/") if p]
    base = f"/{parts[0]}" if parts else "/"
    if base == "/admin":
        return "admin:" + "/".join(["", *parts[:2]])
    if base == "/queue" and method == "POST" and len(parts) == 3:
        return f"write:/queue/{parts[2]}"
    return f"read:{base}"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1")).strip() or None
    return None


@dataclass
class RequestPolicy:
    """What the policy decided for one request, and what it redacted."""

    request: PolicyInput
    request_id: str
    verdict: Verdict | None = None
    redactor: Redactor = field(default_factory=Redactor)
    refusal: str | None = None  # reason when the engine was unavailable
    answered: bool = False  # the route sent a policy_json answer: already redacted

    def redacted(self, data: Any, success: bool) -> Any:
        """``data`` redacted; a successful object answer also gets the ``policy`` block."""
        data = self.redactor.walk(data)  # the same object when nothing needed redacting
        if isinstance(data, dict) and success:
            return {**data, "policy": self.block()}
        return data

    def block(self) -> dict[str, Any]:
        return {"redacted": self.redactor.summary(),
                "engine": self.verdict.engine if self.verdict else None,
                "request_id": self.request_id}

    def decisions(self) -> list[PolicyDecision]:
        r = self.request
        base = {"principal": r.principal.id, "request_id": self.request_id,
                "tenant": r.tenant, "action": r.action}
        detail = {"clearance": r.clearance, "resource": r.resource,
                  "engine": self.verdict.engine if self.verdict else None}
        if self.verdict is None:
            return [PolicyDecision(**base, decision="denied",
                                   reason=self.refusal or "no decision", detail=detail)]
        out = [PolicyDecision(**base, decision="allowed" if self.verdict.allow else "denied",
                              reason=self.verdict.reason, detail=detail)]
        if self.redactor.counts:
            out.append(PolicyDecision(
                **base, decision="redacted",
                reason="PII redacted: " + ", ".join(
                    f"{k} x{n}" for k, n in self.redactor.summary().items()),
                detail={**detail, "redacted": self.redactor.summary()}))
        return out


class PolicyMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings | None = None,
                 engine: PolicyEngine | None = None) -> None:
        self.app = app
        self.settings = settings or Settings.from_env()
        self.engine = engine or make_engine(self.settings)
        if self.settings.pii_redaction:
            pii.warm_up()
        self._audits = audit.AuditBatch()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        policy = self._request(scope)
        try:
            policy.verdict = await self.engine.decide(policy.request)
        except PolicyUnavailable as exc:
            policy.refusal = exc.message
            self._audit(scope, policy)
            await self._refuse(scope, receive, send, exc, {"Retry-After": str(exc.retry_after)})
            return
        if not policy.verdict.allow:
            self._audit(scope, policy)
            refusal = Forbidden(f"denied by policy: {policy.verdict.reason}",
                                {"action": policy.request.action, "engine": policy.verdict.engine,
                                 "request_id": policy.request_id})
            await self._refuse(scope, receive, send, refusal, {})
            return
        policy.redactor.kinds = policy.verdict.redact
        scope["state"]["policy"] = policy
        try:
            if scope["type"] == "websocket":
                await self.app(scope, receive, self._ws_send(send, policy))
            else:
                await self._http(scope, receive, send, policy)
        finally:
            self._audit(scope, policy)

    # --- the decision ------------------------------------------------------------------
    def _request(self, scope: Scope) -> RequestPolicy:
        state = scope.setdefault("state", {})
        principal: Principal = state.get("principal") or ANONYMOUS
        request_id = state.get("request_id") or uuid.uuid4().hex
        state["request_id"] = request_id
        tenant = (_header(scope, b"x-tenant") or principal.default_tenant
                  or self.settings.tenant)
        anonymous = principal is ANONYMOUS
        clearance = (_header(scope, b"x-clearance")
                     or (DEFAULT_CLEARANCE if anonymous else principal.max_clearance)).lower()
        method = scope.get("method", "GET")
        return RequestPolicy(PolicyInput(principal, action_for(method, scope["path"]), tenant,
                                         clearance, scope["path"]), request_id)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, exc: Any,
                      headers: dict[str, str]) -> None:
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            code = WS_TRY_AGAIN_LATER if isinstance(exc, PolicyUnavailable) \
                else WS_POLICY_VIOLATION
            await send({"type": "websocket.close", "code": code, "reason": exc.message[:120]})
            return
        await _send_error(send, exc, headers)

    # --- redaction -----------------------------------------------------------------------
    async def _http(self, scope: Scope, receive: Receive, send: Send,
                    policy: RequestPolicy) -> None:
        start: Message | None = None
        chunks: list[bytes] = []

        async def redacting_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if policy.answered or not _is_json(message):
                    await send(message)
                    return
                start = message
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = self._redact_body(b"".join(chunks), policy, start.get("status", 200) < 400)
            headers = [(k, v) for k, v in start.get("headers", ()) if k != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, redacting_send)

    def _redact_body(self, raw: bytes, policy: RequestPolicy, success: bool) -> bytes:
        """Redacted JSON; a successful object answer also gets the ``policy`` block (errors
        keep their ``{"error": ...}`` shape)."""
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return raw
        return _dumps(policy.redacted(data, success))

    def _ws_send(self, send: Send, policy: RequestPolicy) -> Send:
        async def redacting_send(message: Message) -> None:
            if message["type"] == "websocket.send" and message.get("text"):
                try:
                    frame = json.loads(message["text"])
                except ValueError:
                    frame = None
                if isinstance(frame, dict):
                    frame = policy.redactor.walk(frame)
                    if frame.get("stage") == "done" and isinstance(frame.get("data"), dict):
                        frame["data"]["policy"] = policy.block()
                    message = {**message, "text": json.dumps(frame, default=str)}
            await send(message)

        return redacting_send

    # --- audit ---------------------------------------------------------------------------
    def _audit(self, scope: Scope, policy: RequestPolicy) -> None:
        read = getattr(scope["app"].state, "read", None) if "app" in scope else None
        pool = getattr(read, "pool", None)
        if pool is None:
            log.warning("policy audit not written (no database pool): %s",
                        [d.reason for d in policy.decisions()])
            return
        self._audits.add(pool, policy.decisions())

    async def drain(self) -> None:
        """Write the queued audit rows now (shutdown, tests)."""
        await self._audits.drain()


def _dumps(data: Any) -> bytes:
    return jsonwire.dumps(data)


class _Redacted(JSONResponse):
    """A JSON answer whose data the policy step already redacted: sent as it is."""

    def __init__(self, content: Any, policy: RequestPolicy) -> None:
        self.policy = policy
        super().__init__(content)

    def render(self, content: Any) -> bytes:
        return jsonwire.dumps(content)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.policy.answered = True  # set when this answer, not an error instead, is sent
        await super().__call__(scope, receive, send)


def policy_json(request: Request, content: dict[str, Any]) -> JSONResponse:
    """A 200 JSON answer redacted by the request's policy step on its data (one
    serialisation instead of the middleware's parse, redact and serialise again); the same
    body, ``policy`` block included. No policy step (an exempt path): a plain JSONResponse."""
    policy = request.scope.get("state", {}).get("policy")
    if not isinstance(policy, RequestPolicy):
        return JSONResponse(content)
    return _Redacted(policy.redacted(content, True), policy)


def _is_json(start: Message) -> bool:
    for key, value in start.get("headers", ()):
        if key == b"content-type":
            return bytes(value).startswith(b"application/json")
    return False
