"""A reading that matched nothing, when no other retrieval found an answer either: "nothing
matches" is the answer (with the translator's negative confidence), not a list of whatever
hybrid retrieval happened to rank first."""

from __future__ import annotations

from substrate.retrieval.answer import Citation
from substrate.retrieval.context import StrategyResult
from substrate.retrieval.nl_cypher import assumptions as assumed
from substrate.retrieval.nl_cypher import hook


def _results() -> dict[str, StrategyResult]:
    empty = StrategyResult(hook.NAME)
    empty.facts.append({"attempts": [{"translator": "embedded", "outcome": "empty",
                                      "cypher": "MATCH (n:Service) WHERE NOT EXISTS {...}"}],
                        "usage": {}})
    return {hook.NAME: empty}


def test_nothing_matches_when_no_family_answered() -> None:
    noise: list[Citation] = [{"n": 1, "from": "pr:427", "to": "pr:427",
                              "evidence_ref": "github:pr/427"}]
    text, cites = hook.answer(_results(), "No family answered this question; the most "
                              "relevant evidence is: PR #427 (PullRequest).", noise)
    assert text == hook.EMPTY_ONLY and cites == []
    block = hook.empty_confidence({"confidence": 0.0}, _results())
    assert block["confidence"] == round(assumed.PRIOR["embedded"] * assumed.EMPTY, 3)
    assert block["low_confidence_warning"] is True and block["evidence_confidence"] == 0.0


def test_a_family_answer_stays_beside_the_empty_reading() -> None:
    text, _ = hook.answer(_results(), "checkout depends on: kafka[1].", [])
    assert text == hook.EMPTY_READING + "checkout depends on: kafka[1]."
