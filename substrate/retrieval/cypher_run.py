"""POST /cypher: read-only Cypher, scoped and pinned, typed results (RSN-02, RSN-07).

Two independent checks, then bounded execution:
1. ``cypher_scope``: Neo4j's Cypher 5 grammar parses the query; allow-lists; every pattern
   element gets the tenant/clearance/snapshot predicate (anything unparseable is refused);
2. ``cypher_plan``: ``EXPLAIN`` of the rewritten query; every operator that produces nodes or
   relationships must be covered by the scope predicate, the plan must be read-only;
3. a READ auto-commit transaction with the timeout (``CYPHER_TIMEOUT_SECONDS``), Neo4j's
   transaction memory limit (``db.memory.transaction.max``), at most ``row_limit`` rows and
   ``max_bytes`` bytes of JSON (``truncated`` and ``truncated_by`` say which), fetched in small
   batches.

Checks 1 and 2 are made once per query text (``cypher_checked``: the rewrite per text and
parameters, the plan per rewritten text and parameter types, except a plan whose verdict read a
row estimate); the scope's values are parameters of the rewritten text.

Errors never echo Neo4j's message (it can quote stored values): only its status code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import date, datetime
from typing import Any

from neo4j import AsyncDriver, AsyncResult, Query
from neo4j.exceptions import DriverError, Neo4jError
from neo4j.graph import Node, Path, Relationship
from neo4j.time import Date, DateTime, Duration, Time

from substrate import jsonwire
from substrate.db import NEO4J_RETRY_S
from substrate.errors import BadRequest, Forbidden, SubstrateError
from substrate.retrieval.bookmarks import RETRY_FIRST_S, RETRY_MAX_S, ReadSessions
from substrate.retrieval.cypher_checked import PLAN_CHECKS, scoped_query, split_query
from substrate.retrieval.cypher_past import rewrite_past_reads
from substrate.retrieval.cypher_plan import check_plan
from substrate.retrieval.cypher_scope import ScopedQuery, scope_parameters
from substrate.retrieval.scope import ReadScope

FETCH_SIZE = 100
# the plan check reads this operator's row estimate: such a plan is explained every time
ESTIMATED_OPERATOR = "CartesianProduct"
# keys a pinned query reads (None: all) -> ceid -> {key: value at the pinned version}
PastValues = Callable[[frozenset[str] | None], Awaitable[dict[str, dict[str, Any]]]]


class QueryTimeout(SubstrateError):
    status = 408
    code = "query_timeout"


class QueryTooLarge(SubstrateError):
    """The query needed more memory than Neo4j's per-transaction limit, or one row alone is
    larger than the byte cap."""

    status = 422
    code = "query_too_large"


_PLAIN = frozenset({str, int, float, bool, type(None)})  # JSON as they are: most values


def to_json(value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    if isinstance(value, Node):
        return {"type": "node", "id": value.element_id, "labels": sorted(value.labels),
                "properties": {k: to_json(v) for k, v in value.items() if k != "embedding"}}
    if isinstance(value, Relationship):
        return {"type": "relationship", "id": value.element_id, "rel_type": value.type,
                "start": value.start_node.element_id if value.start_node else None,
                "end": value.end_node.element_id if value.end_node else None,
                "properties": {k: to_json(v) for k, v in value.items()}}
    if isinstance(value, Path):
        return {"type": "path", "nodes": [to_json(n) for n in value.nodes],
                "relationships": [to_json(r) for r in value.relationships]}
    # before list | tuple: a Duration is a tuple
    if isinstance(value, DateTime | Date | Time | Duration | datetime | date):
        return str(value.iso_format() if hasattr(value, "iso_format") else value.isoformat())
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def check_params(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise BadRequest("params must be an object with string keys")
    reserved = sorted(k for k in params if k.startswith("__"))
    if reserved:
        raise BadRequest("parameter names starting with '__' are reserved", {"names": reserved})
    return params


def neo4j_failure(exc: Neo4jError, timeout: float) -> SubstrateError:
    """A clean error for a Neo4j failure; its message (which may quote values) is dropped."""
    code = exc.code or ""
    if "TimedOut" in code or "Timeout" in code or "Terminated" in code:
        return QueryTimeout(f"query exceeded the {timeout:g}s timeout",
                            {"timeout_seconds": timeout})
    if "MemoryPoolOutOfMemoryError" in code or "OutOfMemory" in code:
        return QueryTooLarge("query exceeded the transaction memory limit",
                             {"neo4j_code": code})
    return BadRequest("Cypher failed in Neo4j", {"neo4j_code": code})


async def explain(driver: AsyncDriver, scoped: ScopedQuery, params: dict[str, Any],
                  timeout: float) -> bool:
    """The second check: EXPLAIN the rewritten query and walk its plan (``cypher_plan``).
    True when the verdict holds whatever the graph's statistics (no estimate was read)."""
    try:
        async with driver.session(default_access_mode="READ") as session:
            result = await session.run("EXPLAIN " + scoped.text, params)
            summary = await result.consume()
    except Neo4jError as exc:
        raise neo4j_failure(exc, timeout) from exc
    check_plan(summary.plan, summary.query_type)
    return ESTIMATED_OPERATOR not in repr(summary.plan)


async def with_past_reads(scoped: ScopedQuery, params: dict[str, Any],
                          past: PastValues) -> tuple[ScopedQuery, int]:
    """A pinned query's property reads answering the values at its version (``cypher_past``):
    the rewritten query, ``$__past`` added to ``params``; and how many nodes it rewinds."""
    reads = rewrite_past_reads(scoped.text)
    values = await past(reads.keys) if reads is not None else {}
    if reads is None or not values:
        return scoped, 0
    params["__past"] = values
    return replace(scoped, text=reads.text), len(values)


