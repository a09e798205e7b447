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


# digits to "0", everything else to " ": 19 digits in a row (maybe an integer beyond 64 bits,
# which orjson reads as a float) are then found by a substring search (a regex is ~10x slower)
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19


def exact_loads(raw: bytes | bytearray | memoryview | str) -> Any:
    """:func:`json.loads`'s value for ``raw``, through orjson where that is the same value
    (PostgreSQL's ``json``/``jsonb`` columns, read on request paths): a document with 19
    digits in a row (an integer orjson would turn into a float) or a number beyond a double's
    range (orjson refuses it; :mod:`json` reads infinity) goes through :mod:`json`."""
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    if _LONG_RUN not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


# orjson's text differs from json.dumps's for small floats only: below 1e-4 it writes
# "0.0000999" where json writes "9.99e-05", and "1e-7" where json writes "1e-07". Those shapes
# (digits mapped to "0" as above, ".", "e" and "-" kept) send the data through json instead.
_NUMBER_SHAPE = bytes(0x30 if 0x30 <= i <= 0x39 else i if i in b".e-" else 0x20
                      for i in range(256))


def canonical(data: Any) -> bytes:
    """``json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)`` as UTF-8 bytes, byte for byte, through orjson where that is the same
    text (the evidence bundle's hash and sort keys). NaN and ±Infinity are written as
    ``null`` (orjson's rule) where json would refuse them; what orjson refuses (a key that is
    not a string, an integer beyond 64 bits) goes through json, which may refuse it too."""
    try:
        out = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        pass
    else:
        shape = out.translate(_NUMBER_SHAPE)
        if b"0.0000" not in shape and b"0e-0" not in shape:
            return out
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()
