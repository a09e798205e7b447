"""What every strategy gets (SearchContext) and returns (StrategyResult)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from substrate.errors import BadRequest
from substrate.retrieval.bounds import check_chunk_sizes, check_options, check_strategies
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.router import Route
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

EmbedQuery = Callable[[str], Awaitable[list[float]]]


@dataclass(frozen=True)
class SearchOptions:
    top_k: int = 10
    max_hops: int = 2
    min_weight: float = 0.0
    token_budget: int = 1500
    strategies: tuple[str, ...] | None = None  # None: the router decides
    rerank: bool = True
    chunk: dict[str, Any] | None = None  # chunk GraphRetriever options (chunk-graph-rag.md)
    conflict_strategy: str = "none"  # none | highest_confidence | newest | merge
    counterfactual: Any = None  # true or {budget, remove_edges, remove_nodes, redirect, shift_to}

    @classmethod
    def from_dict(cls, data: Any) -> SearchOptions:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise BadRequest("options must be an object", {"options": type(data).__name__})
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise BadRequest("unknown options", {"unknown": sorted(unknown)})
        values: dict[str, Any] = dict(data)
        if "strategies" in values:
            values["strategies"] = check_strategies(values["strategies"])
        opts = cls(**values)
        return opts.validate()

    def validate(self) -> SearchOptions:
        check_options({"top_k": self.top_k, "max_hops": self.max_hops,
                       "token_budget": self.token_budget})  # 400 names the allowed range
        checks = [
            (isinstance(self.min_weight, int | float) and self.min_weight >= 0,
             "min_weight must be >= 0"),
            (isinstance(self.rerank, bool), "rerank must be a boolean"),
            (self.chunk is None or isinstance(self.chunk, dict), "chunk must be an object"),
        ]
        for ok, message in checks:
            if not ok:
                raise BadRequest(message, {"options": self.__dict__})
        if self.chunk is not None:
            check_chunk_sizes(self.chunk)
            chunk_options(self.chunk)  # validate now, not inside a strategy
        from substrate.retrieval.conflict_resolution import check_strategy

        check_strategy(self.conflict_strategy)
        from substrate.retrieval.counterfactual import Options as CounterfactualOptions

        CounterfactualOptions.parse(self.counterfactual)
        return self


CHUNK_KEYS = {"seed_top_k", "max_hops", "hop_decay", "vector_weight", "graph_weight",
              "bidirectional", "relation_filter", "min_traversal_score", "keyword_weight"}


def chunk_options(data: dict[str, Any]) -> dict[str, Any]:
    """Validated GraphRetriever options: WithSeedTopK, WithMaxHops, WithHopDecay,
    WithVectorWeight/WithGraphWeight, WithBidirectional, WithRelationFilter,
    WithMinTraversalScore, WithSeedKeywordWeight."""
    unknown = set(data) - CHUNK_KEYS
    if unknown:
        raise BadRequest("unknown chunk options", {"unknown": sorted(unknown),
                                                   "known": sorted(CHUNK_KEYS)})
    out = dict(data)
    try:
        if "seed_top_k" in out and not 1 <= int(out["seed_top_k"]) <= 50:
            raise ValueError("seed_top_k must be 1..50")
        if "max_hops" in out and not 0 <= int(out["max_hops"]) <= 3:
            raise ValueError("max_hops must be 0..3")
        if "hop_decay" in out:
            out["hop_decay"] = tuple(float(x) for x in out["hop_decay"])
        if "relation_filter" in out and out["relation_filter"] is not None:
            out["relation_filter"] = frozenset(str(x).upper() for x in out["relation_filter"])
        for key in ("vector_weight", "graph_weight", "min_traversal_score", "keyword_weight"):
            if key in out and not 0.0 <= float(out[key]) <= 1.0:
                raise ValueError(f"{key} must be in [0, 1]")
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"bad chunk option: {exc}", {"chunk": data}) from exc
    return out


@dataclass(frozen=True)
class Hit:
    id: str
    name: str
    label: str
    text: str
    score: float


@dataclass
class StrategyResult:
    name: str
    hits: list[Hit] = field(default_factory=list)
    hops: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    note: str | None = None
    trace: list[dict[str, Any]] = field(default_factory=list)  # e.g. the RAPTOR path taken
    # what the answer waits for ("risk_ranking": the GDS job has not stored one yet): an
    # answer with a pending part is not cached, so it changes as soon as that part exists
    pending: str | None = None


@dataclass
class SearchContext:
    settings: Settings
    query: str
    route: Route
    scope: ReadScope
    reader: GraphReader
    embed_query: EmbedQuery
    options: SearchOptions
    seeds: list[dict[str, Any]] = field(default_factory=list)
    services: Any = None  # substrate.services.Services, for strategies that need sync access
    pool: Any = None  # the service's PostgreSQL pool (psycopg_pool), None: connect per read
    emit: Any = None  # the /stream stage callback (search.Emit), for partial results
    _embedding: asyncio.Future[list[float]] | None = None

    async def query_embedding(self) -> list[float]:
        """The question's vector, computed once: strategies that ask for it together share
        the one computation (a strategy cancelled meanwhile leaves it running for the rest)."""
        if self._embedding is None:
            self._embedding = asyncio.ensure_future(self.embed_query(self.query))
        return await asyncio.shield(self._embedding)

    def seed_ids(self, label: str | None = None) -> list[str]:
        return [s["ceid"] for s in self.seeds if label is None or s["label"] == label]
