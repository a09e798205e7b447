"""The ids a question's phrases would name, looked up on a tenant with more names than the
embedded translator's lexicon holds (``nl_cypher.schema``)."""

from __future__ import annotations

from substrate.retrieval.nl_cypher.lexicon import entity_phrases
from substrate.retrieval.nl_cypher.parser import Schema
from substrate.retrieval.nl_cypher.schema import MAX_PHRASE, named_ids, with_names

PREFIXES = ("service", "team", "adr")


def test_each_run_of_words_is_tried_as_every_kind_of_id() -> None:
    ids = named_ids("Who owns ledger-db?", PREFIXES)
    assert {"service:ledger-db", "team:ledger-db", "adr:ledger-db", "service:ledger",
            "service:owns-ledger-db", "team:who-owns"} <= set(ids)
    assert len(ids) == len(set(ids))  # each id once


def test_a_run_that_starts_with_a_prefix_names_that_kind_with_padded_numbers() -> None:
    ids = set(named_ids("why was adr 3 accepted", PREFIXES))
    assert {"adr:3", "adr:003", "adr:0003"} <= ids
    assert "service:3" not in ids  # a number alone names nothing


def test_runs_stop_at_the_longest_phrase_the_tagger_tries() -> None:
    question = " ".join(f"w{i}" for i in range(MAX_PHRASE + 2))
    longest = max(named_ids(question, ("service",)), key=len)
    assert longest.count("-") == MAX_PHRASE - 1


def test_names_found_are_added_beside_the_ones_held() -> None:
    held = Schema(frozenset(), entity_phrases([{"ceid": "service:checkout", "label": "Service",
                                                "name": "checkout"}]), frozenset())
    rows = [{"ceid": "team:checkout", "label": "Team", "name": "checkout", "aliases": []},
            {"ceid": "adr:0003", "label": "DecisionNode", "name": "Use Kafka",
             "status": "accepted", "status_text": "Approved"}]
    merged = with_names(held, rows)
    assert merged.entities[("checkout",)] == [("service:checkout", "Service"),
                                              ("team:checkout", "Team")]
    assert merged.entities[("adr", "3")] == [("adr:0003", "DecisionNode")]
    assert ("DecisionNode", "status", "accepted") in (merged.normalised or ())
    assert held.entities[("checkout",)] == [("service:checkout", "Service")]  # unchanged
    assert with_names(held, []) is held
