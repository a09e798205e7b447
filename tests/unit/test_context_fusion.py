from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from substrate.retrieval.bundle import ConflictMarker, ConflictValue
from substrate.retrieval.context_fusion import (
    ELLIPSIS,
    ContextItem,
    dedupe,
    estimate_tokens,
    find_conflicts,
    fit_budget,
    fuse_context,
    jaccard,
    shingles,
    single_valued_predicates,
)

ONTOLOGY = Path(__file__).resolve().parents[2] / "substrate" / "ontology.yaml"


def item(id: str, text: str, score: float, **kw: str | float | None) -> ContextItem:
    return ContextItem(id, text, score, **kw)  # type: ignore[arg-type]


def test_estimate_tokens_takes_the_larger_rule() -> None:
    assert estimate_tokens("one two three four five six seven eight nine ten") == 13  # words
    assert estimate_tokens("x" * 100) == 25  # chars / 4 beats 1 word × 1.3
    assert estimate_tokens("") == 0


def test_jaccard_of_word_shingles() -> None:
    a, b = shingles("Checkout calls Auth"), shingles("checkout calls auth service")
    assert jaccard(a, b) == pytest.approx(3 / 4)
    assert jaccard(shingles("a b c", 2), shingles("a b d", 2)) == pytest.approx(1 / 3)
    assert shingles("one", 2) == frozenset({("one",)})
    assert jaccard(frozenset(), shingles("x")) == 0.0


def test_dedupe_keeps_the_best_scored_copy() -> None:
    items = [
        item("low", "Checkout depends on Redis for sessions", 0.4),
        item("high", "checkout depends on redis for sessions.", 0.9),
        item("other", "Billing publishes invoices to Kafka", 0.5),
    ]
    kept, dropped = dedupe(items)
    assert [i.id for i in kept] == ["high", "other"]
    assert dropped == [("low", "high")]
    kept, dropped = dedupe(items, threshold=1.01)
    assert len(kept) == 3 and dropped == []


def test_dedupe_never_merges_different_objects_of_one_subject_and_predicate() -> None:
    a = item("a", "checkout primary owner is team payments", 0.9, subject="service:checkout",
             predicate="PRIMARY_OWNER", object="team:payments")
    b = item("b", "checkout primary owner is team platform", 0.8, subject="service:checkout",
             predicate="PRIMARY_OWNER", object="team:platform")
    kept, dropped = dedupe([a, b], threshold=0.5)
    assert [i.id for i in kept] == ["a", "b"] and dropped == []


def test_single_valued_predicates_from_the_ontology() -> None:
    ontology = yaml.safe_load(ONTOLOGY.read_text())
    assert single_valued_predicates(ontology) == {"PRIMARY_OWNER", "SUPERSEDES"}
    assert single_valued_predicates({}) == frozenset()


def test_conflicts_surface_every_value_with_its_evidence() -> None:
    items = [
        item("a", "x", 0.9, subject="service:checkout", predicate="PRIMARY_OWNER",
             object="team:payments", evidence_ref="CODEOWNERS#L3@abc1234", confidence=0.9),
        item("b", "y", 0.8, subject="service:checkout", predicate="PRIMARY_OWNER",
             object="team:platform", evidence_ref="backstage:catalog/checkout.yaml",
             confidence=0.7),
        item("c", "z", 0.7, subject="service:checkout", predicate="PRIMARY_OWNER",
             object="team:payments", evidence_ref="slack:C1/123", confidence=0.95),
        item("d", "w", 0.6, subject="service:checkout", predicate="DEPENDS_ON", object="redis"),
        item("e", "v", 0.6, subject="service:checkout", predicate="DEPENDS_ON", object="kafka"),
        item("f", "u", 0.6, subject="service:billing", predicate="PRIMARY_OWNER",
             object="team:billing"),
    ]
    assert find_conflicts(items, {"PRIMARY_OWNER", "SUPERSEDES"}) == (
        ConflictMarker("service:checkout", "PRIMARY_OWNER", (
            ConflictValue("team:payments", ("CODEOWNERS#L3@abc1234", "slack:C1/123"), 0.95),
            ConflictValue("team:platform", ("backstage:catalog/checkout.yaml",), 0.7),
        )),
    )
    assert find_conflicts(items, set()) == ()


def test_budget_keeps_a_prefix_and_flags_truncation() -> None:
    items = [item(f"i{n}", "word " * 10, 1.0 - n / 10) for n in range(5)]  # 13 tokens each
    kept, dropped, partial, used = fit_budget(items, 40, min_partial_tokens=32)
    assert [i.id for i in kept] == ["i0", "i1", "i2"]
    assert (dropped, partial, used) == (["i3", "i4"], [], 39)
    assert fit_budget(items, 1000)[1:] == ([], [], 65)


def test_budget_cuts_an_item_at_a_word_boundary_when_enough_room_is_left() -> None:
    long_text = " ".join(f"w{n}" for n in range(100))
    items = [item("a", "short text here", 0.9), item("b", long_text, 0.8), item("c", "z", 0.1)]
    kept, dropped, partial, used = fit_budget(items, 50, min_partial_tokens=10)
    assert [i.id for i in kept] == ["a", "b"] and dropped == ["c"] and partial == ["b"]
    assert kept[1].text.endswith(ELLIPSIS) and kept[1].text.startswith("w0 w1")
    assert used <= 50
    # the cut is maximal: one more word would not have fitted
    room = 50 - estimate_tokens("short text here")
    n_words = len(kept[1].text.split()) - 1
    assert estimate_tokens(kept[1].text) <= room
    assert estimate_tokens(" ".join(long_text.split()[: n_words + 1]) + ELLIPSIS) > room


def test_an_oversized_first_item_is_cut_rather_than_emptying_the_context() -> None:
    kept, dropped, partial, used = fit_budget([item("big", "word " * 1000, 1.0)], 100)
    assert partial == ["big"] and dropped == [] and 0 < used <= 100


def test_fuse_context_end_to_end() -> None:
    items = [
        item("dup", "Checkout depends on Redis", 0.3),
        item("a", "checkout depends on redis", 0.9),
        item("own1", "owner payments", 0.8, subject="service:checkout",
             predicate="PRIMARY_OWNER", object="team:payments", evidence_ref="CODEOWNERS#L1"),
        item("own2", "owner platform " + "pad " * 200, 0.2, subject="service:checkout",
             predicate="PRIMARY_OWNER", object="team:platform", evidence_ref="catalog#c"),
    ]
    fused = fuse_context(items, max_tokens=20, single_valued={"PRIMARY_OWNER"})
    assert [i.id for i in fused.items] == ["a", "own1"]
    assert fused.duplicates == (("dup", "a"),)
    assert fused.dropped == ("own2",) and fused.truncated
    # the conflict is reported although one side did not fit the budget
    assert [v.value for v in fused.conflicts[0].values] == ["team:payments", "team:platform"]
    assert fused.tokens == sum(estimate_tokens(i.text) for i in fused.items)


def test_fuse_context_within_budget_is_not_truncated() -> None:
    fused = fuse_context([item("a", "x y", 1.0)], max_tokens=10)
    assert not fused.truncated and fused.dropped == () and fused.partial == ()
    assert fused.tokens == math.ceil(2 * 1.3)
