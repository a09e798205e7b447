"""POST /cypher: read-only Cypher, scoped and pinned, typed results (RSN-02, RSN-07).

Layers: the text guard (``cypher_guard``) refuses writes, admin and multiple statements; the
scope rewriter (``temporal_rewrite``) makes every pattern match only the caller's tenant,
clearance and snapshot; EXPLAIN must report a read-only plan; the query runs in a read
transaction with a timeout, and at most ``row_limit`` rows are read (``truncated`` says so).
"""

from __future__ import annotations

import time
from datetime import date, datetime
from typing import Any

from neo4j import AsyncDriver, AsyncManagedTransaction, unit_of_work
from neo4j.exceptions import ClientError, CypherSyntaxError
from neo4j.graph import Node, Path, Relationship
from neo4j.time import Date, DateTime, Duration, Time

from substrate.errors import BadRequest, Forbidden, SubstrateError
from substrate.retrieval.cypher_guard import check_read_only
from substrate.retrieval.scope import ReadScope
from substrate.retrieval.temporal_rewrite import scope_parameters, scope_query


class QueryTimeout(SubstrateError):
    status = 408
    code = "query_timeout"


def to_json(value: Any) -> Any:
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
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, DateTime | Date | Time | Duration | datetime | date):
        return str(value.iso_format() if hasattr(value, "iso_format") else value.isoformat())
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


async def explain_is_read(driver: AsyncDriver, query: str, params: dict[str, Any]) -> None:
    try:
        _, summary, _ = await driver.execute_query("EXPLAIN " + query, params, routing_="r")
    except CypherSyntaxError as exc:
        raise BadRequest("invalid Cypher", {"error": exc.message}) from exc
    except ClientError as exc:
        raise BadRequest("Cypher rejected by the server", {"error": exc.message}) from exc
    if summary.query_type != "r":
        raise Forbidden("only read-only queries are allowed",
                        {"plan_query_type": summary.query_type})


async def run_cypher(driver: AsyncDriver, scope: ReadScope, query: str, params: dict[str, Any],
                     row_limit: int, timeout: float) -> dict[str, Any]:
    scoped = scope_query(query)
    all_params = {**params, **scope_parameters(scope.tenant, scope.version, scope.clearance),
                  "__jurisdictions": scope.params()["jurisdictions"]}  # cypher/_macros.j2
    await explain_is_read(driver, scoped, all_params)
    started = time.perf_counter()

    @unit_of_work(timeout=timeout)
    async def work(tx: AsyncManagedTransaction) -> tuple[list[str], list[list[Any]], bool]:
        result = await tx.run(scoped, all_params)
        keys, rows = list(result.keys()), []  # type: list[str], list[list[Any]]
        async for record in result:
            if len(rows) == row_limit:
                await result.consume()
                return keys, rows, True
            rows.append([to_json(v) for v in record.values()])
        return keys, rows, False

    try:
        async with driver.session(default_access_mode="READ") as session:
            keys, rows, truncated = await session.execute_read(work)
    except ClientError as exc:
        if "TimedOut" in (exc.code or "") or "Timeout" in (exc.code or ""):
            raise QueryTimeout(f"query exceeded the {timeout:.0f}s timeout",
                               {"timeout_seconds": timeout}) from exc
        raise BadRequest("Cypher failed", {"error": exc.message, "code": exc.code}) from exc
    return {"columns": keys, "rows": rows, "row_count": len(rows), "truncated": truncated,
            "row_limit": row_limit, "timeout_seconds": timeout,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            "snapshot_version": scope.version, "pinned": scope.pinned,
            "rewritten_query": scoped}


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
    verdict = check_read_only(query)
    version, at = body.get("snapshot_version"), body.get("at")
    if verdict.at is not None:
        if version is not None or at is not None:
            raise BadRequest("AT(...) and snapshot_version/at cannot be combined")
        if verdict.at.timestamp is not None:
            at = verdict.at.timestamp.isoformat()
        elif verdict.at.snapshot_version is not None:
            version = verdict.at.snapshot_version
        elif verdict.at.parameter is not None:
            at = params.get(verdict.at.parameter)
            if at is None:
                raise BadRequest(f"AT(${verdict.at.parameter}) names a missing parameter")
    return verdict.query, params, version, at
