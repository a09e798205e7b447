"""GET /cache/stats: the query cache's counters and the invalidator's delay figures."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from substrate.cache_invalidator import CacheRuntime


async def cache_stats(request: Request) -> JSONResponse:
    """Query cache and invalidation figures.
    ---
    summary: Query cache statistics (RSN-13)
    description: >
      cache - hits, misses, stored / not stored entries, stale entries (the tenant changed
      and its event is not applied yet), Redis availability, TTL, early starts (reads
      computed with their lookup because their kind mostly misses; unused: the lookup hit)
      and each kind's recent miss rate. invalidation - the
      durable JetStream consumer (connected, events applied, entries evicted, backlog
      events caught up after an outage) and the delay from an event's publication to its
      eviction (last, recent p50 and max, the newest events). snapshot_clock - the
      in-process snapshot versions unpinned reads are scoped with (live, latest, events
      seen, PostgreSQL refreshes, scopes served from memory and fallbacks).
    responses:
      200: {description: cache and invalidation statistics}
    """
    runtime: CacheRuntime = request.app.state.cache
    clock = request.app.state.read.clock
    return JSONResponse({**runtime.stats(),
                         "snapshot_clock": clock.to_dict() if clock is not None else None})
