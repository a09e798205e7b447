"""POST /search and WS /stream (the same pipeline, stage by stage)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from gateway.errors import json_body
from gateway.inputs import parse_json
from gateway.params import scope_from, service
from substrate.errors import BadRequest, SubstrateError
from substrate.retrieval.bounds import check_query
from substrate.retrieval.context import SearchOptions


def parse_search(body: dict[str, Any]) -> tuple[str, SearchOptions]:
    query = check_query(body.get("query"))
    unknown = set(body) - {"query", "snapshot_version", "at", "options"}
    if unknown:
        raise BadRequest("unknown fields", {"unknown": sorted(unknown)})
    return query, SearchOptions.from_dict(body.get("options"))


async def search(request: Request) -> JSONResponse:
    """Natural-language question -> routed strategies -> grounded answer.
    ---
    summary: Grounded search (RSN-02..06, 11)
    description: >
      Body {"query": str, "snapshot_version"?: int, "at"?: ISO-8601, "options"?: {top_k,
      max_hops, min_weight, token_budget, strategies, rerank}}. Headers X-Tenant, X-Clearance.
      Returns answer, citations, route (what it chose and why), results, strategies (status of
      each, failures named), evidence_bundle, confidence, snapshot_version.
    responses:
      200: {description: answer + evidence bundle + confidence block}
      400: {description: bad input}
    """
    body = await json_body(request)
    query, options = parse_search(body)
    svc = service(request)
    scope = await scope_from(request, body)
    return JSONResponse(await svc.search(query, scope, options))


async def stream(websocket: WebSocket) -> None:
    """Each message received is a /search body; stages are sent as {"stage", "data"}."""
    await websocket.accept()
    svc = websocket.app.state.read

    async def emit(stage: str, data: dict[str, Any]) -> None:
        await websocket.send_text(json.dumps({"stage": stage, "data": data}, default=str))

    try:
        while True:
            try:
                body = parse_json(await websocket.receive_text())
                if not isinstance(body, dict):
                    raise BadRequest("each message must be a JSON object")
                query, options = parse_search(body)
                scope = await scope_from(websocket, body)
                result = await svc.search(query, scope, options, emit)
                await emit("done", {"snapshot_version": result["snapshot_version"],
                                    "timing_ms": result["timing_ms"]})
            except SubstrateError as exc:
                await emit("error", exc.to_dict())
    except WebSocketDisconnect:
        return
