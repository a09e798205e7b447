"""The counterfactual engine on hand-made facts (pure logic, a stand-in composer)."""

from __future__ import annotations

from typing import Any

import pytest

from substrate.errors import BadRequest
from substrate.retrieval.context import Hit, StrategyResult
from substrate.retrieval.counterfactual import Engine, Options, Scenario, analyse, apply


def hop(a: str, b: str, ref: str, kind: str = "DEPENDS_ON") -> dict[str, Any]:
    return {"type": kind, "from": a, "to": b, "evidence_ref": ref, "confidence": 1.0}


def path(*hops: dict[str, Any]) -> dict[str, Any]:
    return {"subject": {"ceid": "s:a"}, "target": {"ceid": hops[-1]["to"], "label": "Service"},
            "hops": list(hops)}


def compose(intent: str, results: dict[str, StrategyResult],
            fused: list[Hit]) -> tuple[str, list[dict[str, Any]]]:
    facts = results["dependencies"].facts
    cites = [{"evidence_ref": h["evidence_ref"], "from": h["from"], "to": h["to"]}
             for f in facts for h in f["hops"]]
    return ", ".join(f["target"]["ceid"] for f in facts) or "nothing", cites


def engine(budget: int = 32) -> Engine:
    ab, bc, ad = hop("s:a", "s:b", "f#L1"), hop("s:b", "s:c", "f#L2"), hop("s:a", "s:d", "g#L1")
    ad2 = hop("s:a", "s:d", "h#L9", "CALLS")
    facts = [path(ab), path(ab, bc), path(ad), path(ad2)]
    results = {"dependencies": StrategyResult("dependencies", facts=facts)}
    return Engine(compose, "dependency", results, [], ["s:a"], budget)


def test_removing_a_path_edge_drops_everything_behind_it() -> None:
    report = analyse(engine(), Options())
    by_ref = {r["evidence_ref"]: r for r in report["evidence_removal"]}
    assert by_ref["f#L1"]["lost"] == ["s:b", "s:c"]
    assert by_ref["f#L2"]["lost"] == ["s:c"]
    assert by_ref["g#L1"]["changed"] is False  # s:d is also reached through h#L9
    assert report["sensitivity"][0]["evidence_ref"] == "f#L1"
    assert report["minimum_flipping_change"]["evidence_refs"] == ["f#L1"]
    assert report["robustness"] == 0.5  # g#L1 and h#L9 alone change nothing


def test_minimum_flip_needs_both_redundant_proofs() -> None:
    e = engine()
    e.citations = [c for c in e.citations if c["to"] == "s:d"]  # only s:d's two proofs cited
    singles = e.removals()
    flip = e.minimum_flip(singles)
    assert flip is not None and flip["size"] == 2
    assert sorted(flip["evidence_refs"]) == ["g#L1", "h#L9"] and flip["lost"] == ["s:d"]


def test_redirect_and_node_removal() -> None:
    results = engine().results
    moved = apply(results, Scenario(redirect=((("s:b", "DEPENDS_ON", "s:c"), "s:x"),)))
    assert moved["dependencies"].facts[1]["target"]["ceid"] == "s:x"
    gone = apply(results, Scenario(nodes=frozenset({"s:b"})))
    assert [f["target"]["ceid"] for f in gone["dependencies"].facts] == ["s:d", "s:d"]


def test_budget_truncates() -> None:
    report = analyse(engine(budget=1), Options(budget=1))
    assert report["truncated"] and report["recomputations"] == 1


@pytest.mark.parametrize("value", [
    "yes", {"budget": 0}, {"budget": True}, {"remove_edges": ["a->b"]}, {"nope": 1},
    {"shift_to": {"when": 1}}, {"redirect": [{"edge": "a-[X]->b"}]}, {"remove_nodes": [1]},
])
def test_bad_options(value: Any) -> None:
    with pytest.raises(BadRequest):
        Options.parse(value)


def test_options_parse() -> None:
    assert Options.parse(None) is None and Options.parse(False) is None
    assert Options.parse(True) == Options()
    parsed = Options.parse({"remove_edges": ["s:a-[CALLS]->s:b"], "budget": 5})
    assert parsed is not None and parsed.remove_edges == [("s:a", "CALLS", "s:b")]
