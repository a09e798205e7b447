"""The allowed range of every /search option that sets how much work a request does.

A value outside its range is a 400 that names the option, the allowed range and the value, so
no request can ask for an unbounded traversal, budget, result size or strategy fan-out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from substrate.errors import BadRequest

MAX_QUERY_CHARS = 2000
MAX_STRATEGIES = 6  # distinct strategies named in one request
MAX_HOP_DECAY = 4  # chunk.hop_decay entries (one per hop, max_hops <= 3)
MAX_RELATION_FILTER = 32  # chunk.relation_filter entries


@dataclass(frozen=True)
class IntRange:
    low: int
    high: int

    def check(self, name: str, value: Any) -> None:
        # bool is an int in Python: ``true`` is not a count
        if isinstance(value, bool) or not isinstance(value, int) or not (
                self.low <= value <= self.high):
            raise BadRequest(f"{name} must be {self.low}..{self.high}",
                             {"option": name, "allowed": [self.low, self.high], "got": value})


INT_OPTIONS: dict[str, IntRange] = {
    "top_k": IntRange(1, 50),
    "max_hops": IntRange(1, 3),
    "token_budget": IntRange(100, 20000),
}


def check_query(query: Any) -> str:
    """The stripped query text, or 400 when it is empty or longer than MAX_QUERY_CHARS."""
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string", {"query": query})
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"query longer than {MAX_QUERY_CHARS} characters",
                         {"option": "query", "allowed": [1, MAX_QUERY_CHARS],
                          "got": len(query)})
    return query.strip()


def check_strategies(value: Any) -> tuple[str, ...] | None:
    """``None`` (the router decides) or 1..MAX_STRATEGIES distinct names, order kept."""
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise BadRequest("strategies must be a list of strategy names",
                         {"option": "strategies", "got": type(value).__name__})
    names = tuple(dict.fromkeys(value))
    if not 1 <= len(names) <= MAX_STRATEGIES:
        raise BadRequest(f"strategies must name 1..{MAX_STRATEGIES} distinct strategies",
                         {"option": "strategies", "allowed": [1, MAX_STRATEGIES],
                          "got": len(names)})
    return names


def check_chunk_sizes(chunk: dict[str, Any]) -> None:
    for key, cap in (("hop_decay", MAX_HOP_DECAY), ("relation_filter", MAX_RELATION_FILTER)):
        value = chunk.get(key)
        if isinstance(value, list | tuple) and len(value) > cap:
            raise BadRequest(f"chunk.{key} takes at most {cap} entries",
                             {"option": f"chunk.{key}", "allowed": [0, cap],
                              "got": len(value)})


def check_options(values: dict[str, Any]) -> None:
    """Every bounded integer option present in ``values``."""
    for name, bounds in INT_OPTIONS.items():
        if name in values:
            bounds.check(name, values[name])
