"""Request parsing shared by the routes: scope headers/params, typed query parameters."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from substrate.errors import BadRequest
from substrate.retrieval.scope import ReadScope
from substrate.retrieval.service import ReadService


def service(request: Request) -> ReadService:
    svc: ReadService = request.app.state.read
    return svc


def int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise BadRequest(f"{name} must be an integer", {name: raw}) from exc


def float_param(request: Request, name: str, default: float) -> float:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise BadRequest(f"{name} must be a number", {name: raw}) from exc


def bool_param(request: Request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise BadRequest(f"{name} must be true or false", {name: raw})


async def scope_from(request: Request, body: dict[str, Any] | None = None) -> ReadScope:
    """Tenant and clearance from headers; snapshot pin from the body or query string."""
    body = body or {}
    version: Any = body.get("snapshot_version")
    if version is None and "snapshot_version" in request.query_params:
        version = int_param(request, "snapshot_version", 0)
    at = body.get("at", request.query_params.get("at"))
    return await service(request).scope(
        request.headers.get("x-tenant"), version, at, request.headers.get("x-clearance"),
    )
