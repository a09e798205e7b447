"""The answering strategy of a one-traversal family starts on the gazetteer's seeds while the
fuzzy linking runs (search._Early): its result is kept only when the full seeds would give it
the same subject, or when it never looked at the seeds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from substrate.retrieval import search as pipeline
from substrate.retrieval.context import SearchContext, StrategyResult
from substrate.retrieval.registry import STRATEGIES, SUBJECT_LABELS, subject_seeds

SVC_A = {"ceid": "service:a", "label": "Service"}
SVC_B = {"ceid": "service:b", "label": "Service"}
TEAM = {"ceid": "team:x", "label": "Team"}
ITEM = {"ceid": "item:p-1", "label": "ProjectItem"}


def test_the_subject_is_the_first_seed_of_each_group() -> None:
    assert subject_seeds("dependencies", [TEAM, SVC_A, SVC_B]) == (SVC_A,)
    assert subject_seeds("dependencies", [TEAM]) == (None,)
    infra = {"ceid": "infra:db", "label": "Infrastructure"}
    assert subject_seeds("owns_traversal", [infra, SVC_B]) == (SVC_B, infra)
    assert subject_seeds("epic_impact", [SVC_A, ITEM]) == (ITEM,)
    assert subject_seeds("vector", [SVC_A]) is None  # no subject known: never started early


@pytest.fixture
def strategies(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """``t_first``: answers about its first Service seed; ``t_blind``: never reads seeds."""
    seen: list[list[str]] = []

    async def first(ctx: SearchContext) -> StrategyResult:
        services = [s["ceid"] for s in ctx.seeds if s["label"] == "Service"]
        seen.append(services)
        return StrategyResult("t_first", facts=[{"subject": services[:1]}])

    async def blind(ctx: SearchContext) -> StrategyResult:
        seen.append([])
        return StrategyResult("t_blind", facts=[{"subject": "from the question"}])

    monkeypatch.setitem(STRATEGIES, "t_first", first)
    monkeypatch.setitem(STRATEGIES, "t_blind", blind)
    monkeypatch.setitem(SUBJECT_LABELS, "t_first", (("Service",),))
    monkeypatch.setitem(SUBJECT_LABELS, "t_blind", (("Service",),))
    return seen


def _ctx() -> SearchContext:
    return SearchContext(None, "q", None, None, None, None, None)  # type: ignore[arg-type]


def _early(name: str, named: list[dict[str, Any]], final: list[dict[str, Any]],
           plan: list[str] | None = None, staged: bool = True) -> Any:
    async def run() -> Any:
        early = pipeline._Early(_ctx(), name, named)
        return await early.result(plan or [name, "t_rest"], staged, final)
    return asyncio.run(run())


def test_kept_when_the_fuzzy_matches_only_append(strategies: list[list[str]]) -> None:
    ready = _early("t_first", [TEAM, SVC_A], [TEAM, SVC_A, SVC_B])
    assert ready is not None and ready[0].facts == [{"subject": ["service:a"]}]
    assert strategies == [["service:a"]]


def test_dropped_when_the_fuzzy_matches_give_another_subject(strategies: list[list[str]]
                                                             ) -> None:
    assert _early("t_first", [TEAM], [TEAM, SVC_B]) is None  # the plan runs it again


def test_kept_when_the_strategy_never_read_the_seeds(strategies: list[list[str]]) -> None:
    ready = _early("t_blind", [], [ITEM, SVC_B])
    assert ready is not None and ready[0].facts == [{"subject": "from the question"}]


def test_dropped_when_the_plan_changed(strategies: list[list[str]]) -> None:
    assert _early("t_first", [SVC_A], [SVC_A], plan=["nl_cypher", "t_first"]) is None
    assert _early("t_first", [SVC_A], [SVC_A], staged=False) is None


def test_a_failing_early_run_is_left_to_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(ctx: SearchContext) -> StrategyResult:
        raise RuntimeError("boom")

    monkeypatch.setitem(STRATEGIES, "t_broken", broken)
    assert _early("t_broken", [SVC_A], [SVC_A]) is None
