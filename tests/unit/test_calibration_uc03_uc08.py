"""The confidence reported for an intent check (UC-03) and an epic's impact (UC-08): their
own, not the fallback's 0.1 that flagged every such answer as a guess."""

from __future__ import annotations

from substrate.retrieval.calibration import (
    EPIC_IMPACT,
    FALLBACK,
    INTENT_CHECK,
    NEGATIVE,
    calibrated,
)
from substrate.retrieval.context import StrategyResult


def _hop(ref: str, confidence: float = 1.0) -> dict[str, object]:
    return {"type": "ASSERTS", "from": "intent:a", "to": "service:b", "evidence_ref": ref,
            "confidence": confidence, "source": ref}


def test_an_epic_answer_walked_from_the_graph_is_scored_like_a_dependency_answer() -> None:
    res = StrategyResult("epic_impact")
    res.facts.append({"item": {"ceid": "item:shop-10"}, "services": [{"ceid": "service:b"}]})
    res.hops = [_hop("jira:SHOP-10#intent")]
    got = calibrated("epic_impact", {"epic_impact": res}, "Faster checkout affects b.")
    assert got == EPIC_IMPACT  # one source, full-confidence edge: the prior itself
    res.hops.append(_hop("jira:SHOP-11#intent"))  # a second, independent source adds to it
    assert EPIC_IMPACT < calibrated("epic_impact", {"epic_impact": res}, "...") < 1.0


def test_an_epic_answer_without_edges_is_negative_and_no_answer_is_the_fallback() -> None:
    empty = StrategyResult("epic_impact")
    empty.facts.append({"epics": [], "order": "most"})  # no epic names a service
    assert calibrated("epic_impact", {"epic_impact": empty}, "No epic links ...") == NEGATIVE
    nothing = StrategyResult("epic_impact")  # a note, no facts
    assert calibrated("epic_impact", {"epic_impact": nothing}, "x") == FALLBACK


def test_an_intent_check_reports_its_own_confidence() -> None:
    checked = StrategyResult("intent")
    checked.facts.append({"pr": {"ceid": "pr:447"}, "flagged": True, "score": 0.21})
    got = calibrated("intent_mismatch", {"intent": checked}, "PR #447 ... flagged")
    assert got == INTENT_CHECK
    assert calibrated("intent_mismatch", {"intent": StrategyResult("intent")}, "x") == FALLBACK