async def run_cypher(driver: AsyncDriver, scope: ReadScope, query: str, params: dict[str, Any],
                     row_limit: int, timeout: float, max_bytes: int,
                     past: PastValues | None = None, sessions: ReadSessions | None = None
                     ) -> dict[str, Any]:
    """``past``: for a pinned query, the property values at its version (issue 9);
    ``sessions``: kept read sessions to run it on (their fetch size ``FETCH_SIZE``)."""
    started = time.perf_counter()
    scoped = scoped_query(query, params, scope.params().get("jurisdictions") is not None)
    if scope.jurisdictions is not None and scoped.procedures:
        # the Browser procedures take jurisdictions as an optional last argument, which the
        # rewrite does not force: refuse them to a principal restricted to jurisdictions
        raise Forbidden("custom.substrate_retrieval_* procedures are not available to a "
                        "principal restricted to jurisdictions; use MATCH patterns",
                        {"procedures": list(scoped.procedures)})
    # $__tenant, $__v, $__clearance, $__jurisdictions: the scope's template parameters
    all_params = {**params, **scope_parameters(scope)}
    rewound = 0
    if past is not None:
        scoped, rewound = await with_past_reads(scoped, all_params, past)
    if not PLAN_CHECKS.passed(scoped.text, all_params) \
            and await explain(driver, scoped, all_params, timeout):
        PLAN_CHECKS.remember(scoped.text, all_params)
    checked_ms = (time.perf_counter() - started) * 1000
    try:
        keys, rows, truncated_by = await bounded_read(
            driver, Query(scoped.text, timeout=timeout), all_params, row_limit, max_bytes,
            sessions)
    except Neo4jError as exc:
        raise neo4j_failure(exc, timeout) from exc
    return {"columns": keys, "rows": rows, "row_count": len(rows),
            "truncated": truncated_by is not None, "truncated_by": truncated_by,
            "row_limit": row_limit, "max_bytes": max_bytes, "timeout_seconds": timeout,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            "check_ms": round(checked_ms, 1),
            "snapshot_version": scope.version, "pinned": scope.pinned,
            "rewritten_query": scoped.text,
            **({"rewound_values": rewound} if past is not None else {})}


async def bounded_read(driver: AsyncDriver, query: Query, params: dict[str, Any],
                       row_limit: int, max_bytes: int, sessions: ReadSessions | None = None
                       ) -> tuple[list[str], list[Any], str | None]:
    """(columns, rows, what cut them: "rows" | "bytes" | None): one auto-commit read routed
    to a reader after this process's own writes (RUN and PULL in one round trip; a managed
    transaction adds BEGIN and COMMIT), fetched in batches of ``FETCH_SIZE``, on a kept
    session of ``sessions`` when given; a retryable failure is run again with backoff within
    ``NEO4J_RETRY_S``, as a managed one would be."""
    deadline, delay = time.monotonic() + NEO4J_RETRY_S, RETRY_FIRST_S

    async def take(result: AsyncResult) -> tuple[list[str], list[Any], str | None]:
        return await _capped(result, row_limit, max_bytes)

    # no pool given: a session for this read only (limit 0)
    sessions = sessions or ReadSessions(limit=0, fetch_size=FETCH_SIZE)
    while True:
        try:
            return await sessions.run(driver, query, params, take)
        except (Neo4jError, DriverError) as exc:
            if not exc.is_retryable() or time.monotonic() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_S)


async def _capped(result: AsyncResult, row_limit: int, max_bytes: int
                  ) -> tuple[list[str], list[Any], str | None]:
    keys, rows, size = list(result.keys()), [], 2  # type: list[str], list[Any], int
    async for record in result:
        if len(rows) == row_limit:
            await result.consume()
            return keys, rows, "rows"
        row = [to_json(v) for v in record.values()]
        size += len(jsonwire.dumps(row)) + 1  # its bytes in the body
        if size > max_bytes:
            if not rows:
                raise QueryTooLarge(f"one row is larger than the {max_bytes}-byte cap",
                                    {"max_bytes": max_bytes})
            await result.consume()
            return keys, rows, "bytes"
        rows.append(row)
    return keys, rows, None


def parse_request(body: dict[str, Any]) -> tuple[str, dict[str, Any], Any, Any]:
    """(query without AT, params, snapshot_version, at) from a /cypher body."""
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string")
    if len(query) > 20_000:
        raise BadRequest("query longer than 20000 characters")
    unknown = set(body) - {"query", "params", "snapshot_version", "at"}
    if unknown:
        raise BadRequest("unknown fields", {"unknown": sorted(unknown)})
    params = check_params(body.get("params"))
    stripped, at_clause = split_query(query)
    version, at = body.get("snapshot_version"), body.get("at")
    if at_clause is not None:
        if version is not None or at is not None:
            raise BadRequest("AT(...) and snapshot_version/at cannot be combined")
        if at_clause.timestamp is not None:
            at = at_clause.timestamp.isoformat()
        elif at_clause.snapshot_version is not None:
            version = at_clause.snapshot_version
        elif at_clause.parameter is not None:
            at = params.get(at_clause.parameter)
            if at is None:
                raise BadRequest(f"AT(${at_clause.parameter}) names a missing parameter")
    return stripped, params, version, at
