"""Administration: GET /admin/audit (the policy audit trail), GET /admin/keys (API keys and
their grants, never a secret). Role ``admin``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.params import int_param, principal, service
from substrate.errors import BadRequest
from substrate.security import apikeys, audit

DECISIONS = ("allowed", "denied", "redacted")


async def audit_log(request: Request) -> JSONResponse:
    """Policy decisions, newest first.
    ---
    summary: Policy audit trail (allowed, denied, redacted decisions)
    description: >
      Role admin. Query: principal, request_id, decision (allowed|denied|redacted), before
      (an id: older rows, for paging), limit 1..1000 (default 100).
    responses:
      200: {description: "items: id, at, principal, request_id, tenant, action, decision,
        reason, detail"}
      400: {description: bad parameter}
      403: {description: not an admin}
    """
    principal(request).require_role("admin")
    q = request.query_params
    decision = q.get("decision")
    if decision is not None and decision not in DECISIONS:
        raise BadRequest("decision must be allowed, denied or redacted", {"decision": decision})
    limit = int_param(request, "limit", 100)
    if not 1 <= limit <= 1000:
        raise BadRequest("limit must be 1..1000", {"limit": limit})
    before = int_param(request, "before", 0) or None
    pool = service(request).pool
    assert pool is not None
    items = await audit.query(pool, principal=q.get("principal"),
                              request_id=q.get("request_id"), decision=decision,
                              before=before, limit=limit)
    return JSONResponse({"items": items})


async def keys(request: Request) -> JSONResponse:
    """API keys and their grants.
    ---
    summary: API keys (id, name, tenants, clearance, roles, jurisdictions, created, revoked)
    description: Role admin. Secrets are never stored, so never shown; create and revoke
      keys with `substrate keys create|revoke`.
    responses:
      200: {description: "items: id, name, tenants, clearance, roles, jurisdictions,
        created_at, revoked_at"}
      403: {description: not an admin}
    """
    principal(request).require_role("admin")
    pool = service(request).pool
    assert pool is not None
    return JSONResponse({"items": await apikeys.list_keys_async(pool)})
