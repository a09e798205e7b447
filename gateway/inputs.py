"""Strict decoding of what a client sends: every malformed input is a 400 before any work.

JSON: nesting deeper than ``MAX_JSON_DEPTH`` is refused by a scan before parsing (the parser
itself recurses), ``NaN``/``Infinity`` and numbers that overflow to infinity (``1e309``) are
refused, integers must fit in 64 bits, strings must be valid Unicode (no lone surrogates from
``\\ud800`` escapes) without NUL characters. Query strings: percent-decoded values must be
UTF-8 and free of NUL. Numbers in query parameters: finite, integers within a range.
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from substrate.errors import BadRequest

MAX_JSON_DEPTH = 64
INT64 = 2**63 - 1
_OPEN, _CLOSE, _QUOTE, _ESC = frozenset(b"[{"), frozenset(b"]}"), ord('"'), ord("\\")


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays/objects in ``raw`` (strings skipped), without parsing."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _ESC:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in _CLOSE:
            depth -= 1
    return deepest


def _constant(name: str) -> Any:
    raise BadRequest(f"non-finite number {name} in JSON", {"got": name})


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest("number out of range in JSON", {"got": text[:40]})
    return value


def _int(text: str) -> int:
    if len(text) > 20 or abs(value := int(text)) > INT64:
        raise BadRequest("integer outside the 64-bit range in JSON", {"got": text[:40]})
    return value


def check_text(value: str, where: str) -> None:
    if "\x00" in value:
        raise BadRequest(f"NUL character in {where}", {"where": where})
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(f"invalid Unicode (lone surrogate) in {where}",
                         {"where": where}) from exc


def _walk_strings(data: Any, depth: int = 0) -> None:
    if isinstance(data, str):
        check_text(data, "JSON string")
    elif isinstance(data, dict):
        for k, v in data.items():
            check_text(k, "JSON key")
            _walk_strings(v, depth + 1)
    elif isinstance(data, list):
        for v in data:
            _walk_strings(v, depth + 1)


def parse_json(raw: bytes | str) -> Any:
    """The decoded JSON value, or BadRequest naming what is wrong."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if (depth := json_depth(data)) > MAX_JSON_DEPTH:
        raise BadRequest(f"JSON nested deeper than {MAX_JSON_DEPTH}",
                         {"allowed": MAX_JSON_DEPTH, "got": depth})
    try:
        value = json.loads(data or b"null", parse_constant=_constant, parse_float=_float,
                           parse_int=_int)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest("malformed JSON body", {"error": str(exc)}) from exc
    _walk_strings(value)
    return value


def check_query_string(raw: bytes) -> None:
    """Every name and value of a raw query string decodes as UTF-8 and holds no NUL."""
    try:
        pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True, encoding="utf-8",
                          errors="strict")
    except UnicodeDecodeError as exc:
        raise BadRequest("query string is not valid UTF-8", {"error": str(exc)}) from exc
    for name, value in pairs:
        check_text(name, "query parameter name")
        check_text(value, f"query parameter {name!r}")


def finite(name: str, value: float, raw: str) -> float:
    if not math.isfinite(value):
        raise BadRequest(f"{name} must be a finite number", {name: raw})
    return value


class QueryStringGuard:
    """ASGI middleware: a query string that is not valid UTF-8 or holds NUL is a 400 before
    any route reads it (a WebSocket handshake is closed with 1007)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("query_string"):
            try:
                check_query_string(scope["query_string"])
            except BadRequest as exc:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1007})
                    return
                await JSONResponse(exc.to_dict(), status_code=exc.status)(scope, receive, send)
                return
        await self.app(scope, receive, send)
