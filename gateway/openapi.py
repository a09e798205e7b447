"""The served OpenAPI 3.0 document: Starlette's docstring schema completed so that it is valid
and clients generated from it work: path parameters from the route templates, the query
parameters and JSON request bodies each route reads, bearer authentication, and the error
responses every operation can give (the ``{"error": {code, message, detail}}`` body).

Route docstrings stay the source of summaries and descriptions; what they cannot express
(schemas) is data here. Checked by openapi-spec-validator and schemathesis in the tests.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.routing import BaseRoute, Route
from starlette.schemas import SchemaGenerator

INFO = {"title": "Substrate Reasoning", "version": "0.1.0"}
OPEN = {"/healthz", "/readyz", "/openapi.json"}
JSON = "application/json"
ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERRORS = {  # every operation behind authentication, limits and load shedding may give these
    "400": "malformed input (JSON, numbers, Unicode, ranges) or an invalid request",
    "401": "missing or invalid credentials", "403": "not allowed for this key",
    "404": "unknown tenant, element or item", "413": "request body too large",
    "415": "a POST body must be application/json", "429": "rate or concurrency limit",
    "503": "a backend is unavailable, the deadline passed or the gateway is at capacity",
}
ERROR_SCHEMA = {
    "type": "object", "required": ["error"],
    "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
        "code": {"type": "string"}, "message": {"type": "string"}, "detail": {}}}},
}

_INT: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 1_000_000_000}
_STR: dict[str, Any] = {"type": "string", "maxLength": 200}
PIN: dict[str, dict[str, Any]] = {"snapshot_version": {"type": "integer", "minimum": 1},
                                  "at": _STR}
GRAPH: dict[str, dict[str, Any]] = {
    "depth": _INT, "limit": _INT, "types": _STR,
    "direction": {"type": "string", "enum": ["out", "in"]},
    "min_weight": {"type": "number", "minimum": 0}, "include_inferred": {"type": "boolean"},
    **PIN,
}
QUERY: dict[str, dict[str, dict[str, Any]]] = {
    "/dependencies/{service_id}": GRAPH, "/ownership/{service_id}": PIN,
    "/memory/{service_id}": {"limit": _INT, **PIN},
    "/temporal": {**PIN, "from": _STR, "to": _STR, "service": _STR, "label": _STR,
                  "types": _STR, "depth": _INT, "limit": _INT, "offset": _INT,
                  "cursor": _STR},
    "/impact/{item_id}": {"depth": _INT, "limit": _INT, **PIN},
    "/timeline/{entity_id}": {"limit": _INT, **PIN},
    "/timeline-relate": {"a": _STR, "b": _STR, "relation": _STR, "label": _STR,
                         "limit": _INT, **PIN},
    "/queue": {"status": {"type": "string", "enum": ["pending", "approved", "rejected"]},
               "limit": _INT},
    "/admin/audit": {"principal": _STR, "request_id": _STR, "decision": _STR,
                     "limit": _INT, "before": _INT},
}
REQUIRED_QUERY = {"/timeline-relate": {"a"}}
_PIN_BODY = {"snapshot_version": {"type": "integer", "minimum": 1}, "at": {"type": "string"}}
BODIES: dict[str, dict[str, Any]] = {
    "/search": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 2000},
        "options": {"type": "object", "description": "top_k, max_hops, token_budget, "
                    "strategies, min_weight, rerank, chunk, counterfactual"}, **_PIN_BODY}},
    "/cypher": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "params": {"type": "object"}, **_PIN_BODY}},
    "/intent-check": {"type": "object", "required": ["pr"], "properties": {
        "pr": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        "threshold": {"type": "number", "minimum": -1, "maximum": 1}, **_PIN_BODY}},
    "/counterfactual": {"type": "object", "required": ["bundle_hash"], "properties": {
        "bundle_hash": {"type": "string"},
        "analysis": {"oneOf": [{"type": "boolean"}, {"type": "object"}]}}},
    "/queue/{item_id}/approve": {"type": "object", "properties": {}},
    "/queue/{item_id}/reject": {"type": "object", "properties": {}},
}
OPTIONAL_BODY = {"/queue/{item_id}/approve", "/queue/{item_id}/reject"}
TEXT_RESPONSES = {"/metrics"}  # Prometheus text format


def _response(description: Any, path: str, code: str) -> dict[str, Any]:
    """A docstring response (``{description: a, b, c}`` parses as a map) as a valid object."""
    if isinstance(description, dict):
        words = [str(description.get("description", ""))]
        words += [str(k) for k in description if k != "description"]
        description = ", ".join(w for w in words if w)
    out: dict[str, Any] = {"description": str(description or code)}
    if code.startswith("2") and path in TEXT_RESPONSES:
        out["content"] = {"text/plain": {"schema": {"type": "string"}}}
    elif code.startswith("2"):
        out["content"] = {JSON: {"schema": {}}}
    else:
        out["content"] = {JSON: {"schema": ERROR_REF}}
    return out


def _operation(path: str, method: str, op: dict[str, Any]) -> dict[str, Any]:
    responses = {str(k): _response(v, path, str(k)) for k, v in op.get("responses", {}).items()}
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"{(\w+)}", path)]
    params += [{"name": n, "in": "query", "required": n in REQUIRED_QUERY.get(path, ()),
                "schema": s} for n, s in QUERY.get(path, {}).items()]
    out = {**op, "responses": responses, "operationId": f"{method}_{path}"}
    if params:
        out["parameters"] = params
    if method == "post" and path in BODIES:
        out["requestBody"] = {"required": path not in OPTIONAL_BODY,
                              "content": {JSON: {"schema": BODIES[path]}}}
    if path in OPEN:
        out["security"] = []
        if path == "/readyz":
            responses.setdefault("503", _response("not ready", path, "503"))
    else:
        for code, why in ERRORS.items():
            responses.setdefault(code, _response(why, path, code))
    return out


def document(routes: list[BaseRoute]) -> dict[str, Any]:
    base = {"openapi": "3.0.3", "info": INFO}
    schema = SchemaGenerator(base).get_schema(routes=routes)
    paths = {p: {m: _operation(p, m, op) for m, op in ops.items()}
             for p, ops in schema.get("paths", {}).items()}
    for route in routes:  # the document itself is served too
        if isinstance(route, Route) and route.path == "/openapi.json":
            paths["/openapi.json"] = {"get": _operation("/openapi.json", "get", {
                "summary": "This OpenAPI document", "responses": {200: "OpenAPI 3.0"}})}
    return {**base, "paths": paths, "security": [{"bearer": []}], "components": {
        "schemas": {"Error": ERROR_SCHEMA},
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "an API key (sk_...) or an OIDC JWT"}}}}
