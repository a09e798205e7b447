"""Request parsing shared by the routes: scope headers/params, typed query parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.requests import Request

from substrate.errors import BadRequest
from substrate.retrieval.scope import ReadScope
from substrate.retrieval.service import ReadService

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


def int_param(request: Request, name: str, default: int) -> int:
    return _number_param(request, name, default, int, "an integer")


def float_param(request: Request, name: str, default: float) -> float:
    return _number_param(request, name, default, float, "a number")


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
