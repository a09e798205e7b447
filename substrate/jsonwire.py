"""JSON on the hot path (response bodies, cache entries) through orjson, with the output the
standard library gives for the same data: compact, UTF-8 kept, anything JSON has no type for
as ``str(value)`` (datetimes and dataclasses included, as ``json.dumps(default=str)`` writes
them), non-string keys as strings.

What orjson refuses (an integer beyond 64 bits, a ``str`` subclass it cannot read) goes
through :mod:`json` instead, so no answer fails for being unusual. NaN and ±Infinity, which
JSON cannot carry, are written as ``null`` (orjson's rule; the standard library would write
invalid JSON or, with ``allow_nan=False`` as Starlette's ``JSONResponse``, fail the request).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME \
    | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(data: Any) -> bytes:
    """Compact UTF-8 JSON of ``data``."""
    try:
        return orjson.dumps(data, default=str, option=OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(data, default=str, ensure_ascii=False, allow_nan=False,
                          separators=(",", ":")).encode()


def loads(raw: bytes | str) -> Any:
    """The value of a JSON document; ``ValueError`` when it is not one."""
    return orjson.loads(raw)
