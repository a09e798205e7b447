"""The sentence answering "which epic affects the most services?" (RSN-UC-08, no epic
named): the epics tied at the top first, each with what it affects and the asserting lines."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.impact import ranking_hops, ranking_sentence


def _epic(key: str, name: str, services: list[str]) -> dict[str, Any]:
    affected = [{"entity": {"ceid": f"service:{s}", "name": s, "label": "Service"},
                 "intent": f"intent:{key.lower()}",
                 "hops": [{"type": "LINKS_TO", "evidence_ref": f"jira:{key}#intent"},
                          {"type": "ASSERTS", "evidence_ref": f"jira:{key}#assert"}]}
                for s in services]
    return {"item": {"ceid": f"item:{key.lower()}", "name": name, "label": "ProjectItem"},
            "key": key, "affected": affected, "count": len(affected)}


def test_tied_epics_are_named_together_then_the_rest_in_order() -> None:
    ranked = [_epic("A-1", "Checkout", ["cart", "payment"]),
              _epic("A-4", "Growth", ["email", "wishlist"]),
              _epic("A-2", "Tax", ["tax"])]
    text = ranking_sentence(ranked)
    assert text.startswith('A-1 "Checkout" and A-4 "Growth" affect the most services (2 each): '
                           'A-1 "Checkout": cart, payment [jira:A-1#assert]; ')
    assert text.endswith('Then: A-2 "Tax" 1 (tax [jira:A-2#assert]).')


def test_a_single_leader_and_the_fewest_order() -> None:
    ranked = [_epic("A-2", "Tax", ["tax"]), _epic("A-1", "Checkout", ["cart", "payment"])]
    text = ranking_sentence(ranked, fewest=True)
    assert text.startswith('A-2 "Tax" affects the fewest services (1): A-2 "Tax": tax ')


def test_no_epic_and_the_hops_of_every_affected_entity() -> None:
    assert ranking_sentence([]) == "No epic links an intent assertion naming a service."
    ranked = [_epic("A-1", "Checkout", ["cart", "payment"])]
    assert [h["type"] for h in ranking_hops(ranked)] == ["LINKS_TO", "ASSERTS"] * 2


def test_which_questions_ask_for_the_epics_ranked() -> None:
    from substrate.retrieval.strategies_time import asks_epic_ranking

    for q in ("Which epic affects the most services?", "Top 2 epics by services affected",
              "Rank the epics by the number of services they impact",
              "Which epic affects the fewest services?",
              "Which of our epics touches the most systems?"):
        assert asks_epic_ranking(q), q
    for q in ("Which epic has the most issues?",  # another measure
              "What are the top services affected by the checkout epic?",  # one epic
              "Which services does epic SHOP-10 affect most?",  # named by its key
              "Which services does the checkout epic affect?"):
        assert not asks_epic_ranking(q), q
