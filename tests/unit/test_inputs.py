"""Strict decoding of client input (gateway.inputs): depth, non-finite numbers, integer range,
Unicode and NUL, all as BadRequest."""

from __future__ import annotations

import pytest

from gateway.inputs import MAX_JSON_DEPTH, check_query_string, json_depth, parse_json
from substrate.errors import BadRequest


def test_depth_ignores_brackets_inside_strings() -> None:
    assert json_depth(b'{"a": "[[[{{{", "b": [1, [2]]}') == 3
    assert json_depth(b'{"a": "\\"[[["}') == 1
    assert json_depth(b"[]") == 1 and json_depth(b"1") == 0


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1000, 100_000])
def test_too_deep_json_is_refused_before_parsing(depth: int) -> None:
    with pytest.raises(BadRequest, match="nested deeper"):
        parse_json(b"[" * depth + b"]" * depth)


def test_json_at_the_depth_limit_parses() -> None:
    assert parse_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None


@pytest.mark.parametrize("raw", [b'{"x": NaN}', b'{"x": Infinity}', b'{"x": -Infinity}',
                                 b'{"x": 1e309}', b'{"x": -1e400}'])
def test_non_finite_numbers_are_refused(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="non-finite|out of range"):
        parse_json(raw)


@pytest.mark.parametrize("raw", [b'{"x": 9223372036854775808}', b'{"x": -99999999999999999999}',
                                 b'{"x": ' + b"9" * 5000 + b"}"])
def test_integers_outside_64_bits_are_refused(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="64-bit"):
        parse_json(raw)


def test_64_bit_integers_and_floats_parse() -> None:
    assert parse_json(b'{"x": 9223372036854775807, "y": 1.5e300}') == {
        "x": 9223372036854775807, "y": 1.5e300}


@pytest.mark.parametrize("raw", [b'{"q": "\\ud800"}', b'{"\\udfff": 1}', b'["a\\u0000b"]'])
def test_lone_surrogates_and_nul_are_refused(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="surrogate|NUL"):
        parse_json(raw)


def test_paired_surrogates_are_text() -> None:
    assert parse_json(b'{"q": "\\ud83d\\ude00"}') == {"q": "\U0001f600"}


@pytest.mark.parametrize("raw", [b"{", b"\xff\xfe", b"[1,]"])
def test_malformed_json_is_a_bad_request(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="malformed"):
        parse_json(raw)


@pytest.mark.parametrize("qs", [b"q=%ED%A0%80", b"q=%FF", b"q=a%00b", b"%00=1"])
def test_bad_query_strings_are_refused(qs: bytes) -> None:
    with pytest.raises(BadRequest):
        check_query_string(qs)


def test_good_query_strings_pass() -> None:
    check_query_string(b"q=caf%C3%A9&limit=10&x=&y=%F0%9F%98%80")
