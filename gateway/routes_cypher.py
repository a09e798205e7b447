"""POST /cypher: read-only, scoped, pinned Cypher with typed results."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from gateway.params import scope_from, service
from gateway.policy import policy_json
from substrate.retrieval.cypher_run import parse_request, run_cypher
from substrate.retrieval.temporal_props import past_values, rewind


async def cypher(request: Request) -> JSONResponse:
    """Read-only Cypher, scoped to the tenant and pinned to a snapshot.
    ---
    summary: Read-only Cypher with typed results (RSN-02, RSN-07 AT(timestamp))
    description: >
      Body {"query": str, "params"?: {...}, "snapshot_version"?: int, "at"?: ISO-8601}; a
      trailing AT('2026-09-01T00:00:00Z') pins the query in time. The query is parsed with
      Neo4j's Cypher 5 grammar and every pattern element is scoped to the caller's tenant,
      clearance and snapshot; the EXPLAIN plan is checked again. Writes, admin commands and
      multiple statements are refused (403); unparseable or unscopable queries, procedures
      and functions off the allow-lists, risky regexes, huge range() and cartesian products
      400; rows and bytes are capped (truncated, truncated_by), a timeout answers 408 and
      the transaction memory limit 422.
    responses:
      200: {description: "columns, rows (nodes, relationships, paths, scalars), truncated"}
      400: {description: invalid or unscopable Cypher}
      403: {description: write or admin attempt}
      408: {description: timeout}
      422: {description: transaction memory limit or a single row above the byte cap}
    """
    body = await json_body(request)
    query, params, version, at = parse_request(body)
    svc = service(request)
    scope = await scope_from(request, {"snapshot_version": version, "at": at})
    settings = svc.settings

    async def past(keys: frozenset[str] | None) -> dict[str, dict[str, Any]]:
        return await past_values(settings, scope.tenant, scope.version, keys)

    result = await run_cypher(svc.services.async_driver, scope, query, params,
                              settings.cypher_row_limit, settings.cypher_timeout_seconds,
                              settings.cypher_max_bytes, past if scope.pinned else None,
                              svc.reader.cypher_sessions)
    if scope.pinned:  # node properties as they were at the version (issue 9)
        result["rewound_nodes"] = await rewind(settings, scope.tenant, scope.version,
                                               result["rows"])
    return policy_json(request, result)
