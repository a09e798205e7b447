"""POST /cypher checks a query once (substrate/retrieval/cypher_checked.py), on the demo
graph: the second run of a text skips the rewrite and the EXPLAIN and answers the same rows;
another scope reuses the rewrite with its own values; a plan whose verdict read a row
estimate (a cartesian product) is explained every time; a refused query stays refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from neo4j import AsyncGraphDatabase

from substrate.errors import SubstrateError
from substrate.retrieval import cypher_checked
from substrate.retrieval.cypher_checked import PLAN_CHECKS, PlanChecks, type_signature
from substrate.retrieval.cypher_run import parse_request, run_cypher
from substrate.retrieval.cypher_scope import scope_parameters
from substrate.retrieval.scope import ReadScope, resolve_scope
from substrate.settings import Settings

pytestmark = pytest.mark.integration
QUERY = ("MATCH (s:Service {name: $name})-[r:CALLS|DEPENDS_ON]->(t) "
         "RETURN t.name AS name ORDER BY name")
CARTESIAN = "MATCH (a:Service {name: $name}), (b:Team) RETURN a.name AS a, b.name AS b LIMIT 3"


def _runs(stack: Settings, queries: list[tuple[str, ReadScope]]) -> list[Any]:
    async def main() -> list[Any]:
        drv = AsyncGraphDatabase.driver(stack.neo4j_uri,
                                        auth=(stack.neo4j_user, stack.neo4j_password),
                                        notifications_min_severity="OFF")
        out: list[Any] = []
        async with drv:
            for query, scope in queries:
                text, params, _, _ = parse_request({"query": query,
                                                    "params": {"name": "checkout"}})
                try:
                    body = await run_cypher(drv, scope, text, params, 1000, 10.0, 4_000_000)
                except SubstrateError as exc:
                    out.append(exc)
                    continue
                out.append((body, PLAN_CHECKS.passed(body["rewritten_query"],
                                                     {**params, **scope_parameters(scope)})))
        return out

    return asyncio.run(main())


def test_a_text_is_checked_once_and_answers_the_same(stack: Settings) -> None:
    cypher_checked._scoped.cache_clear()
    latest = asyncio.run(resolve_scope(stack, "acme"))
    other = ReadScope("acme", 1, latest.clearance, pinned=True)
    first, second, pinned = _runs(stack, [(QUERY, latest), (QUERY, latest), (QUERY, other)])
    assert first[1] and second[1]  # the plan passed and is remembered
    assert first[0]["rows"] == second[0]["rows"] and first[0]["rows"]
    assert first[0]["rewritten_query"] == second[0]["rewritten_query"] \
        == pinned[0]["rewritten_query"]  # one rewrite; the scope is in parameters
    assert cypher_checked._scoped.cache_info().hits >= 2


def test_a_plan_with_a_row_estimate_is_explained_every_time(stack: Settings) -> None:
    latest = asyncio.run(resolve_scope(stack, "acme"))
    for body, remembered in _runs(stack, [(CARTESIAN, latest), (CARTESIAN, latest)]):
        assert body["rows"] and not remembered


def test_a_refused_query_is_refused_every_time(stack: Settings) -> None:
    latest = asyncio.run(resolve_scope(stack, "acme"))
    refused = _runs(stack, [("MATCH (n) DETACH DELETE n", latest)] * 2)
    assert all(isinstance(r, SubstrateError) and r.status == 403 for r in refused)


def test_plan_checks_are_bounded_and_keyed_by_parameter_types() -> None:
    checks = PlanChecks(size=2)
    checks.remember("A", {"x": "s"})
    assert checks.passed("A", {"x": "other"}) and not checks.passed("A", {"x": 1})
    assert not checks.passed("A", {"x": ["s"]})
    checks.remember("B", {})
    checks.remember("C", {})
    assert not checks.passed("A", {"x": "s"}) and checks.passed("C", {})
    assert type_signature([1, "a", [2.5]]) == "list[int,list[float],str]"
