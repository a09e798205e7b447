"""``/healthz`` (the process is alive) and ``/readyz``: 200 "ready", 200 "degraded" (answers
are still correct without Redis, NATS or timely events; the body names what is missing),
503 only when Neo4j or PostgreSQL cannot answer."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse

from substrate import __version__
from substrate.cache import redis_client
from substrate.settings import Settings


async def healthz(request: Request) -> JSONResponse:
    """Process liveness.
    ---
    summary: The gateway process is alive
    responses:
      200: {description: "{status, version}"}
    """
    return JSONResponse({"status": "alive", "version": __version__})


async def _neo4j(request: Request) -> str:
    driver = request.app.state.services.async_driver
    records, _, _ = await driver.execute_query(
        "RETURN apoc.version() AS apoc, gds.version() AS gds", routing_="r"
    )
    return f"apoc {records[0]['apoc']}, gds {records[0]['gds']}"


async def _postgres(settings: Settings) -> str:
    async with await psycopg.AsyncConnection.connect(settings.postgres_dsn, connect_timeout=3) as c:
        cur = await c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = await cur.fetchone()
    if row is None:
        raise RuntimeError("the vector extension is not installed")
    return f"pgvector {row[0]}"


async def _redis(settings: Settings) -> str:
    client = redis_client(settings, timeout=2)
    try:
        await client.ping()  # type: ignore[misc]
    finally:
        await client.aclose()
    return "pong"


async def _nats(settings: Settings) -> str:
    nc = await nats.connect(settings.nats_servers, connect_timeout=2, max_reconnect_attempts=0,
                            allow_reconnect=False)
    try:
        info = await nc.jetstream().account_info()
    finally:
        await nc.close()
    return f"jetstream streams={info.streams}"


ESSENTIAL = ("neo4j", "postgres")  # without these no answer can be served
CHECK_DEADLINE = 3.0  # seconds per part
STALE_OUTBOX_S = 30.0  # an unpublished snapshot older than this: events are delayed


async def readyz(request: Request) -> JSONResponse:
    """Readiness of every data part.
    ---
    summary: "ready, degraded (answers still correct: Redis, NATS or events missing) or 503"
    responses:
      200: {description: "{status: ready|degraded, missing, parts, outbox}"}
      503: {description: "Neo4j or PostgreSQL cannot answer: error body naming the part(s)"}
    """
    settings: Settings = request.app.state.services.settings
    checks: dict[str, Any] = {
        "neo4j": _neo4j(request), "postgres": _postgres(settings),
        "redis": _redis(settings), "nats": _nats(settings),
    }
    results = await asyncio.gather(
        *(asyncio.wait_for(c, CHECK_DEADLINE) for c in checks.values()), return_exceptions=True
    )
    parts = {}
    for name, result in zip(checks, results, strict=True):
        ok = not isinstance(result, BaseException)
        parts[name] = {"ok": ok, "detail": (str(result) or type(result).__name__)
                       if not ok else result}
    failing = sorted(n for n, p in parts.items() if not p["ok"])
    if any(n in ESSENTIAL for n in failing):
        body = {"error": {"code": "not_ready", "message": f"not ready: {', '.join(failing)}",
                          "detail": parts}}
        return JSONResponse(body, status_code=503, headers={"Retry-After": "5"})
    outbox = getattr(request.app.state, "outbox", None)
    status = outbox.status.to_dict() if outbox is not None else None
    missing = list(failing)
    if status and status["backlog"] and (status["oldest_age_s"] or 0) > STALE_OUTBOX_S:
        missing.append("events")  # graph.updated delayed: the outbox holds them
    return JSONResponse({"status": "degraded" if missing else "ready", "missing": missing,
                         "parts": parts, "outbox": status})
