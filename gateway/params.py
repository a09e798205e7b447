"""Request parsing shared by the routes: scope headers/params, typed query parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.requests import HTTPConnection, Request

from gateway.inputs import finite
from substrate.errors import BadRequest, Forbidden
from substrate.retrieval.scope import ReadScope
from substrate.retrieval.service import ReadService
from substrate.security.principal import Principal

N = TypeVar("N", int, float)


def service(request: Request) -> ReadService:
    svc: ReadService = request.app.state.read
    return svc


def _number_param(request: Request, name: str, default: N, cast: Callable[[str], N],
                  kind: str) -> N:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return cast(raw)
    except ValueError as exc:
        raise BadRequest(f"{name} must be {kind}", {name: raw}) from exc


MAX_INT_PARAM = 1_000_000_000  # counts, offsets, depths and ids in query strings


def int_param(request: Request, name: str, default: int, low: int = 0,
              high: int = MAX_INT_PARAM) -> int:
    raw = request.query_params.get(name, "")
    if len(raw) > 20:  # int() of a huge digit string is slow and never in range
        raise BadRequest(f"{name} must be {low}..{high}", {name: raw[:40]})
    value = _number_param(request, name, default, int, "an integer")
    if value != default and not low <= value <= high:
        raise BadRequest(f"{name} must be {low}..{high}",
                         {"option": name, "allowed": [low, high], "got": value})
    return value


def float_param(request: Request, name: str, default: float) -> float:
    value = _number_param(request, name, default, float, "a number")
    return finite(name, value, request.query_params.get(name, ""))


def bool_param(request: Request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise BadRequest(f"{name} must be true or false", {name: raw})


def principal(conn: HTTPConnection) -> Principal:
    """The authenticated caller (set by gateway.authn.AuthMiddleware)."""
    found = getattr(conn.state, "principal", None)
    if not isinstance(found, Principal):
        raise Forbidden("no authenticated principal for this request")
    return found


def tenant_and_clearance(conn: HTTPConnection) -> tuple[str, str]:
    """The tenant and clearance of a request: the grant's, narrowed by ``X-Tenant`` /
    ``X-Clearance`` (which can never widen it: 403)."""
    who = principal(conn)
    requested = conn.headers.get("x-tenant")
    if requested is not None and not requested.strip():
        raise BadRequest("X-Tenant is empty: name a tenant or leave the header out")
    svc: ReadService = conn.app.state.read
    tenant = who.tenant_for(requested.strip() if requested else None, svc.settings.tenant)
    return tenant, who.clearance_for(conn.headers.get("x-clearance"))


async def scope_from(request: HTTPConnection, body: dict[str, Any] | None = None
                     ) -> ReadScope:
    """Tenant and clearance from the principal (narrowed by headers); snapshot pin from the
    body or query string."""
    body = body or {}
    version: Any = body.get("snapshot_version")
    if version is None and "snapshot_version" in request.query_params:
        raw = request.query_params["snapshot_version"]
        try:
            version = int(raw)
        except ValueError as exc:
            raise BadRequest("snapshot_version must be an integer",
                             {"snapshot_version": raw}) from exc
    at = body.get("at", request.query_params.get("at"))
    tenant, clearance = tenant_and_clearance(request)
    svc: ReadService = request.app.state.read
    return await svc.scope(tenant, version, at, clearance, principal(request).jurisdictions)
