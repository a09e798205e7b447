"""The hot path's JSON (orjson) writes what ``json.dumps(default=str)`` writes, compact and
UTF-8, and falls back to the standard library where orjson refuses the data."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest

from substrate import jsonwire


@dataclass(frozen=True)
class Ref:
    ceid: str


def stdlib(data: Any) -> bytes:
    return json.dumps(data, default=str, ensure_ascii=False, separators=(",", ":")).encode()


SAMPLES: list[Any] = [
    {"service": {"ceid": "service:checkout", "name": "Kassé ✓"}, "n": 3, "w": 0.25,
     "ok": True, "none": None, "hops": [{"from": "a", "to": "b"}], "t": (1, "x")},
    {"at": datetime(2026, 9, 1, 12, 30, tzinfo=UTC), "day": date(2026, 9, 1)},
    {"ref": Ref("service:a"), "ids": {"service:b"}},
    {1: "one", 2.5: "half", False: "no", None: "none"},
    [1e-05, 1e21, 123456789.125, -0.0, 2**63 - 1],
]


@pytest.mark.parametrize("data", SAMPLES)
def test_same_text_as_the_standard_library(data: Any) -> None:
    assert json.loads(jsonwire.dumps(data)) == json.loads(stdlib(data))
    assert jsonwire.loads(jsonwire.dumps(data)) == json.loads(stdlib(data))


def test_strings_and_datetimes_are_byte_identical() -> None:
    data = {"a": "Kassé", "at": datetime(2026, 9, 1, tzinfo=UTC), "k": [Ref("x")]}
    assert jsonwire.dumps(data) == stdlib(data)


def test_what_orjson_refuses_goes_through_the_standard_library() -> None:
    assert jsonwire.dumps({"big": 2**70}) == b'{"big":1180591620717411303424}'


def test_non_finite_numbers_are_null_not_invalid_json() -> None:
    assert jsonwire.dumps({"x": math.nan, "y": math.inf}) == b'{"x":null,"y":null}'


def test_a_body_that_is_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        jsonwire.loads(b"{not json")


# --- reading: PostgreSQL's json/jsonb through orjson, with json.loads's values -------------
READ_SAMPLES: list[bytes] = [
    b'{"props": {"name": "checkout", "tier": 1, "w": 0.25, "owner": null, "on": true}}',
    b'{"id": 123456789012345678901234567890, "n": -9223372036854775808}',  # beyond 64 bits
    b'[18446744073709551616, 9223372036854775807]',
    b'{"big": 1.5e400, "small": -2e-400}',  # beyond a double: json reads inf and -0.0
    b'{"text": "Kass\xc3\xa9 \\u2713 1234567890123456789012 in a string"}',
    b'"just a string"',
]


@pytest.mark.parametrize("raw", READ_SAMPLES)
def test_exact_loads_gives_the_standard_library_value(raw: bytes) -> None:
    expected = json.loads(raw)
    for given in (raw, memoryview(raw), raw.decode()):
        got = jsonwire.exact_loads(given)
        assert got == expected
        assert json.dumps(got) == json.dumps(expected)  # ints stay ints, floats floats


def test_exact_loads_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError):
        jsonwire.exact_loads(b'{"a": ')
