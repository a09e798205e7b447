"""The Starlette application: routes declared as data, resources in the lifespan."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute

from gateway import (
    routes_admin,
    routes_cache,
    routes_counterfactual,
    routes_cypher,
    routes_graph,
    routes_guide,
    routes_queue,
    routes_search,
    routes_time,
    routes_timeline,
)
from gateway.authn import AuthMiddleware
from gateway.errors import EXCEPTION_HANDLERS
from gateway.failures import CatchAll
from gateway.health import healthz, readyz
from gateway.inputs import QueryStringGuard
from gateway.limits import LimitsMiddleware
from gateway.observe import ObserveMiddleware, metrics
from gateway.openapi import document as openapi_document
from gateway.policy import PolicyMiddleware
from gateway.shedding import SheddingMiddleware
from substrate.cache_invalidator import start_cache
from substrate.graph.outbox import OutboxPublisher
from substrate.observability import metrics as substrate_metrics
from substrate.observability.logs import configure_logging
from substrate.observability.tracing import configure_tracing
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings


async def openapi(request: Request) -> JSONResponse:
    return JSONResponse(openapi_document(request.app.routes))


def routes() -> list[BaseRoute]:
    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/search", routes_search.search, methods=["POST"]),
        Route("/cypher", routes_cypher.cypher, methods=["POST"]),
        Route("/dependencies/{service_id}", routes_graph.dependencies, methods=["GET"]),
        Route("/ownership/{service_id}", routes_graph.ownership, methods=["GET"]),
        Route("/memory/{service_id}", routes_graph.memory, methods=["GET"]),
        Route("/intent-check", routes_time.intent_check, methods=["POST"]),
        Route("/temporal", routes_time.temporal, methods=["GET"]),
        Route("/impact/{item_id}", routes_time.impact, methods=["GET"]),
        Route("/counterfactual", routes_counterfactual.counterfactual, methods=["POST"]),
        Route("/timeline/{entity_id}", routes_timeline.entity_timeline, methods=["GET"]),
        Route("/timeline-relate", routes_timeline.timeline_relate, methods=["GET"]),
        Route("/queue", routes_queue.list_queue, methods=["GET"]),
        Route("/queue/{item_id}/approve", routes_queue.approve, methods=["POST"]),
        Route("/queue/{item_id}/reject", routes_queue.reject, methods=["POST"]),
        Route("/cache/stats", routes_cache.cache_stats, methods=["GET"]),
        Route("/admin/audit", routes_admin.audit_log, methods=["GET"]),
        Route("/admin/keys", routes_admin.keys, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/browser/guide", routes_guide.browser_guide, methods=["GET"],
              include_in_schema=False),  # HTML for Neo4j Browser, open: not part of the JSON API
        WebSocketRoute("/stream", routes_search.stream),
        Route("/openapi.json", openapi, methods=["GET"], include_in_schema=False),
    ]


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.services = open_services(settings)
        app.state.cache = start_cache(settings, app.state.services.ontology)
        substrate_metrics.bind_cache(app.state.cache.cache.stats)
        app.state.read = ReadService(app.state.services, app.state.cache.cache)
        await app.state.read.open(snapshot_clock=True)
        await asyncio.to_thread(app.state.read.warm_up)  # load the embedder before serving
        app.state.outbox = OutboxPublisher(settings, app.state.services.driver,
                                           app.state.services.cypher)
        app.state.outbox.start()  # also reconciles interrupted writes, first round at once
        # what start-up built (~200k objects: the ontology, the templates, the embedder) is
        # set aside by the cyclic collector: a full collection no longer walks it (a
        # ~110 ms pause every ~1,500 requests without it)
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await app.state.outbox.aclose()
            await app.state.read.aclose()
            await app.state.cache.aclose()
            await app.state.services.aclose()

    configure_logging(settings)
    substrate_metrics.serve_batch_files(settings.home)
    # outermost first: observation (request span, latency, log context) sees every request;
    # authentication (which sets the principal) must come before the limits
    middleware = [*_tracing_middleware(settings), Middleware(CatchAll),
                  Middleware(ObserveMiddleware),
                  Middleware(AuthMiddleware, settings=settings), Middleware(QueryStringGuard),
                  Middleware(LimitsMiddleware, settings=settings),
                  Middleware(SheddingMiddleware, settings=settings),
                  Middleware(PolicyMiddleware, settings=settings)]
    return Starlette(routes=routes(), middleware=middleware,
                     exception_handlers=EXCEPTION_HANDLERS, lifespan=lifespan)


def _tracing_middleware(settings: Settings) -> list[Middleware]:
    """OpenTelemetry's ASGI instrumentation (the request span) when tracing is on."""
    if not configure_tracing(settings):
        return []
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return [Middleware(OpenTelemetryMiddleware, exclude_spans=["receive", "send"])]
