"""Time, intent and impact routes: GET /temporal, POST /intent-check, GET /impact/{item_id}.

Thin: parameters are parsed and validated here; the behaviour lives in
``substrate.retrieval.temporal``, ``.intent`` and ``.impact``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.errors import json_body
from gateway.params import bool_param, int_param, scope_from, service
from gateway.policy import policy_json
from substrate.errors import BadRequest
from substrate.retrieval import strategies_time  # noqa: F401 - registers the search strategies
from substrate.retrieval.evidence import direct_evidence
from substrate.retrieval.impact import epic_impact, impact_hops
from substrate.retrieval.intent import check_intent, intent_hops
from substrate.retrieval.temporal import GraphFilter, Page, graph_diff, parse_instant

STATE_KEYS = ("at", "snapshot_version")
DIFF_KEYS = ("from", "to")


def _filter(request: Request) -> GraphFilter:
    q = request.query_params
    types = tuple(t.strip().upper() for t in q.get("types", "").split(",") if t.strip())
    svc = service(request)
    return GraphFilter(service=q.get("service") or None, label=q.get("label") or None,
                       types=types, depth=int_param(request, "depth", 1),
                       evidence=bool_param(request, "evidence")
                       ).validate(svc.services.ontology)


def _page(request: Request) -> Page:
    offset = int_param(request, "offset", 0) if "offset" in request.query_params else None
    return Page(limit=int_param(request, "limit", 100), cursor=request.query_params.get("cursor"),
                offset=offset).validate()


async def temporal(request: Request) -> JSONResponse:
    """Point-in-time graph state, or the diff between two instants.
    ---
    summary: Temporal graph query (RSN-07) and snapshot diff (RSN-UC-06)
    description: >
      State: at=ISO-8601 (or snapshot_version): the nodes (properties as of then) and the
      relationships valid at the tenant's newest snapshot at or before that instant, with
      evidence; service= (neighbourhood within depth 0..3 hops), label=, types= (relation
      filter), limit (1..1000) and cursor or offset. Diff: from=ISO&to=ISO: added, removed,
      changed (and transient) nodes and relationships of the tenant's snapshots in (from, to],
      each with the snapshot that changed it (version, time, source, note/commit) and its
      evidence; the same filters. Both name the snapshot(s) they read. Headers X-Tenant,
      X-Clearance.
    responses:
      200: {description: state or diff with snapshot, evidence_bundle, confidence}
      400: {description: "not ISO-8601, in the future, before the first snapshot, from > to"}
      404: {description: unknown service}
    """
    q = request.query_params
    state = [k for k in STATE_KEYS if k in q]
    diff = [k for k in DIFF_KEYS if k in q]
    if state and diff:
        raise BadRequest("give at=... (state) or from=...&to=... (diff), not both")
    if not state and not diff:
        raise BadRequest("give at=... (state) or from=...&to=... (diff)")
    if diff and len(diff) != 2:
        raise BadRequest("a diff needs both from=... and to=...", {"given": diff})
    flt, page, svc = _filter(request), _page(request), service(request)
    if state:
        scope = await scope_from(request)
        return policy_json(request, await svc.temporal_state(scope, flt, page))
    start, end = parse_instant("from", q["from"]), parse_instant("to", q["to"])
    scope = await scope_from(request, {"snapshot_version": None, "at": None})
    body = await graph_diff(svc.settings, svc.reader, scope, svc.services.ontology, start, end,
                            flt, page, svc.pool)
    return policy_json(request, body)


async def intent_check(request: Request) -> JSONResponse:
    """Intent mismatch of a pull request against its linked project item(s).
    ---
    summary: Intent-mismatch check (RSN-09, RSN-UC-03)
    description: >
      Body {"pr": 447 | "pr:447", "at"?: ISO-8601, "snapshot_version"?: int,
      "threshold"?: number}. Cosine similarity of the PR's change summary and each linked
      item's description; below the threshold (INTENT_THRESHOLD, 0.6) the PR is flagged with
      the spec's advisory. Returns both texts compared, the score(s) and the item; a PR
      without a linked item gets status no_linked_item and no score.
    responses:
      200: {description: score, flagged, advisory, compared texts, items}
      400: {description: malformed pr}
      404: {description: unknown PR}
    """
    body = await json_body(request)
    unknown = set(body) - {"pr", "at", "snapshot_version", "threshold"}
    if unknown:
        raise BadRequest("unknown fields", {"unknown": sorted(unknown)})
    if "pr" not in body:
        raise BadRequest("pr is required: a PR number or id such as 447 or 'pr:447'")
    threshold = body.get("threshold")
    if threshold is not None and (isinstance(threshold, bool)
                                  or not isinstance(threshold, int | float)
                                  or not -1.0 <= threshold <= 1.0):
        raise BadRequest("threshold must be a number in [-1, 1]", {"threshold": threshold})
    svc = service(request)
    scope = await scope_from(request, body)
    out = await check_intent(svc.settings, svc.reader, scope, body["pr"], svc.embed_texts,
                             None if threshold is None else float(threshold), svc.pool)
    evidence = direct_evidence(scope.version, [out["pr"]], intent_hops(out), False,
                               "embedding_similarity")
    return policy_json(request, {**out, **evidence})


async def impact(request: Request) -> JSONResponse:
    """Services an epic (project item) affects.
    ---
    summary: Epic impact (RSN-UC-08)
    description: >
      Path item_id: item:shop-10, SHOP-10 or the item's name. Project item (and its PART_OF
      children) -LINKS_TO-> IntentAssertion -ASSERTS-> service, plus the services that depend
      on those over CALLS/DEPENDS_ON within depth (0..2, default 1), each with its path and
      evidence. Query: depth, limit, snapshot_version | at.
    responses:
      200: {description: asserted and dependent services with paths and hops}
      404: {description: unknown project item}
    """
    svc = service(request)
    scope = await scope_from(request)
    out: dict[str, Any] = await epic_impact(
        svc.reader, scope, request.path_params["item_id"], int_param(request, "depth", 1),
        int_param(request, "limit", 100))
    evidence = direct_evidence(scope.version, [out["item"]], impact_hops(out), out["truncated"],
                               "intent_assertion_traversal")
    return policy_json(request, {**out, "snapshot_version": scope.version, "pinned": scope.pinned,
                         **evidence})
