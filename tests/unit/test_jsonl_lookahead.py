"""The JSONL import's batches, each with the one after it (``jsonl_ingest._with_next``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.connectors.jsonl_ingest import _with_next
from substrate.errors import ValidationFailed


def test_each_item_comes_with_the_next_and_the_last_with_none() -> None:
    assert list(_with_next(iter([1, 2, 3]))) == [(1, 2), (2, 3), (3, None)]
    assert list(_with_next(iter([]))) == []


def test_an_error_making_the_next_item_comes_after_the_current_one() -> None:
    def batches() -> Iterator[int]:
        yield 1
        yield 2
        raise ValidationFailed("line 30: not JSON", [{"line": 30}])

    pairs = _with_next(batches())
    assert next(pairs) == (1, 2)
    assert next(pairs) == (2, None)  # handled (committed) before the bad line is raised
    with pytest.raises(ValidationFailed, match="line 30"):
        next(pairs)


def test_an_error_making_the_first_item_is_raised_at_once() -> None:
    def broken() -> Iterator[int]:
        raise ValidationFailed("line 1: not JSON", [{"line": 1}])
        yield 0  # pragma: no cover - makes it a generator

    with pytest.raises(ValidationFailed, match="line 1"):
        next(_with_next(broken()))
