"""The confidence reported for a risk answer: the stored ranking's, not the fallback's."""

from __future__ import annotations

from substrate.retrieval.calibration import COMMUNITY_SUMMARIES, FALLBACK, RISKS, calibrated
from substrate.retrieval.context import StrategyResult


def test_a_risk_answer_from_the_stored_ranking_is_not_reported_as_a_guess() -> None:
    ranked = StrategyResult("risks")
    ranked.facts.append({"ceid": "infra:redis", "risk": 2.92})
    answer = "Top architectural risks:\n1. redis (Infrastructure, risk 2.92): ..."
    assert calibrated("strategic_risks", {"risks": ranked}, answer) == RISKS
    nothing = StrategyResult("risks")  # the ranking job has not run: a note, no facts
    assert calibrated("strategic_risks", {"risks": nothing}, "No ranking is stored") == FALLBACK


def test_an_architecture_answer_from_community_summaries_is_not_reported_as_a_guess() -> None:
    summaries = StrategyResult("global_graphrag")
    summaries.facts.append({"community": 3, "relevance": 0.16})
    summaries.note = "Across the system:\n- shipping, warehouse, returns ..."
    answer = summaries.note
    got = calibrated("strategic_risks", {"global_graphrag": summaries,
                                         "risks": StrategyResult("risks")}, answer)
    assert got == COMMUNITY_SUMMARIES
    unsummarised = StrategyResult("global_graphrag")  # no summaries stored: no reduce answer
    assert calibrated("strategic_risks", {"global_graphrag": unsummarised},
                      "No grounded answer") == FALLBACK
