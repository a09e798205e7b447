"""POST /cypher: read-only, scoped, pinned Cypher with typed results."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from gateway.params import service
from substrate.retrieval.cypher_run import parse_request, run_cypher


async def cypher(request: Request) -> JSONResponse:
    body = await json_body(request)
    query, params, version, at = parse_request(body)
    svc = service(request)
    scope = await svc.scope(request.headers.get("x-tenant"), version, at,
                            request.headers.get("x-clearance"))
    settings = svc.settings
    result = await run_cypher(svc.services.async_driver, scope, query, params,
                              settings.cypher_row_limit, settings.cypher_timeout_seconds)
    return JSONResponse(result)
