"""What the embedded translator's reading assumed, said in the answer and priced in the
confidence (/search and the benchmark share ``assumptions.confidence``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from substrate.retrieval.context import StrategyResult
from substrate.retrieval.nl_cypher import hook
from substrate.retrieval.nl_cypher.assumptions import (
    HIGH,
    confidence,
    is_empty,
    normalised_values,
    sentence,
)
from substrate.retrieval.nl_cypher.lexicon import entity_phrases
from substrate.retrieval.nl_cypher.parser import Schema, parse

NOW = datetime(2026, 11, 22, tzinfo=UTC)
TRIPLES = frozenset({("Service", "CALLS", "Service"), ("Service", "DEPENDS_ON", "Infrastructure"),
                     ("Service", "DEPENDS_ON", "Service"), ("Team", "OWNS", "Service")})
SCHEMA = Schema(TRIPLES, entity_phrases([
    {"ceid": "service:checkout", "label": "Service", "name": "checkout"},
    {"ceid": "infra:db", "label": "Infrastructure", "name": "db"},
    {"ceid": "team:payments", "label": "Team", "name": "Payments"},
]))
ROWS = [[{"ceid": "adr:0001", "name": "Use Postgres", "labels": ["DecisionNode"]}, []]]


def test_an_exact_reading_assumes_nothing_and_is_high_confidence() -> None:
    plan = parse("Which services call checkout?", SCHEMA, NOW)
    assert plan.assumptions == []
    assert confidence("embedded", plan.mode, ROWS, plan.assumptions) >= HIGH
    assert sentence(plan.assumptions, empty=False) == ""


def test_a_normalised_status_is_said_and_lowers_the_confidence() -> None:
    plan = parse("Which ADRs are accepted?", SCHEMA, NOW)
    assert len(plan.assumptions) == 1
    said = plan.assumptions[0]
    assert said.startswith("counting ADRs whose recorded status is any of")
    assert "Approved" in said and said.split(" as ")[-1].startswith("accepted")
    assert "In Review" in parse("How many ADRs are proposed?", SCHEMA, NOW).assumptions[0]
    assert confidence("embedded", plan.mode, ROWS, plan.assumptions) < HIGH


def test_a_phrase_that_is_both_a_word_and_an_entity_is_an_assumption() -> None:
    plan = parse("Which services use db?", SCHEMA, NOW)
    assert any("'db'" in a for a in plan.assumptions)
    assert confidence("embedded", plan.mode, ROWS, plan.assumptions) < HIGH


def test_an_empty_answer_is_never_high_confidence() -> None:
    assert is_empty("list", []) and is_empty("count", [[0, []]])
    assert not is_empty("count", [[2, ["a", "b"]]])
    assert confidence("embedded", "count", [[0, []]], []) < HIGH
    assert confidence("embedded", "list", [], []) < HIGH
    assert "nothing matched" in sentence([], empty=True)


def test_a_model_written_query_is_not_high_confidence() -> None:
    assert confidence("model", "list", ROWS, []) < HIGH


def _results(fact: dict[str, Any]) -> dict[str, StrategyResult]:
    return {"nl_cypher": StrategyResult("nl_cypher", facts=[fact])}


def test_search_answer_and_confidence_carry_the_assumption() -> None:
    said = ["counting ADRs whose recorded status is any of Approved as accepted"]
    score = confidence("embedded", "list", ROWS, said)
    fact: dict[str, Any] = {"mode": "list", "columns": ["entity", "evidence"], "rows": ROWS,
            "assumptions": said, "translator": "embedded",
            "confidence": score}
    text, _ = hook.answer(_results(fact), "composed", [])
    assert text.startswith("Assuming: counting ADRs whose recorded status")
    assert "Use Postgres" in text
    block = hook.flag({"confidence": 1.0, "low_confidence_warning": False}, _results(fact))
    assert block["confidence"] == score < HIGH
    assert block["evidence_confidence"] == 1.0 and block["assumptions"] == said
    assert block["low_confidence_warning"] is True
    assert said[0] in block["low_confidence_reason"]


def test_search_confidence_of_an_exact_answer_stays_high_without_a_warning() -> None:
    fact = {"mode": "list", "columns": ["entity", "evidence"], "rows": ROWS, "assumptions": [],
            "translator": "embedded", "confidence": confidence("embedded", "list", ROWS, [])}
    block = hook.flag({"confidence": 0.9, "low_confidence_warning": False}, _results(fact))
    assert block["confidence"] >= HIGH and block["low_confidence_warning"] is False
    assert hook.answer(_results(fact), "composed", [])[0].startswith("1 result(s)")


def _adrs(*written: tuple[str, str | None]) -> Schema:
    rows = [{"ceid": f"adr:{n:04d}", "label": "DecisionNode", "name": f"ADR {n}", "status": s,
             "status_text": t} for n, (s, t) in enumerate(written, start=1)]
    return Schema(TRIPLES, entity_phrases(rows), normalised_values(rows))


def test_a_status_every_record_wrote_as_such_is_no_assumption() -> None:
    schema = _adrs(("accepted", "Accepted"), ("accepted", "**Accepted**"),
                   ("proposed", "In Review"))
    assert parse("Which ADRs are accepted?", schema, NOW).assumptions == []
    assert "In Review" in parse("How many ADRs are proposed?", schema, NOW).assumptions[0]


def test_a_status_written_otherwise_or_without_its_text_stays_an_assumption() -> None:
    assert parse("Which ADRs are accepted?", _adrs(("accepted", "Accepted"),
                                                   ("accepted", "Approved")), NOW).assumptions
    assert parse("Which ADRs are accepted?", _adrs(("accepted", None)), NOW).assumptions
    assert normalised_values([{"label": "Service", "status": "accepted"}]) == frozenset()
