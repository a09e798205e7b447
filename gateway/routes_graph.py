"""Direct endpoints: /dependencies/{id}, /ownership/{id}, /memory/{id}."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.params import bool_param, float_param, int_param, scope_from, service
from gateway.policy import policy_json
from substrate.errors import BadRequest
from substrate.retrieval.direct import DependencyQuery
from substrate.retrieval.evidence import direct_evidence
from substrate.retrieval.memory_any import entity_memory, is_other_entity


async def dependencies(request: Request) -> JSONResponse:
    """Dependency tree of a service.
    ---
    summary: Dependencies (RSN-UC-01) or dependents (direction=in, RSN-UC-07)
    description: >
      Path service_id: canonical id (service:checkout) or name. Query: depth 1..3,
      direction out|in (or depends_on|depended_on_by), types (CALLS,DEPENDS_ON,IMPORTS,HOSTS),
      min_weight, include_inferred, limit, snapshot_version | at.
    responses:
      200: {description: dependencies with hops, truncated, evidence_bundle, confidence}
      404: {description: unknown service}
    """
    types_raw = request.query_params.get("types", "CALLS,DEPENDS_ON")
    direction = request.query_params.get("direction", "out")
    direction = {"depends_on": "out", "depended_on_by": "in"}.get(direction, direction)
    q = DependencyQuery(
        depth=int_param(request, "depth", 1), direction=direction,
        types=tuple(t.strip().upper() for t in types_raw.split(",") if t.strip()),
        min_weight=float_param(request, "min_weight", 0.0),
        include_inferred=bool_param(request, "include_inferred"),
        limit=int_param(request, "limit", 100),
    ).validate()
    scope = await scope_from(request)
    out = await service(request).dependencies(scope, request.path_params["service_id"], q)
    hops = [{**h, "hop": i + 1} for row in out["dependencies"]
            for i, h in enumerate(row["hops"])]
    evidence = direct_evidence(scope.version, [out["service"]], hops, out["truncated"],
                               "local_graphrag")
    return policy_json(request, {**out, "snapshot_version": scope.version, **evidence})


async def ownership(request: Request) -> JSONResponse:
    """Owners of a service.
    ---
    summary: Ownership chain (RSN-10) — OWNS edges merged with CODEOWNERS
    responses:
      200: {description: "owners with claims; codeowners vs declared; note when they disagree"}
      404: {description: unknown service}
    """
    scope = await scope_from(request)
    out = await service(request).ownership(scope, request.path_params["service_id"])
    hops = [{**c, "hop": 1} for o in out["owners"] for c in o["claims"]]
    evidence = direct_evidence(scope.version, [out["service"]], hops, False, "owns_traversal")
    return policy_json(request, {**out, "snapshot_version": scope.version, **evidence})


async def memory(request: Request) -> JSONResponse:
    """Institutional memory of a service, or of any entity (an ADR: what it decided,
    supersession, the incidents citing it).
    ---
    summary: Decisions, failures, exceptions, memories with provenance (RSN-08)
    responses:
      200: {description: items ranked by recency and relevance, superseded ADRs marked}
      404: {description: unknown service}
    """
    limit = int_param(request, "limit", 20)
    if not 1 <= limit <= 100:
        raise BadRequest("limit must be 1..100", {"limit": limit})
    scope = await scope_from(request)
    value, svc = request.path_params["service_id"], service(request)
    if is_other_entity(value):  # adr:..., incident:..., team:...: memory from any entity
        out = await entity_memory(svc.reader, svc.reranker, scope, value, limit)
    else:
        out = await svc.memory(scope, value, limit)
    hops = [{**i["hop"], "hop": 1} for i in out["items"]]
    evidence = direct_evidence(scope.version, [out["service"]], hops, out["truncated"], "memory")
    return policy_json(request, {**out, "snapshot_version": scope.version, **evidence})
