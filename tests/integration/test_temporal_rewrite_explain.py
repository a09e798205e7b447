"""The scope rewrite against the real Neo4j: every rewritten query is valid Cypher (EXPLAIN),
and on a small graph written under throw-away test tenants the rewritten queries see exactly
the elements valid for the tenant, clearance and snapshot version."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from neo4j import Driver
from neo4j.exceptions import ServiceUnavailable

from substrate.db import neo4j_driver
from substrate.retrieval.temporal_rewrite import scope_parameters, scope_query
from substrate.settings import Settings
from tests.unit.test_temporal_rewrite import CASES

pytestmark = pytest.mark.integration

OPEN = 2**62
USER_PARAMS: dict[str, Any] = {"name": "payments", "names": ["payments"]}
# The hint on Service(tenant_id) is satisfiable only once the rewrite adds n.tenant_id = ...
NOT_VALID_BEFORE_REWRITE = {
    "MATCH (n:Service) USING INDEX n:Service(tenant_id) WHERE n.name = $name RETURN n"}


@pytest.fixture(scope="module")
def driver(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Driver]:
    """A direct connection when Neo4j is already up; otherwise the session ``stack``."""
    drv = neo4j_driver(settings)
    try:
        drv.verify_connectivity()
    except (ServiceUnavailable, OSError):
        drv.close()
        request.getfixturevalue("stack")
        drv = neo4j_driver(settings)
    yield drv
    drv.close()


@pytest.mark.parametrize(("query", "expected"), CASES, ids=[c[0][:50] for c in CASES])
def test_rewritten_query_is_valid_cypher(driver: Driver, query: str, expected: str) -> None:
    params = {**USER_PARAMS, **scope_parameters("t-explain", 3, ["public", "internal"])}
    rewritten = scope_query(query)
    with driver.session(default_access_mode="READ") as session:
        if query not in NOT_VALID_BEFORE_REWRITE:
            session.run(f"EXPLAIN {query}", USER_PARAMS).consume()  # the input is valid too
        summary = session.run(f"EXPLAIN {rewritten}", params).consume()
    assert summary.plan is not None


NODES = [  # name, tenant ('T' or 'O'), iv_from, iv_to, classification
    ("a", "T", [1], [OPEN], None),
    ("b", "T", [1, 5], [3, OPEN], "internal"),
    ("c", "T", [1], [OPEN], "restricted"),
    ("d", "T", [1], [OPEN], "public"),
    ("x", "O", [1], [OPEN], None),
]
RELS = [  # from, to, tenant, valid_from_v, valid_to_v
    ("a", "b", "T", 1, None), ("a", "c", "T", 1, None), ("b", "d", "T", 2, 6),
    ("c", "d", "T", 1, None), ("x", "a", "O", 1, None), ("a", "d", "T", 4, 5),
]


@pytest.fixture(scope="module")
def tenants(driver: Driver) -> Iterator[dict[str, str]]:
    run = uuid.uuid4().hex[:8]
    names = {"T": f"test-rewrite-{run}", "O": f"test-rewrite-other-{run}"}
    nodes = [{"name": n, "tenant": names[t], "iv_from": f, "iv_to": to, "cls": c}
             for n, t, f, to, c in NODES]
    rels = [{"a": a, "b": b, "tenant": names[t], "vf": vf, "vt": vt}
            for a, b, t, vf, vt in RELS]
    with driver.session() as session:
        session.run("UNWIND $nodes AS r CREATE (n:RwTest {name: r.name, tenant_id: r.tenant, "
                    "iv_from: r.iv_from, iv_to: r.iv_to, classification: r.cls})",
                    nodes=nodes).consume()
        session.run("UNWIND $rels AS r MATCH (a:RwTest {name: r.a}), (b:RwTest {name: r.b}) "
                    "WHERE a.tenant_id IN $tenants AND b.tenant_id IN $tenants "
                    "CREATE (a)-[:RW_LINK {tenant_id: r.tenant, valid_from_v: r.vf, "
                    "valid_to_v: r.vt}]->(b)", rels=rels, tenants=list(names.values())).consume()
    yield names
    with driver.session() as session:
        session.run("MATCH (n:RwTest) WHERE n.tenant_id IN $tenants DETACH DELETE n",
                    tenants=list(names.values())).consume()


def rows(driver: Driver, tenants: dict[str, str], query: str, v: int,
         clearance: tuple[str, ...] = ("public", "internal")) -> list[list[Any]]:
    params = scope_parameters(tenants["T"], v, clearance)
    with driver.session(default_access_mode="READ") as session:
        return [list(r.values()) for r in session.run(scope_query(query), params)]


NAMES = "MATCH (n:RwTest) RETURN n.name ORDER BY n.name"
OUT = "MATCH (:RwTest {name: 'a'})-->(m) RETURN m.name ORDER BY m.name"
REACH = "MATCH (:RwTest {name: 'a'})-[*1..3]->(m) RETURN DISTINCT m.name ORDER BY m.name"
OPTIONAL = ("MATCH (n:RwTest) OPTIONAL MATCH (n)-[:RW_LINK]->(m) "
            "RETURN n.name, m.name ORDER BY n.name, m.name")
INCOMING = "MATCH (n:RwTest)<--() RETURN DISTINCT n.name ORDER BY n.name"


@pytest.mark.parametrize(("query", "v", "clearance", "expected"), [
    (NAMES, 0, ("internal",), []),
    (NAMES, 1, ("public", "internal"), [["a"], ["b"], ["d"]]),
    (NAMES, 3, ("public", "internal"), [["a"], ["d"]]),  # b's gap [3, 5)
    (NAMES, 5, ("public", "internal"), [["a"], ["b"], ["d"]]),
    (NAMES, 1, ("public", "internal", "confidential", "restricted"),
     [["a"], ["b"], ["c"], ["d"]]),
    (NAMES, 1, ("public",), [["d"]]),
    (OUT, 1, ("internal",), [["b"]]),
    (OUT, 4, ("public", "internal"), [["d"]]),  # a->b hidden (b invalid), a->d valid [4, 5)
    (REACH, 2, ("public", "internal"), [["b"], ["d"]]),
    (REACH, 3, ("public", "internal"), []),  # b invalid; the way through c is restricted
    (REACH, 3, ("public", "internal", "restricted"), [["c"], ["d"]]),
    (OPTIONAL, 1, ("public", "internal"), [["a", "b"], ["b", None], ["d", None]]),
    (OPTIONAL, 2, ("public", "internal"), [["a", "b"], ["b", "d"], ["d", None]]),
    (INCOMING, 1, ("public", "internal"), [["b"]]),  # x->a is another tenant's
])
def test_rewritten_query_sees_only_the_scope(driver: Driver, tenants: dict[str, str],
                                             query: str, v: int, clearance: tuple[str, ...],
                                             expected: list[list[Any]]) -> None:
    assert rows(driver, tenants, query, v, clearance) == expected


def test_other_tenant_sees_its_own_elements(driver: Driver, tenants: dict[str, str]) -> None:
    params = scope_parameters(tenants["O"], 1, ["internal"])
    with driver.session(default_access_mode="READ") as session:
        result = session.run(scope_query("MATCH (n)-[r]->(m) RETURN n.name, m.name"), params)
        assert [list(r.values()) for r in result] == []  # x->a: a belongs to tenant T
        result = session.run(scope_query(NAMES), params)
        assert [list(r.values()) for r in result] == [["x"]]
