"""Rank fusion and graph score blending — pure arithmetic, no database.

Three pieces, each taken from a spec and quoted where it is implemented:

* Reciprocal Rank Fusion over any number of ranked candidate lists
  (reasoning-search-service.txt, RSN-06): ``RRF_score(d) = Σ_i 1 / (k + rank_i(d))``, k = 60.
* Hybrid seeding (chunk-graph-rag.md): vector and keyword seed lists merged by RRF with a
  keyword weight ("30% keyword, 70% vector for seed selection").
* GraphRetriever score blending (chunk-graph-rag.md): seeds score
  ``vectorWeight × vectorScore + graphWeight × 1.0``; graph-discovered chunks score
  ``graphWeight × edgeWeight × hopDecay[hop]``.

Ranks are 1-based, as in the RRF paper (Cormack, Clarke & Büttcher 2009). Every sort here
breaks ties on the candidate id, so equal inputs always give equal outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_RRF_K = 60


@dataclass(frozen=True)
class RankedHit:
    """One entry of a strategy's result list; ``score`` is that strategy's own score."""

    id: str
    score: float | None = None


@dataclass(frozen=True)
class SourceRank:
    """Where a fused candidate stood in one input list, and what that earned it."""

    source: str
    rank: int
    score: float | None
    contribution: float


@dataclass(frozen=True)
class FusedCandidate:
    id: str
    score: float
    sources: tuple[SourceRank, ...]

    def best_rank(self) -> int:
        return min(s.rank for s in self.sources)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "sources": [
                {"source": s.source, "rank": s.rank, "score": s.score,
                 "contribution": s.contribution}
                for s in self.sources
            ],
        }


def ranked_by_score(scores: Mapping[str, float]) -> list[RankedHit]:
    """Turn ``{id: score}`` into a ranked list: score descending, then id."""
    return [RankedHit(i, s) for i, s in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def rrf_fuse(
    lists: Mapping[str, Sequence[RankedHit | str]],
    *,
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
    top_k: int | None = None,
) -> list[FusedCandidate]:
    """Reciprocal Rank Fusion: ``RRF_score(d) = Σ_i w_i / (k + rank_i(d))``.

    ``lists`` maps a strategy name (``"vector"``, ``"graph"``, ``"keyword"``, ...) to its
    result list, best first. ``w_i`` is 1 unless ``weights`` names the strategy, which gives
    the spec's plain formula by default. A candidate listed twice by one strategy counts once,
    at its best rank. Strategies are summed in name order so floating-point results do not
    depend on dict order. Output: score descending, then best rank, then id.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    per_id: dict[str, list[SourceRank]] = {}
    for source in sorted(lists):
        weight = 1.0 if weights is None else weights.get(source, 1.0)
        seen: set[str] = set()
        for rank, hit in enumerate(lists[source], start=1):
            item = RankedHit(hit) if isinstance(hit, str) else hit
            if item.id in seen:
                continue
            seen.add(item.id)
            entry = SourceRank(source, rank, item.score, weight / (k + rank))
            per_id.setdefault(item.id, []).append(entry)
    fused = [FusedCandidate(i, sum(s.contribution for s in ranks), tuple(ranks))
             for i, ranks in per_id.items()]
    fused.sort(key=lambda c: (-c.score, c.best_rank(), c.id))
    return fused if top_k is None else fused[:top_k]


# --- hybrid seeding -------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """A seed chosen by hybrid seeding; ``vector_score`` is None for keyword-only seeds."""

    id: str
    rrf_score: float
    vector_score: float | None
    vector_rank: int | None
    keyword_rank: int | None


def hybrid_seeds(
    vector: Sequence[RankedHit],
    keyword: Sequence[RankedHit | str],
    *,
    keyword_weight: float,
    top_k: int = 10,
    k: int = DEFAULT_RRF_K,
) -> list[Seed]:
    """Hybrid seeding (chunk-graph-rag.md, ``WithSeedKeywordWeight``).

    "combine vector and keyword results via Reciprocal Rank Fusion (RRF) before graph
    traversal ... ``WithSeedKeywordWeight(0.3)`` // 30% keyword, 70% vector for seed
    selection". So ``seed_rrf(d) = (1 - w) / (k + rank_vector(d)) + w / (k + rank_keyword(d))``
    and the ``top_k`` best become the seeds. ``w = 0`` is the spec's default (disabled):
    the vector list alone, cut to ``top_k``.

    RRF only *selects* seeds. Blending (``seed_score``) still uses the cosine ``vectorScore``
    the spec names; a keyword-only seed has none (``vector_score=None``) — the caller either
    computes its cosine (``vector.similarity.cosine``) or blends it with 0.0.
    """
    if not 0.0 <= keyword_weight <= 1.0:
        raise ValueError("keyword_weight must be in [0, 1]")
    lists: dict[str, Sequence[RankedHit | str]] = {"vector": vector}
    if keyword_weight > 0.0:
        lists["keyword"] = keyword
    fused = rrf_fuse(lists, k=k, weights={"vector": 1.0 - keyword_weight,
                                          "keyword": keyword_weight}, top_k=top_k)
    seeds = []
    for cand in fused:
        ranks = {s.source: s for s in cand.sources}
        vec, kw = ranks.get("vector"), ranks.get("keyword")
        seeds.append(Seed(cand.id, cand.score, vec.score if vec else None,
                          vec.rank if vec else None, kw.rank if kw else None))
    return seeds


