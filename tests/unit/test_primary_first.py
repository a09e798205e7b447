"""A question one traversal answers runs its answering strategy alone (registry.primary_first,
search._run_plan); the rest of the preset runs only when that strategy found nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from substrate.retrieval import search as pipeline
from substrate.retrieval import strategies_time  # noqa: F401 - registers epic_impact
from substrate.retrieval.context import StrategyResult
from substrate.retrieval.registry import (
    PLANS,
    STRATEGIES,
    answered,
    first_stage,
    plan_for,
    primary_first,
)
from substrate.retrieval.router import Intent

STAGED = (Intent.DEPENDENCY, Intent.CALLERS, Intent.OWNERSHIP, Intent.EPIC_IMPACT,
          Intent.TEMPORAL, Intent.INTENT_MISMATCH)


@pytest.mark.parametrize("intent", STAGED)
def test_the_families_one_traversal_answers_are_staged(intent: Intent) -> None:
    assert primary_first(intent, list(plan_for(intent)))


@pytest.mark.parametrize("intent", [Intent.DECISION_RATIONALE, Intent.FREE_TEXT,
                                    Intent.ATTRIBUTES, Intent.WHEN])
def test_other_families_run_their_whole_preset_at_once(intent: Intent) -> None:
    assert not primary_first(intent, list(plan_for(intent)))


def test_a_plan_nl_cypher_took_over_is_not_staged() -> None:
    plan = ["nl_cypher", *PLANS[Intent.DEPENDENCY]]
    assert not primary_first(Intent.DEPENDENCY, plan)
    assert not primary_first(Intent.DEPENDENCY, list(PLANS[Intent.DEPENDENCY])[:1])


@pytest.fixture
def ran() -> Iterator[list[str]]:
    """Three strategies that record their calls: ``answers`` (facts), ``finds_nothing`` (no
    facts) and ``extra``."""
    calls: list[str] = []

    def make(name: str, facts: list[dict[str, Any]]) -> Any:
        async def strategy(ctx: Any) -> StrategyResult:
            calls.append(name)
            return StrategyResult(name, facts=list(facts))
        return strategy

    added = {"t_answers": make("t_answers", [{"subject": "s"}]),
             "t_finds_nothing": make("t_finds_nothing", []),
             "t_extra": make("t_extra", [])}
    STRATEGIES.update(added)
    try:
        yield calls
    finally:
        for name in added:
            del STRATEGIES[name]


async def _no_emit(stage: str, data: dict[str, Any]) -> None:
    return None


def _run(plan: list[str], staged: bool) -> tuple[dict[str, StrategyResult], dict[str, str]]:
    return asyncio.run(pipeline._run_plan(None, plan, _no_emit, staged))  # type: ignore[arg-type]


def test_staged_plan_stops_when_the_first_strategy_answers(ran: list[str]) -> None:
    results, failed = _run(["t_answers", "t_extra"], staged=True)
    assert ran == ["t_answers"] and list(results) == ["t_answers"] and failed == {}


def test_staged_plan_runs_the_rest_when_the_first_finds_nothing(ran: list[str]) -> None:
    results, _ = _run(["t_finds_nothing", "t_extra"], staged=True)
    assert ran == ["t_finds_nothing", "t_extra"]
    assert list(results) == ["t_finds_nothing", "t_extra"]


def test_unstaged_plan_runs_everything(ran: list[str]) -> None:
    results, _ = _run(["t_answers", "t_extra"], staged=False)
    assert sorted(ran) == ["t_answers", "t_extra"] and set(results) == {"t_answers", "t_extra"}


def test_a_note_answering_strategy_stops_the_plan_only_with_facts_and_a_note() -> None:
    found = StrategyResult("temporal", facts=[{"incident": "i"}], note="What changed ...")
    assert answered("temporal", found) and answered("intent", found)
    assert not answered("temporal", StrategyResult("temporal", facts=[{"incident": "i"}]))
    assert not answered("intent", StrategyResult("intent", note="no pull request named"))
    assert answered("dependencies", StrategyResult("dependencies", facts=[{"subject": "s"}]))


def test_the_incident_window_runs_the_window_changes_beside_it() -> None:
    """The answer's calibrated confidence reads the window's changes (same as unstaged)."""
    plan = list(plan_for(Intent.TEMPORAL))
    assert first_stage(plan) == ["temporal", "window_changes"]
    assert first_stage(["callers", "local_graphrag", "keyword"]) == ["callers"]
