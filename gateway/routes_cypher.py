"""POST /cypher: read-only, scoped, pinned Cypher with typed results."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from gateway.params import service
from substrate.retrieval.cypher_run import parse_request, run_cypher


async def cypher(request: Request) -> JSONResponse:
    """Read-only Cypher, scoped to the tenant and pinned to a snapshot.
    ---
    summary: Read-only Cypher with typed results (RSN-02, RSN-07 AT(timestamp))
    description: >
      Body {"query": str, "params"?: {...}, "snapshot_version"?: int, "at"?: ISO-8601}; a
      trailing AT('2026-09-01T00:00:00Z') pins the query in time. Writes, admin commands,
      write procedures and multiple statements are refused (403); rows are capped
      (truncated + row_limit reported), and a timeout answers 408.
    responses:
      200: {description: "columns, rows (nodes, relationships, paths, scalars), truncated"}
      400: {description: invalid or unscopable Cypher}
      403: {description: write or admin attempt}
      408: {description: timeout}
    """
    body = await json_body(request)
    query, params, version, at = parse_request(body)
    svc = service(request)
    scope = await svc.scope(request.headers.get("x-tenant"), version, at,
                            request.headers.get("x-clearance"))
    settings = svc.settings
    result = await run_cypher(svc.services.async_driver, scope, query, params,
                              settings.cypher_row_limit, settings.cypher_timeout_seconds)
    return JSONResponse(result)
