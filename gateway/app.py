"""The Starlette application: routes declared as data, resources in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import Route

from gateway.errors import EXCEPTION_HANDLERS
from gateway.health import healthz, readyz
from substrate.services import open_services
from substrate.settings import Settings


def routes() -> list[Route]:
    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.services = open_services(settings)
        try:
            yield
        finally:
            await app.state.services.aclose()

    return Starlette(routes=routes(), exception_handlers=EXCEPTION_HANDLERS, lifespan=lifespan)
