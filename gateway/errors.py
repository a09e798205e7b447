"""One error type, one renderer: ``{"error": {"code", "message", "detail"}}``."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from substrate.errors import BadRequest, SubstrateError


async def substrate_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SubstrateError)
    return JSONResponse(exc.to_dict(), status_code=exc.status)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = {"error": {"code": code, "message": str(exc.detail), "detail": None}}
    return JSONResponse(body, status_code=exc.status_code)


async def server_error(request: Request, exc: Exception) -> Response:
    body = {"error": {"code": "internal_error", "message": type(exc).__name__,
                      "detail": str(exc)[:500]}}
    return JSONResponse(body, status_code=500)


EXCEPTION_HANDLERS: dict[Any, Any] = {
    SubstrateError: substrate_error,
    HTTPException: http_error,
    Exception: server_error,
}

MAX_BODY = 64 * 1024


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, or BadRequest (malformed, not an object, too large)."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise BadRequest(f"request body larger than {MAX_BODY} bytes", {"size": len(raw)})
    try:
        data = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest("malformed JSON body", {"error": str(exc)}) from exc
    if not isinstance(data, dict):
        raise BadRequest("the JSON body must be an object", {"got": type(data).__name__})
    return data
