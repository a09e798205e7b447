"""GET /cache/stats: the query cache's counters and the invalidator's delay figures."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from substrate.cache_invalidator import CacheRuntime


async def cache_stats(request: Request) -> JSONResponse:
    """Hits, misses, stores, Redis availability; events applied, evictions, and the delay
    from an event's publication to its eviction (last, recent p50 / max)."""
    runtime: CacheRuntime = request.app.state.cache
    return JSONResponse(runtime.stats())
