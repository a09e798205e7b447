"""The verification queue over HTTP: GET /queue, POST /queue/{id}/approve|reject.

Tenant from the caller's grant (``X-Tenant`` narrows it); approving or rejecting needs the
``reviewer`` role and is recorded under the authenticated principal. Approval writes the
item through the write path (a sync driver, NATS publish via ``asyncio.run``), so it runs in
a worker thread; so do the short PostgreSQL calls.
"""

from __future__ import annotations

from typing import Any

import psycopg
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from gateway.params import int_param, principal, tenant_and_clearance
from substrate.errors import BadRequest
from substrate.graph import review
from substrate.graph import verification as vq
from substrate.graph.writer import GraphWriter
from substrate.services import Services

MAX_LIMIT = 1000


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def _tenant(request: Request) -> str:
    tenant, _clearance = tenant_and_clearance(request)
    return tenant


def _item_id(request: Request) -> int:
    raw = request.path_params["item_id"]
    try:
        return int(raw)
    except ValueError as exc:
        raise BadRequest("the item id must be an integer", {"id": raw}) from exc


async def _actor(request: Request) -> str:
    """The authenticated reviewer: decisions are audited under the principal's id, never a
    name from the body (an optional JSON body may carry a ``comment``)."""
    who = principal(request)
    who.require_role("reviewer")
    body = await json_body(request) if await request.body() else {}
    unknown = set(body) - {"comment"}
    if unknown:
        raise BadRequest("unknown fields (the actor is the authenticated principal)",
                         {"unknown": sorted(unknown)})
    return who.id


def _list(dsn: str, tenant: str, status: str, limit: int) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        return vq.list_items(conn, tenant, status, limit)


async def list_queue(request: Request) -> JSONResponse:
    """Items of the verification queue.
    ---
    summary: List the verification queue (low-confidence or ambiguous extracted items)
    description: >
      Query: status pending|approved|rejected (default pending), limit 1..1000 (default 100).
      Header X-Tenant (default: the configured tenant).
    responses:
      200: {description: "tenant, status and items (id, kind, record, confidence, reason,
        source, status, created_at, decided_at, decided_by, snapshot_version)"}
      400: {description: bad status or limit}
    """
    status = request.query_params.get("status", "pending")
    limit = int_param(request, "limit", 100)
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be 1..{MAX_LIMIT}", {"limit": limit})
    tenant = _tenant(request)
    dsn = _services(request).settings.postgres_dsn
    items = await run_in_threadpool(_list, dsn, tenant, status, limit)
    return JSONResponse({"tenant": tenant, "status": status, "items": items})


def _approve(services: Services, tenant: str, item_id: int, actor: str) -> dict[str, Any]:
    writer = GraphWriter(services.settings, services.driver, services.embedder,
                         services.ontology, services.cypher)
    return review.approve(writer, tenant, item_id, actor)


async def approve(request: Request) -> JSONResponse:
    """Approve an item: it is written with its evidence as a new snapshot.
    ---
    summary: Approve a verification item
    description: Role reviewer. Optional JSON body {"comment"}. Header X-Tenant narrows the grant.
    responses:
      200: {description: "id, status approved, snapshot_version"}
      400: {description: "bad id or body, or the item is already decided"}
      404: {description: no such item in the tenant}
      422: {description: the write path rejected the record (e.g. an endpoint is missing)}
    """
    item_id, actor = _item_id(request), await _actor(request)
    out = await run_in_threadpool(_approve, _services(request), _tenant(request), item_id, actor)
    return JSONResponse(out)


async def reject(request: Request) -> JSONResponse:
    """Reject an item: nothing is written to the graph.
    ---
    summary: Reject a verification item
    description: Role reviewer. Optional JSON body {"comment"}. Header X-Tenant narrows the grant.
    responses:
      200: {description: "id, status rejected"}
      400: {description: "bad id or body, or the item is already decided"}
      404: {description: no such item in the tenant}
    """
    item_id, actor = _item_id(request), await _actor(request)
    dsn = _services(request).settings.postgres_dsn
    out = await run_in_threadpool(review.reject, dsn, _tenant(request), item_id, actor)
    return JSONResponse(out)
