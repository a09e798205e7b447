"""A reading that matched nothing, when no other retrieval found an answer either: "nothing
matches" is the answer (with the translator's negative confidence), not a list of whatever
hybrid retrieval happened to rank first."""

from __future__ import annotations

from substrate.retrieval.answer import Citation
from substrate.retrieval.context import StrategyResult
from substrate.retrieval.nl_cypher import assumptions as assumed
from substrate.retrieval.nl_cypher import hook
from substrate.retrieval.nl_cypher.parser import parse
from tests.unit.test_nl_cypher_parser import NOW, SCHEMA


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


def test_a_listing_of_what_lacks_a_relationship_says_every_one_has_it() -> None:
    """"Which services have no owner?" where CODEOWNERS' "*" gives every service one: the
    empty reading says that every Service has an owner, not only that nothing matched."""
    lacking = parse("Which services have no owner?", SCHEMA, NOW).lacking()
    assert lacking is not None and lacking["label"] == "Service"
    assert lacking["direction"] == "in" and "OWNS" in lacking["types"]
    results = _results()
    results[hook.NAME].facts[0]["attempts"][0]["lacking"] = {
        "label": "Service", "types": ["OWNS", "PRIMARY_OWNER"], "direction": "in",
        "other": ["Developer", "Team"]}
    text, cites = hook.answer(results, "No grounded answer for this question.", [])
    assert text.startswith("None: every Service has an OWNS or PRIMARY_OWNER relationship "
                           "from a Developer or Team (") and cites == []
    assert hook.says_nothing_matches(text) and hook.says_nothing_matches(hook.EMPTY_ONLY)
    # not a listing of what lacks something: no such reading
    assert parse("Which services call checkout?", SCHEMA, NOW).lacking() is None
    assert parse("How many services have no owner?", SCHEMA, NOW).lacking() is None
