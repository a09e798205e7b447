"""Search presets as data: which strategies each question family runs (Graphiti-style)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from substrate.retrieval import strategies_graph as g
from substrate.retrieval import strategies_messages as m
from substrate.retrieval import strategies_text as t
from substrate.retrieval.answer import NOTE_ANSWERS
from substrate.retrieval.context import SearchContext, StrategyResult
from substrate.retrieval.router import Intent, asks_for_risks

Strategy = Callable[[SearchContext], Awaitable[StrategyResult]]

STRATEGIES: dict[str, Strategy] = {
    "local_graphrag": g.local_graphrag,
    "dependencies": g.dependencies,
    "callers": g.callers,
    "owns_traversal": g.ownership,
    "memory": g.memory,
    "vector": t.vector,
    "keyword": t.keyword,
    "chunk_graph": t.chunk_graph,
    "message_flows": m.message_flows,
}

PLANS: dict[str, tuple[str, ...]] = {
    Intent.DEPENDENCY: ("dependencies", "local_graphrag", "vector", "keyword"),
    Intent.CALLERS: ("callers", "local_graphrag", "keyword"),
    Intent.OWNERSHIP: ("owns_traversal", "local_graphrag", "keyword"),
    Intent.DECISION_RATIONALE: ("memory", "chunk_graph", "vector", "keyword"),
    Intent.TEMPORAL: ("vector", "keyword", "chunk_graph"),
    Intent.STRATEGIC_RISKS: ("vector", "keyword", "chunk_graph"),
    Intent.EPIC_IMPACT: ("vector", "keyword"),
    Intent.INTENT_MISMATCH: ("vector", "keyword"),
    Intent.ATTRIBUTES: ("dependencies", "keyword"),
    # what the code publishes and consumes; nothing: the callers or dependencies it asked for
    Intent.MESSAGES: ("message_flows", "callers", "dependencies", "keyword"),
    Intent.WHEN: ("keyword",),
    Intent.FREE_TEXT: ("vector", "keyword", "chunk_graph", "local_graphrag"),
}


def register(name: str, strategy: Strategy, *intents: str) -> None:
    """Add a strategy (later modules: temporal, risks, epic impact) to the presets."""
    STRATEGIES[name] = strategy
    for intent in intents:
        PLANS[intent] = (name, *PLANS.get(intent, ()))


# UC-04: a risk question is answered from the stored ranking of the GDS risks job alone (no
# projection, no summary walk); every other strategic question runs the strategic preset
RISK_PLAN = ("risks",)


# One traversal answers these families: the preset's first strategy (the one the answer is
# composed from) runs alone, and the rest of the preset only when it did not answer (no
# subject named or found: the answer then falls back to the hybrid hits)
PRIMARY_FIRST: dict[str, str] = {Intent.DEPENDENCY: "dependencies", Intent.CALLERS: "callers",
                                 Intent.OWNERSHIP: "owns_traversal",
                                 Intent.MESSAGES: "message_flows",
                                 Intent.EPIC_IMPACT: "epic_impact",
                                 # the incident window (UC-06) and the PR check (UC-03): the
                                 # answer is their note whenever they found facts
                                 Intent.TEMPORAL: "temporal",
                                 Intent.INTENT_MISMATCH: "intent"}


# strategies that run beside the answering one in the first stage: the answer's calibrated
# confidence reads them (``calibration.calibrated``: a window's changes before the incident)
FIRST_STAGE_WITH: dict[str, tuple[str, ...]] = {"temporal": ("window_changes",)}


def first_stage(plan: list[str]) -> list[str]:
    """The strategies of a staged ``plan`` run first: its answering strategy and those the
    answer's confidence reads; the rest run only when it found nothing."""
    return [plan[0], *(n for n in FIRST_STAGE_WITH.get(plan[0], ()) if n in plan[1:])]


def answered(name: str, result: StrategyResult) -> bool:
    """Has the answering strategy ``name`` found what the answer is composed from
    (``answer.compose``; a ``NOTE_ANSWERS`` strategy answers with its note only when it
    has facts)? Then the rest of its preset is not run."""
    return bool(result.facts) and (name not in NOTE_ANSWERS or bool(result.note))


# The seeds each answering strategy takes its subject from: for every group of labels, the
# first seed with one of them (``_directed``: the first service; ownership: the first service
# or module, else the first named thing; epic impact: the first project item when no key in
# the question resolves)
SUBJECT_LABELS: dict[str, tuple[tuple[str, ...], ...]] = {
    "dependencies": (("Service", "Infrastructure"),),
    "callers": (("Service", "Infrastructure"),),
    "owns_traversal": (("Service", "Module"), ("Service", "Infrastructure", "Module")),
    "epic_impact": (("ProjectItem",),),
}


def subject_seeds(strategy: str, seeds: list[dict[str, Any]]) -> tuple[Any, ...] | None:
    """What of ``seeds`` decides ``strategy``'s subject (None: not known for it): two seed
    lists with the same view give the strategy the same result."""
    groups = SUBJECT_LABELS.get(strategy)
    if groups is None:
        return None
    return tuple(next((s for s in seeds if s.get("label") in g), None) for g in groups)


def primary_first(intent: str, plan: list[str]) -> bool:
    """Does ``plan`` (the family's own preset, untouched) start with its answering strategy?"""
    return (len(plan) > 1 and plan[0] == PRIMARY_FIRST.get(intent)
            and plan == list(PLANS[intent]))


def plan_for(intent: str, question: str = "") -> tuple[str, ...]:
    if intent == Intent.STRATEGIC_RISKS and asks_for_risks(question):
        return RISK_PLAN
    return PLANS.get(intent, PLANS[Intent.FREE_TEXT])
