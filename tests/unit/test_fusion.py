from __future__ import annotations

from collections.abc import Sequence

import pytest

from substrate.retrieval.fusion import (
    BlendOptions,
    EdgeContext,
    RankedHit,
    TraversalEdge,
    expand_and_blend,
    graph_score,
    hybrid_seeds,
    ranked_by_score,
    rrf_fuse,
    seed_score,
)

# --- RRF ------------------------------------------------------------------------------------


def test_rrf_hand_computed_three_strategies() -> None:
    fused = rrf_fuse({
        "vector": ["a", "b", "c"],
        "keyword": ["b", "d"],
        "graph": ["c", "b"],
    })
    scores = {c.id: c.score for c in fused}
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert [c.id for c in fused] == ["b", "c", "a", "d"]


def test_rrf_keeps_per_source_ranks_and_scores_for_explanation() -> None:
    fused = rrf_fuse({"vector": [RankedHit("a", 0.91), RankedHit("b", 0.5)],
                      "keyword": [RankedHit("b", 7.2)]})
    b = next(c for c in fused if c.id == "b")
    assert [(s.source, s.rank, s.score) for s in b.sources] == [("keyword", 1, 7.2),
                                                               ("vector", 2, 0.5)]
    assert b.sources[0].contribution == pytest.approx(1 / 61)
    assert b.to_dict()["sources"][1] == {"source": "vector", "rank": 2, "score": 0.5,
                                         "contribution": pytest.approx(1 / 62)}


def test_rrf_ties_break_on_best_rank_then_id() -> None:
    fused = rrf_fuse({"x": ["q", "p"], "y": ["p", "q"]})
    assert fused[0].score == fused[1].score
    assert [c.id for c in fused] == ["p", "q"]
    # k=0: "a" (rank 2 twice) ties "z" and "b" (rank 1 once) at 1.0, but ranks after them
    fused = rrf_fuse({"x": ["z", "a"], "y": ["b", "a"]}, k=0)
    assert [(c.id, c.score) for c in fused] == [("b", 1.0), ("z", 1.0), ("a", 1.0)]


def test_rrf_counts_a_repeat_once_at_its_best_rank() -> None:
    fused = rrf_fuse({"vector": ["a", "b", "a"]})
    assert {c.id: c.score for c in fused} == {"a": pytest.approx(1 / 61),
                                              "b": pytest.approx(1 / 62)}


def test_rrf_weights_k_and_top_k() -> None:
    fused = rrf_fuse({"v": ["a"], "k": ["b"]}, k=10, weights={"v": 0.7, "k": 0.3}, top_k=1)
    assert [c.id for c in fused] == ["a"]
    assert fused[0].score == pytest.approx(0.7 / 11)
    assert rrf_fuse({"v": ["a", "b"]}, k=0)[1].score == pytest.approx(1 / 2)
    with pytest.raises(ValueError):
        rrf_fuse({"v": ["a"]}, k=-1)


def test_rrf_result_does_not_depend_on_dict_order() -> None:
    one = rrf_fuse({"a": ["x", "y"], "b": ["y", "z"], "c": ["z", "x"]})
    two = rrf_fuse({"c": ["z", "x"], "a": ["x", "y"], "b": ["y", "z"]})
    assert [c.to_dict() for c in one] == [c.to_dict() for c in two]


def test_ranked_by_score_orders_by_score_then_id() -> None:
    assert ranked_by_score({"b": 0.5, "a": 0.5, "c": 0.9}) == [
        RankedHit("c", 0.9), RankedHit("a", 0.5), RankedHit("b", 0.5)]


# --- hybrid seeding -------------------------------------------------------------------------

VECTOR = [RankedHit("v1", 0.9), RankedHit("v2", 0.8), RankedHit("v3", 0.7)]


def test_hybrid_seeds_weighted_rrf_hand_computed() -> None:
    seeds = hybrid_seeds(VECTOR, ["k1", "v2"], keyword_weight=0.3, top_k=4)
    assert [s.id for s in seeds] == ["v2", "v1", "v3", "k1"]
    by_id = {s.id: s for s in seeds}
    assert by_id["v2"].rrf_score == pytest.approx(0.7 / 62 + 0.3 / 62)
    assert by_id["v1"].rrf_score == pytest.approx(0.7 / 61)
    assert by_id["k1"].rrf_score == pytest.approx(0.3 / 61)
    assert (by_id["v2"].vector_score, by_id["v2"].vector_rank, by_id["v2"].keyword_rank) == (
        0.8, 2, 2)
    assert (by_id["k1"].vector_score, by_id["k1"].vector_rank) == (None, None)


def test_hybrid_seeds_top_k_and_disabled_keyword_weight() -> None:
    assert [s.id for s in hybrid_seeds(VECTOR, ["k1"], keyword_weight=0.3, top_k=2)] == [
        "v1", "v2"]
    off = hybrid_seeds(VECTOR, ["k1", "v3"], keyword_weight=0.0, top_k=10)
    assert [s.id for s in off] == ["v1", "v2", "v3"]
    assert all(s.keyword_rank is None for s in off)
    with pytest.raises(ValueError):
        hybrid_seeds(VECTOR, [], keyword_weight=1.5)


