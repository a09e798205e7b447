"""Request observation, as the outermost middleware, and ``GET /metrics``.

:class:`ObserveMiddleware` times every HTTP request into
``substrate_http_request_seconds{method, route, status}`` (the route *template*, so the label
values stay bounded), binds the request's state for the JSON logs (request id, tenant,
principal), writes one access line per request (``substrate.access`` at INFO: method, route,
status, ms; ``LOG_LEVEL=WARNING`` silences it) and names the request span
``METHOD /route/{param}`` with those attributes. When tracing is on
(:func:`substrate.observability.tracing.configure_tracing`), OpenTelemetry's ASGI
instrumentation wraps it and opens the request span.

``/metrics`` is authenticated like every other route: an admin principal, or — so a Prometheus
scraper needs no admin key — ``Authorization: Bearer $METRICS_TOKEN`` when that is set (the
token opens ``/metrics`` only; see :mod:`gateway.authn`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry import trace
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.params import principal
from substrate.observability.logs import bind_request, unbind_request
from substrate.observability.metrics import HTTP_SECONDS
from substrate.security.principal import Principal

ACCESS = logging.getLogger("substrate.access")
METRICS_PATH = "/metrics"
METRICS_PRINCIPAL = Principal(id="metrics-token", kind="metrics_token", tenants=frozenset(),
                              max_clearance="public", roles=frozenset())


class ObserveMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._templates: dict[Any, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        tenant = next((v.decode("latin-1") for k, v in scope.get("headers", ())
                       if k == b"x-tenant"), None)
        token = bind_request(state, tenant)
        status = [500]

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                self._annotate(scope, state, tenant)  # the request span ends with the body
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, observed_send)
        finally:
            self._record(scope, status[0], time.perf_counter() - started)
            unbind_request(token)

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        if scope["type"] != "http":
            return
        route, method = self._route(scope), scope["method"]
        HTTP_SECONDS.labels(method, route, str(status)).observe(seconds)
        if ACCESS.isEnabledFor(logging.INFO):  # the access line: one per request
            ACCESS.info("%s %s %s", method, route, status, extra={
                "route": route, "status": status, "ms": round(seconds * 1000, 2)})

    def _annotate(self, scope: Scope, state: dict[str, Any], tenant: str | None) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            route = self._route(scope)
            span.update_name(f"{scope.get('method', 'WS')} {route}")
            who = state.get("principal")
            span.set_attributes({
                "http.route": route, "substrate.request_id": state.get("request_id", ""),
                "substrate.principal": getattr(who, "id", ""),
                "substrate.tenant": tenant or getattr(who, "default_tenant", None) or ""})

    def _route(self, scope: Scope) -> str:
        """The matched route's path template; refused requests never reached the router."""
        app = scope.get("app")
        routes = getattr(getattr(app, "router", None), "routes", ())
        endpoint = scope.get("endpoint")
        if endpoint is not None:
            if not self._templates:
                self._templates = {getattr(r, "endpoint", None): getattr(r, "path", "")
                                   for r in routes}
            found = self._templates.get(endpoint)
            if found:
                return found
        for r in routes:
            if r.matches(scope)[0] is Match.FULL:
                return str(getattr(r, "path", "unmatched"))
        return "unmatched"


async def metrics(request: Request) -> Response:
    """Prometheus metrics.
    ---
    summary: Prometheus metrics (text exposition format)
    description: >
      Role admin, or the bearer token METRICS_TOKEN when that is set. Request latency per
      route, strategy and Cypher template; query cache counters and hit ratio; invalidation
      lag; model tokens, cost and latency; policy decisions; GDS job durations and ingest
      figures of the batch processes (label batch); process figures.
    responses:
      200: {description: text/plain exposition}
      403: {description: neither an admin nor the metrics token}
    """
    who = principal(request)
    if who is not METRICS_PRINCIPAL:
        who.require_role("admin")
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
