"""The NL→Cypher execution-accuracy set (issue 11): at least 150 questions over the demo and
at least two devset repositories, a third or more outside the eight use-case shapes, each with
expected rows (sorted entity ids or a count) and the source that proves them."""

from __future__ import annotations

import re

from tests.bench.bench_nl_cypher import DATASETS
from tests.support.nl_questions import load

ROWS = {name: load(filename) for name, (filename, _) in DATASETS.items()}
CEID = re.compile(r"^(service|infra|team|dev|adr|incident|pr|item|doc|repo):[\w.@/-]+$")


def test_size_spread_and_shapes() -> None:
    every = [row for rows in ROWS.values() for row in rows]
    assert len(every) >= 150
    assert sum(not row["uc"] for row in every) * 3 >= len(every)
    assert sum(1 for name, (_, repo) in DATASETS.items() if repo and ROWS[name]) >= 2
    assert len({(name, row["id"]) for name, rows in ROWS.items() for row in rows}) == len(every)


def test_every_expectation_is_rows_or_a_count() -> None:
    for rows in ROWS.values():
        for row in rows:
            assert row["q"].strip() and row["why"].strip(), row["id"]
            expect = row["expect"]
            if isinstance(expect, dict):
                assert set(expect) == {"count"} and expect["count"] >= 0, row["id"]
            else:
                assert all(CEID.match(e) for e in expect), row["id"]
                assert len(set(expect)) == len(expect), row["id"]
