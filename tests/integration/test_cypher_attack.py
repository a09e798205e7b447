"""The /cypher scope holds: an attack corpus against a graph of two tenants, four clearances
and closed history versions. Every query either is refused (4xx, a clean error body) or
returns only what tenant ``h2atk-a`` at clearance ``public`` may see: no out-of-scope element
id, no property value (each carries ``OUT``), no count of what it cannot see.

Corpus: ``cypher_attacks.txt`` (issue 10's bypasses and variants) plus queries generated from
fragments (prefixes x patterns x projections). The fixture graph is written with
``fixtures/cypher_scope_graph.cypher`` under its own tenant ids and removed afterwards.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from neo4j import AsyncGraphDatabase, Driver

from substrate.errors import SubstrateError
from substrate.retrieval.cypher_run import parse_request, run_cypher
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings
from tests.support.gateway_client import gateway

HERE = Path(__file__).parent
FIXTURE = "h2atk"
TENANT, OTHER = "h2atk-a", "h2atk-b"
VERSION = 100
OPEN, CLOSED = [0], [1]  # iv_to: open intervals end at 2**53 - 1
CLEARANCES = ("public", "internal", "confidential", "restricted")
PARAMS = {"label": "AtkNode", "regex": "(a+)+$", "lo": 1, "hi": 50_000_000, "t": OTHER,
          "v": 2**53 - 2, "c": list(CLEARANCES)}


def _node(tag: str, tenant: str, classification: str, closed: bool = False) -> dict[str, Any]:
    return {"ceid": f"atk:{tag}", "tag": tag, "name": tag, "tenant_id": tenant,
            "classification": classification, "fixture": FIXTURE, "iv_from": [0],
            "iv_to": [1 if closed else 2**53 - 1]}


def _rel(a: str, b: str, tag: str, tenant: str, closed: bool = False) -> dict[str, Any]:
    return {"from": f"atk:{a}", "to": f"atk:{b}",
            "props": {"tag": tag, "tenant_id": tenant, "valid_from_v": 0,
                      "valid_to_v": 1 if closed else None, "fixture": FIXTURE}}


IN_NODES = [_node(f"IN-{i}", TENANT, "public") for i in range(4)]
OUT_NODES = [
    *(_node(f"OUT-a-{c}", TENANT, c) for c in CLEARANCES[1:]),
    _node("OUT-a-public-closed", TENANT, "public", closed=True),
    *(_node(f"OUT-b-{c}", OTHER, c) for c in CLEARANCES),
    *(_node(f"OUT-b-{c}-closed", OTHER, c, closed=True) for c in CLEARANCES),
]
IN_RELS = [_rel("IN-0", "IN-1", "IN-r0", TENANT), _rel("IN-1", "IN-2", "IN-r1", TENANT),
           _rel("IN-2", "IN-3", "IN-r2", TENANT)]
OUT_RELS = [
    _rel("IN-0", "IN-2", "OUT-r-closed", TENANT, closed=True),
    _rel("IN-1", "IN-3", "OUT-r-other-tenant", OTHER),
    *(_rel("IN-3", f"OUT-a-{c}", f"OUT-r-to-{c}", TENANT) for c in CLEARANCES[1:]),
    _rel("OUT-a-internal", "IN-0", "OUT-r-from-internal", TENANT),
    _rel("IN-2", "OUT-a-public-closed", "OUT-r-to-closed", TENANT),
    _rel("IN-0", "OUT-b-public", "OUT-r-cross-tenant", TENANT),
    _rel("OUT-b-public", "OUT-b-internal", "OUT-r-b", OTHER),
    _rel("OUT-b-internal", "OUT-b-public-closed", "OUT-r-b-closed", OTHER, closed=True),
]


def _file_queries() -> list[str]:
    lines = (HERE / "cypher_attacks.txt").read_text(encoding="utf-8").splitlines()
    return [ln.replace("\\n", "\n") for ln in lines if ln.strip() and not ln.startswith("#")]


PREFIXES = ["", "WITH 1 AS `a`", "/* c */ ", "OPTIONAL ", "CALL { "]
PATTERNS = ["(n)", "(n:%)", "(n:AtkNode|!Secret)", "(n)-[r]->(m)", "(n)<-[:ATK_LINK]-(m)",
            "(n)-[r*1..3]-(m)", "((n)-[r]->(m)){1,2}", "p = (n)--+(m)"]
PROJECTIONS = ["RETURN n.tag AS t", "RETURN collect(n.tag) AS t", "RETURN count(n) AS t",
               "RETURN n AS t", "RETURN [(n)--(z) | z.tag] AS t"]


def _generated() -> list[str]:
    out = []
    for prefix, pattern, projection in itertools.product(PREFIXES, PATTERNS, PROJECTIONS):
        if prefix == "CALL { ":
            out.append(f"CALL {{ MATCH {pattern} {projection} }} RETURN t")
        else:
            out.append(f"{prefix}MATCH {pattern} {projection}")
    return out


CORPUS = _file_queries() + _generated()


@pytest.fixture(scope="module")
def graph(stack: Settings, driver: Driver) -> Iterator[dict[str, Any]]:
    create = (HERE / "fixtures" / "cypher_scope_graph.cypher").read_text()
    cleanup = (HERE / "fixtures" / "cypher_scope_cleanup.cypher").read_text()
    driver.execute_query(cleanup, {"fixture": FIXTURE})
    driver.execute_query(create, {"nodes": IN_NODES + OUT_NODES, "rels": IN_RELS + OUT_RELS})
    records, _, _ = driver.execute_query(
        "MATCH (n:AtkNode {fixture: $f}) OPTIONAL MATCH (n)-[r:ATK_LINK]->() "
        "RETURN n.tag AS tag, elementId(n) AS id, collect([r.tag, elementId(r)]) AS rels",
        {"f": FIXTURE})
    out_ids = {r["id"] for r in records if r["tag"].startswith("OUT")}
    out_ids |= {rid for r in records for tag, rid in r["rels"] if tag and tag.startswith("OUT")}
    try:
        yield {"out_ids": out_ids}
    finally:
        driver.execute_query(cleanup, {"fixture": FIXTURE})


def _run_all(stack: Settings, queries: list[str]) -> list[tuple[str, dict[str, Any]]]:
    scope = ReadScope(tenant=TENANT, version=VERSION, clearance=("public",), pinned=True)

    async def main() -> list[tuple[str, dict[str, Any]]]:
        drv = AsyncGraphDatabase.driver(stack.neo4j_uri,
                                        auth=(stack.neo4j_user, stack.neo4j_password),
                                        notifications_min_severity="OFF")
        out = []
        async with drv:
            for q in queries:
                try:
                    text, params, _, _ = parse_request({"query": q, "params": PARAMS})
                    body = await run_cypher(drv, scope, text, params, 1000, 10.0, 4_000_000)
                    out.append(("ok", body))
                except SubstrateError as exc:
                    out.append(("refused", {"status": exc.status, **exc.to_dict()}))
        return out

    return asyncio.run(main())


@pytest.fixture(scope="module")
def outcomes(stack: Settings, graph: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return dict(zip(CORPUS, _run_all(stack, CORPUS), strict=True))


def test_the_corpus_has_at_least_200_queries() -> None:
    assert len(set(CORPUS)) >= 200, len(set(CORPUS))


@pytest.mark.parametrize("query", CORPUS)
def test_no_out_of_scope_element_value_or_id(query: str, graph: dict[str, Any],
                                             outcomes: dict[str, Any]) -> None:
    kind, body = outcomes[query]
    if kind == "refused":
        assert 400 <= body["status"] < 500, body
        assert set(body["error"]) == {"code", "message", "detail"}
        assert "OUT" not in json.dumps(body), body  # errors never echo stored values
        return
    text = json.dumps(body["rows"])
    assert "OUT" not in text, (query, body["rewritten_query"], text[:500])
    leaked = [i for i in graph["out_ids"] if i in text]
    assert not leaked, (query, leaked)


COUNTS = {
    "MATCH (n) RETURN count(n) AS c": 4,
    "MATCH (n:%) RETURN count(*) AS c": 4,
    "MATCH ()-[r]->() RETURN count(r) AS c": 3,
    "MATCH ()--() RETURN count(*) AS c": 6,
    "RETURN COUNT { MATCH (m) } AS c": 4,
    "RETURN COUNT { ()-->() } AS c": 3,
    "RETURN size(COLLECT { MATCH (m)-[r]-() RETURN r }) AS c": 6,
    "MATCH (n) RETURN sum(COUNT { (n)--() }) AS c": 6,
    "MATCH (n) RETURN sum(size([(n)--(m) | m])) AS c": 6,
    "MATCH (n) WHERE (n)-->() RETURN count(n) AS c": 3,
    "MATCH (n) WHERE NOT (n)<--() RETURN count(n) AS c": 1,
    "MATCH p = (a)-[*]->(b) RETURN count(p) AS c": 6,
    "MATCH p = ((a)-->(b)){1,5} RETURN count(p) AS c": 6,
    "MATCH (n) OPTIONAL MATCH (n)-[r]->(m) RETURN count(m) AS c": 3,
    "MATCH (n) RETURN count(n) AS c UNION ALL MATCH ()-[r]->() RETURN count(r) AS c": 4,
    "WITH 1 AS `a`MATCH (n) RETURN count(n) AS c": 4,
    "MATCH`p`=(n) RETURN count(p) AS c": 4,
    "CALL { MATCH (m) RETURN m } RETURN count(m) AS c": 4,
}


@pytest.mark.parametrize("query,expected", list(COUNTS.items()))
def test_counts_are_the_in_scope_counts(stack: Settings, graph: dict[str, Any], query: str,
                                        expected: int) -> None:
    (kind, body), = _run_all(stack, [query])
    assert kind == "ok", body
    assert body["rows"][0][0] == expected if "UNION" not in query else \
        [r[0] for r in body["rows"]] == [4, 3], (query, body["rows"], body["rewritten_query"])


def test_the_issue_bypasses_over_http_return_no_internal_node(stack: Settings) -> None:
    """The demo tenant at clearance public: the bypasses of issue 10 through the gateway."""
    level = "coalesce({}.classification, 'internal')"  # unset = internal (cypher/_macros.j2)
    bypasses = [
        f"WITH 1 AS `a`MATCH (n) RETURN {level.format('n')} AS c",
        f"MATCH`p`=(n) RETURN [x IN nodes(p) | {level.format('x')}] AS c",
        f"MATCH (n) WHERE n:% MATCH (m) RETURN {level.format('m')} AS c",
        "WITH 1 AS `a`CALL db.index.fulltext.queryNodes('entity_names', 'service') "
        f"YIELD node RETURN {level.format('node')} AS c",
        "MATCH (n:Service) CALL apoc.path.subgraphNodes(n, {}) YIELD node "
        f"RETURN {level.format('node')} AS c",
    ]
    headers = {"X-Tenant": "acme", "X-Clearance": "public"}
    with gateway(stack, headers) as api:
        internal = api.post("/cypher", json={"query": f"MATCH (n) RETURN {level.format('n')}"},
                            headers={"X-Clearance": "internal"}).json()
        assert any(r == ["internal"] for r in internal["rows"]), "demo has internal nodes"
        for q in bypasses:
            r = api.post("/cypher", json={"query": q})
            assert r.status_code in (200, 400, 403), (q, r.text)
            if r.status_code == 200:
                assert "internal" not in json.dumps(r.json()["rows"]), (q, r.text[:400])
