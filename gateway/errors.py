"""One error type, one renderer: ``{"error": {"code", "message", "detail"}}``."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.failures import BACKEND_ERRORS, RETRY_AFTER_S, backend_unavailable, bug_body
from gateway.inputs import parse_json
from substrate.errors import BadRequest, SubstrateError


async def substrate_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SubstrateError)
    headers = {"Retry-After": str(RETRY_AFTER_S)} if exc.status == 503 else None
    return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = {"error": {"code": code, "message": str(exc.detail), "detail": None}}
    return JSONResponse(body, status_code=exc.status_code)


async def server_error(request: Request, exc: Exception) -> Response:
    return JSONResponse(bug_body(exc), status_code=500)


# a bug is caught by gateway.failures.CatchAll first (keeps the connection); ``Exception``
# stays registered for what escapes it (an error after the response started)
EXCEPTION_HANDLERS: dict[Any, Any] = {
    SubstrateError: substrate_error,
    HTTPException: http_error,
    **dict.fromkeys(BACKEND_ERRORS, backend_unavailable),
    Exception: server_error,
}

MAX_BODY = 64 * 1024


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, or BadRequest (malformed, not an object, too large, too
    deep, non-finite numbers, bad Unicode: see gateway.inputs)."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise BadRequest(f"request body larger than {MAX_BODY} bytes", {"size": len(raw)})
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise BadRequest("the JSON body must be an object", {"got": type(data).__name__})
    return data
