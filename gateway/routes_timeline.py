"""Timeline routes: GET /timeline/{entity_id} and GET /timeline-relate (Allen relations).

Thin: parameters are parsed here; the behaviour lives in ``substrate.retrieval.timeline``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.params import int_param, scope_from, service
from gateway.policy import policy_json
from substrate.errors import BadRequest
from substrate.graph.records import slug
from substrate.retrieval.timeline import label_members, relate, timeline


def _ceid(value: str) -> str:
    value = value.strip()
    if not value or len(value) > 200:
        raise BadRequest("an id must be 1..200 characters", {"id": value[:50]})
    return value if ":" in value else f"service:{slug(value)}"


async def entity_timeline(request: Request) -> JSONResponse:
    """Every change of an entity and its relationships across snapshots.
    ---
    summary: Entity timeline (TemporalRetriever)
    description: >
      Path entity_id: a canonical id (service:checkout, adr:0003, team:payments) or a service
      name. The entity's validity intervals, property changes (before/after) and every
      relationship that began or ended, oldest first, each with its snapshot (version, time,
      commit) and evidence. Query: snapshot_version | at (the pin: nothing after it).
    parameters:
      - {name: entity_id, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "entity, intervals, events[], truncated"}
      404: {description: unknown entity}
    """
    svc = service(request)
    scope = await scope_from(request)
    out = await timeline(svc.settings, svc.reader, scope,
                         _ceid(request.path_params["entity_id"]), svc.pool)
    return policy_json(request, out)


async def timeline_relate(request: Request) -> JSONResponse:
    """Allen's interval relation between two validity intervals.
    ---
    summary: Allen interval relations between validity intervals (13 relations)
    description: >
      a= and b= are references: an entity id (its validity; an incident's date as an instant;
      an ADR's time in force, until closed or superseded) or a relationship
      src-[TYPE]->dst (each interval in which it held). With label= instead of b=, every
      entity of that label is compared with a, and those for which one of relation=
      (comma-separated Allen relations, or intersects - the default) holds are returned:
      "which ADRs were in force while checkout depended on payment" is
      a=service:checkout-[DEPENDS_ON]->service:payment&label=DecisionNode.
      Query: snapshot_version | at, limit (candidates, 1..500).
    responses:
      200: {description: "pairs of intervals with their relation, or matches"}
      400: {description: missing or unknown parameter}
      404: {description: unknown entity or relationship}
    """
    q = request.query_params
    a = q.get("a")
    if not a:
        raise BadRequest("a is required: an entity id or src-[TYPE]->dst")
    wanted = tuple(r.strip() for r in q.get("relation", "intersects").split(",") if r.strip())
    svc = service(request)
    scope = await scope_from(request)
    label = q.get("label")
    if label is not None and not svc.services.ontology.has_label(label):
        raise BadRequest(f"unknown label {label!r}",
                         {"allowed": sorted(svc.services.ontology.labels)})
    limit = int_param(request, "limit", 200)
    if not 1 <= limit <= 500:
        raise BadRequest("limit must be 1..500", {"limit": limit})
    candidates = await label_members(svc.reader, scope, label, limit) if label else None
    out = await relate(svc.settings, svc.reader, scope, a, q.get("b"), candidates, wanted,
                       svc.pool)
    return policy_json(request, out)
