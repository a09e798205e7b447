"""What ``POST /cypher`` checks once per query instead of on every request (issue 12.1).

* The parse, allow-lists and scope rewrite (``cypher_scope.scope_query``) are a function of
  the query text, its parameters (a regex or a ``range()`` bound may come from one) and
  whether the reader is restricted to jurisdictions: remembered for ``MEMO_SIZE`` queries;
  a refused query raises again every time (errors are not remembered). The tenant,
  clearance, snapshot and jurisdictions stay parameters of the rewritten text, so one
  rewrite serves every scope.
* The ``AT(...)`` split (``cypher_scope.split_at``): a function of the text alone.
* The ``EXPLAIN`` plan check (``cypher_plan``): Neo4j plans a text once per set of parameter
  types, so a text whose plan passed with those types is not explained again.

Parameters larger than ``MAX_KEY_BYTES`` as JSON are not remembered (checked every time).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any

import orjson

from substrate.retrieval.cypher_scope import AtClause, ScopedQuery, scope_query, split_at

MEMO_SIZE = 512
MAX_KEY_BYTES = 4096


def params_key(params: dict[str, Any]) -> bytes | None:
    """The parameters as canonical JSON, or None when they are too large (or not JSON)."""
    try:
        key = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None
    return key if len(key) <= MAX_KEY_BYTES else None


@functools.lru_cache(maxsize=MEMO_SIZE)
def _scoped(query: str, key: bytes, restricted: bool) -> ScopedQuery:
    return scope_query(query, orjson.loads(key), jurisdictions_restricted=restricted)


def scoped_query(query: str, params: dict[str, Any], restricted: bool) -> ScopedQuery:
    """``scope_query(query, params, jurisdictions_restricted=restricted)``, remembered."""
    key = params_key(params)
    if key is None:
        return scope_query(query, params, jurisdictions_restricted=restricted)
    return _scoped(query, key, restricted)


@functools.lru_cache(maxsize=MEMO_SIZE)
def split_query(query: str) -> tuple[str, AtClause | None]:
    """``split_at(query)``, remembered."""
    return split_at(query)


def type_signature(value: Any) -> str:
    """A parameter's type as the planner sees it (lists by their elements' types)."""
    if isinstance(value, list | tuple):
        return "list[" + ",".join(sorted({type_signature(v) for v in value})) + "]"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


class PlanChecks:
    """Texts (with parameter types) whose EXPLAIN plan passed the check."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self.size = size
        self._passed: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], None] = \
            OrderedDict()

    @staticmethod
    def key(text: str, params: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
        return text, tuple(sorted((k, type_signature(v)) for k, v in params.items()))

    def passed(self, text: str, params: dict[str, Any]) -> bool:
        key = self.key(text, params)
        if key in self._passed:
            self._passed.move_to_end(key)
            return True
        return False

    def remember(self, text: str, params: dict[str, Any]) -> None:
        self._passed[self.key(text, params)] = None
        while len(self._passed) > self.size:
            self._passed.popitem(last=False)


PLAN_CHECKS = PlanChecks()
