"""Conflict resolution strategies on hand-made hops (pure logic)."""

from __future__ import annotations

from typing import Any

import pytest

from substrate.errors import BadRequest
from substrate.graph.ontology import load_ontology
from substrate.retrieval.conflict_resolution import resolve
from substrate.retrieval.context import StrategyResult


def owner(team: str, conf: float, version: int) -> dict[str, Any]:
    return {"type": "PRIMARY_OWNER", "from": team, "to": "service:x", "confidence": conf,
            "valid_from_v": version, "evidence_ref": f"{team}#L1", "source": "t"}


def results(*hops: dict[str, Any]) -> dict[str, StrategyResult]:
    calls = {"type": "CALLS", "from": "service:x", "to": "service:y", "confidence": 1.0,
             "valid_from_v": 1, "evidence_ref": "c#L1", "source": "t"}
    return {"owns_traversal": StrategyResult("owns_traversal", hops=[*hops, calls])}


def run(strategy: str, *hops: dict[str, Any]) -> tuple[list[str], Any]:
    out, res = resolve(results(*hops), load_ontology(), strategy)
    kept = sorted(h["from"] for h in out["owns_traversal"].hops if h["type"] == "PRIMARY_OWNER")
    return kept, res.get(("service:x", "PRIMARY_OWNER"))


def test_highest_confidence_then_newest_then_name() -> None:
    assert run("highest_confidence", owner("team:a", 0.99, 1), owner("team:b", 0.95, 5))[0] \
        == ["team:a"]
    assert run("highest_confidence", owner("team:a", 0.95, 1), owner("team:b", 0.95, 5))[0] \
        == ["team:b"]
    assert run("highest_confidence", owner("team:b", 0.95, 5), owner("team:a", 0.95, 5))[0] \
        == ["team:a"]


def test_newest_then_confidence() -> None:
    kept, res = run("newest", owner("team:a", 0.99, 1), owner("team:b", 0.95, 5))
    assert kept == ["team:b"] and res.dropped == ("team:a",)


def test_merge_and_none_keep_everything() -> None:
    for strategy in ("merge", "none"):
        kept, _ = run(strategy, owner("team:a", 0.99, 1), owner("team:b", 0.95, 5))
        assert kept == ["team:a", "team:b"]
    assert run("none", owner("team:a", 0.99, 1), owner("team:b", 0.95, 5))[1] is None


def test_no_conflict_no_resolution_and_other_edges_untouched() -> None:
    out, res = resolve(results(owner("team:a", 0.99, 1)), load_ontology(), "newest")
    assert res == {} and len(out["owns_traversal"].hops) == 2


def test_unknown_strategy() -> None:
    with pytest.raises(BadRequest):
        resolve(results(), load_ontology(), "loudest")
