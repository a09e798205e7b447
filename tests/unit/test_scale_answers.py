"""The gold answers ``bench_scale`` checks /search against come from the generated
organisation (tests/bench/scale_answers.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from substrate.scale.generator import Edge, Epoch, Node, Org
from tests.bench.scale_answers import named, question, truths

REF = "x.yaml#L1@abc1234"


def org() -> Org:
    nodes = [Node("Service", "service:a", {"name": "a"}, REF),
             Node("Service", "service:b-1", {"name": "b-1"}, REF),
             Node("Infrastructure", "infra:db-1", {"name": "db-1"}, REF),
             Node("Team", "team:t0001-pay", {"name": "t0001-pay", "handle": "@acme/t0001"}, REF),
             Node("Developer", "dev:d00001", {"name": "d00001"}, REF)]
    edges = [Edge("CALLS", "service:a", "service:b-1", REF),
             Edge("DEPENDS_ON", "service:a", "infra:db-1", REF),
             Edge("PRIMARY_OWNER", "team:t0001-pay", "service:a", REF),
             Edge("OWNS", "dev:d00001", "service:a", REF),
             Edge("MEMBER_OF", "dev:d00001", "team:t0001-pay", REF)]
    return Org(10, 1, ["service:a", "service:b-1"], ["team:t0001-pay"],
               [Epoch(datetime(2026, 1, 5, tzinfo=UTC), nodes, edges)])


def test_gold_answers_name_teams_by_handle_and_the_rest_by_name() -> None:
    gold = truths(org())
    assert gold["RSN-UC-01"]["service:a"] == {"b-1", "db-1"}
    assert gold["RSN-UC-07"]["service:b-1"] == {"a"}
    assert gold["RSN-UC-07"]["infra:db-1"] == {"a"}  # recorded; only services are asked
    assert gold["RSN-UC-02"]["service:a"] == {"@acme/t0001", "d00001"}
    assert question("RSN-UC-02", "a") == "Who owns the a service?"


def test_a_name_counts_only_whole() -> None:
    answer = "a depends on: b-10 (CALLS)[1]; db-1 (DEPENDS_ON)[2]. Owned by @acme/t0001."
    assert named(answer, {"b-1", "db-1", "@acme/t0001", "t0001"}) == {"db-1", "@acme/t0001"}