# --- blending -------------------------------------------------------------------------------


def test_spec_blending_examples() -> None:
    # chunk-graph-rag.md: "A chunk discovered at hop 2 via an edge with weight 0.8: 0.12"
    assert graph_score(0.8, 2) == pytest.approx(0.3 * 0.8 * 0.5) == pytest.approx(0.12)
    # "A seed chunk with cosine similarity 0.9: score = 0.7 × 0.9 + 0.3 × 1.0 = 0.93"
    assert seed_score(0.9) == pytest.approx(0.93)
    assert graph_score(0.8, 1) == pytest.approx(0.3 * 0.8 * 0.7)


def test_hop_decay_repeats_its_last_value_past_the_end() -> None:
    assert graph_score(1.0, 3) == pytest.approx(0.3 * 0.5)
    opts = BlendOptions(hop_decay=(1.0, 0.9), graph_weight=0.5, vector_weight=0.5)
    assert graph_score(1.0, 4, opts) == pytest.approx(0.45)
    assert seed_score(0.4, opts) == pytest.approx(0.7)
    with pytest.raises(ValueError):
        graph_score(1.0, 0)
    with pytest.raises(ValueError):
        BlendOptions(hop_decay=())
    with pytest.raises(ValueError):
        BlendOptions(vector_weight=-0.1)


EDGES = [
    TraversalEdge("s1", "a", "depends_on", 0.8, "needs a"),
    TraversalEdge("s2", "a", "references", 0.9, "cites a"),
    TraversalEdge("a", "b", "elaborates", 0.6),
    TraversalEdge("b", "s1", "sequence", 1.0),  # cycle back to a seed
    TraversalEdge("b", "c", "sequence", 1.0),  # hop 3: beyond max_hops=2
    TraversalEdge("s1", "weak", "similar_to", 0.2),
    TraversalEdge("x", "s2", "caused_by", 0.5),  # incoming to a seed
]


class Fetcher:
    def __init__(self, edges: Sequence[TraversalEdge]) -> None:
        self.edges = edges
        self.calls: list[list[str]] = []

    def __call__(self, ids: Sequence[str]) -> list[TraversalEdge]:
        self.calls.append(list(ids))
        return [e for e in self.edges if e.source_id in ids or e.target_id in ids]


def test_expand_and_blend_scores_seeds_and_graph_chunks() -> None:
    fetch = Fetcher(EDGES)
    results = expand_and_blend({"s1": 0.9, "s2": 0.5}, fetch,
                               BlendOptions(min_traversal_score=0.3))
    scores = {r.id: (round(r.score, 6), r.hop) for r in results}
    assert scores == {
        "s1": (0.93, 0),
        "s2": (round(0.7 * 0.5 + 0.3, 6), 0),
        "a": (round(0.3 * 0.9 * 0.7, 6), 1),  # best of the two edges reaching it
        "b": (round(0.3 * 0.6 * 0.5, 6), 2),
    }
    assert [r.id for r in results] == ["s1", "s2", "a", "b"]
    assert fetch.calls == [["s1", "s2"], ["a"]]
    a = next(r for r in results if r.id == "a")
    assert a.graph_context == (EdgeContext("s2", "references", "cites a"),
                               EdgeContext("s1", "depends_on", "needs a"))
    assert next(r for r in results if r.id == "s1").graph_context == ()
    assert next(r for r in results if r.id == "s1").is_seed


def test_expand_and_blend_min_traversal_score_relation_filter_and_direction() -> None:
    no_min = {r.id for r in expand_and_blend({"s1": 0.9}, Fetcher(EDGES), BlendOptions())}
    assert "weak" in no_min and "x" not in no_min
    both = expand_and_blend({"s2": 0.5}, Fetcher(EDGES), BlendOptions(bidirectional=True))
    assert {r.id: r.hop for r in both}["x"] == 1
    only_refs = expand_and_blend({"s1": 0.9, "s2": 0.5}, Fetcher(EDGES),
                                 BlendOptions(relation_filter=frozenset({"references"})))
    assert {r.id for r in only_refs} == {"s1", "s2", "a"}


def test_expand_and_blend_depth_and_top_k() -> None:
    deep = expand_and_blend({"s1": 0.9}, Fetcher(EDGES), BlendOptions(max_hops=3))
    assert {r.id: r.hop for r in deep}["c"] == 3
    assert {r.id: r.score for r in deep}["c"] == pytest.approx(0.3 * 1.0 * 0.5)
    assert [r.id for r in expand_and_blend({"s1": 0.9}, Fetcher(EDGES), top_k=1)] == ["s1"]
    flat = expand_and_blend({"s1": 0.9}, Fetcher(EDGES), BlendOptions(max_hops=0))
    assert [r.id for r in flat] == ["s1"]