# --- GraphRetriever score blending -----------------------------------------------------------


@dataclass(frozen=True)
class BlendOptions:
    """GraphRetriever options (chunk-graph-rag.md "Retrieval Options Reference").

    ``hop_decay``: "Score multiplier per hop level. Index 0 = seed (unused), index 1 = hop 1".
    When ``max_hops`` is beyond its end the last value repeats. ``relation_filter`` None means
    every relation type; ``min_traversal_score`` is the minimum edge weight to follow.
    """

    vector_weight: float = 0.7
    graph_weight: float = 0.3
    hop_decay: tuple[float, ...] = (1.0, 0.7, 0.5)
    max_hops: int = 2
    min_traversal_score: float = 0.0
    bidirectional: bool = False
    relation_filter: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.vector_weight < 0 or self.graph_weight < 0:
            raise ValueError("weights must be >= 0")
        if not self.hop_decay or self.max_hops < 0:
            raise ValueError("hop_decay must be non-empty and max_hops >= 0")

    def decay(self, hop: int) -> float:
        return self.hop_decay[min(hop, len(self.hop_decay) - 1)]


def seed_score(vector_score: float, opts: BlendOptions = BlendOptions()) -> float:
    """``For seed chunks: score = vectorWeight × vectorScore + graphWeight × 1.0``."""
    return opts.vector_weight * vector_score + opts.graph_weight * 1.0


def graph_score(edge_weight: float, hop: int, opts: BlendOptions = BlendOptions()) -> float:
    """``For graph chunks: score = graphWeight × edgeWeight × hopDecay[hop]``.

    E.g. hop 2 via an edge of weight 0.8: ``0.3 × 0.8 × 0.5 = 0.12``.
    """
    if hop < 1:
        raise ValueError("graph-discovered chunks are at hop >= 1")
    return opts.graph_weight * edge_weight * opts.decay(hop)


@dataclass(frozen=True)
class TraversalEdge:
    source_id: str
    target_id: str
    relation: str
    weight: float
    description: str = ""


@dataclass(frozen=True)
class EdgeContext:
    """Spec's ``GraphContext`` entry: which chunk led here, over which relation, and why."""

    from_id: str
    relation: str
    description: str


@dataclass(frozen=True)
class BlendedResult:
    id: str
    score: float
    hop: int  # 0 for seeds
    graph_context: tuple[EdgeContext, ...] = field(default=())

    @property
    def is_seed(self) -> bool:
        return self.hop == 0


EdgeFetcher = Callable[[Sequence[str]], Sequence[TraversalEdge]]


def _step(
    frontier: Collection[str], edges: Sequence[TraversalEdge], opts: BlendOptions
) -> dict[str, list[tuple[float, EdgeContext]]]:
    """Neighbours reachable from ``frontier`` over one permitted edge, with each edge's weight."""
    found: dict[str, list[tuple[float, EdgeContext]]] = {}
    for e in edges:
        if opts.relation_filter is not None and e.relation not in opts.relation_filter:
            continue
        if e.weight < opts.min_traversal_score:
            continue
        if e.source_id in frontier:
            near, far = e.source_id, e.target_id
        elif opts.bidirectional and e.target_id in frontier:
            near, far = e.target_id, e.source_id
        else:
            continue
        found.setdefault(far, []).append((e.weight, EdgeContext(near, e.relation, e.description)))
    return found


def expand_and_blend(
    seeds: Mapping[str, float],
    fetch_edges: EdgeFetcher,
    opts: BlendOptions = BlendOptions(),
    top_k: int | None = None,
) -> list[BlendedResult]:
    """The GraphRetriever read path after seeding: BFS with hop decay, then score blending.

    ``seeds`` maps seed id -> cosine ``vectorScore``. ``fetch_edges(ids)`` returns edges that
    touch ``ids`` (outgoing; also incoming when ``bidirectional``); direction is enforced here
    whatever it returns. Per the spec, each hop "for each unvisited neighbor: compute
    graphScore = graphWeight × edgeWeight × hopDecay[hop]" and keeps "the best score per chunk"
    — a chunk reached by several edges in the same hop keeps the highest. Seeds and chunks
    found at an earlier hop are never re-scored. Sorted by score desc, then hop, then id.
    """
    best = {i: BlendedResult(i, seed_score(v, opts), 0) for i, v in seeds.items()}
    frontier: list[str] = sorted(seeds)
    for hop in range(1, opts.max_hops + 1):
        if not frontier:
            break
        found = _step(set(frontier), fetch_edges(frontier), opts)
        fresh = sorted(i for i in found if i not in best)
        for nid in fresh:
            contexts = sorted(found[nid], key=lambda wc: (-wc[0], wc[1].from_id, wc[1].relation))
            top_weight = contexts[0][0]
            best[nid] = BlendedResult(nid, graph_score(top_weight, hop, opts), hop,
                                      tuple(c for _, c in contexts))
        frontier = fresh
    results = sorted(best.values(), key=lambda r: (-r.score, r.hop, r.id))
    return results if top_k is None else results[:top_k]
