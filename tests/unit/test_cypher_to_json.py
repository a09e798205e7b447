"""``cypher_run.to_json``: a /cypher value as JSON — scalars as they are (the fast path),
containers walked, temporal values as ISO text."""

from __future__ import annotations

from datetime import UTC, date, datetime

from neo4j.time import Date, DateTime, Duration

from substrate.retrieval.cypher_run import to_json


class Label(str):
    """A str subclass: not on the fast path, and still returned as it is."""


def test_scalars_are_returned_as_they_are() -> None:
    for value in ("checkout", "", 0, 7, -1.5, True, False, None, Label("x")):
        assert to_json(value) is value


def test_containers_and_temporal_values() -> None:
    value = {"names": ["a", 1, None, (True, 2.5)],
             "when": DateTime(2026, 11, 24, 12, 0, 0, tzinfo=UTC),
             "day": Date(2026, 11, 24), "py": datetime(2026, 11, 24, 12, 0, tzinfo=UTC),
             "pyday": date(2026, 11, 24), "took": Duration(hours=2),
             "nested": {"deep": [{"at": Date(2026, 1, 2)}]}}
    assert to_json(value) == {
        "names": ["a", 1, None, [True, 2.5]],
        "when": "2026-11-24T12:00:00.000000000+00:00", "day": "2026-11-24",
        "py": "2026-11-24T12:00:00+00:00", "pyday": "2026-11-24", "took": "PT2H",
        "nested": {"deep": [{"at": "2026-01-02"}]}}
