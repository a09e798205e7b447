from __future__ import annotations

import re

import pytest

from substrate.errors import BadRequest
from substrate.retrieval.cypher_guard import check_read_only
from substrate.retrieval.temporal_rewrite import (
    node_predicate as N,
)
from substrate.retrieval.temporal_rewrite import (
    rel_predicate as R,
)
from substrate.retrieval.temporal_rewrite import (
    scope_parameters,
    scope_query,
)


def VL(r: str) -> str:
    return f"all(__x IN {r} WHERE {R('__x')})"


def P(path: str) -> str:
    return f"all(__y IN nodes({path}) WHERE {N('__y')})"


# (query, expected rewrite); every rewrite is also EXPLAINed against Neo4j by
# tests/integration/test_temporal_rewrite_explain.py.
CASES: list[tuple[str, str]] = [
    ("MATCH (n:Service {name: $name}) RETURN n",
     f"MATCH (n:Service {{name: $name}}) WHERE {N('n')} RETURN n"),
    ("MATCH (:Service)-->() RETURN count(*)",
     f"MATCH (__n0 :Service)-[__r1]->(__n2 ) WHERE {N('__n0')} AND {R('__r1')} AND {N('__n2')}"
     " RETURN count(*)"),
    ("MATCH (a:Service)-[r:DEPENDS_ON]->(b:Service) RETURN a.name, type(r), b.name",
     f"MATCH (a:Service)-[r:DEPENDS_ON]->(b:Service) WHERE {N('a')} AND {R('r')} AND {N('b')}"
     " RETURN a.name, type(r), b.name"),
    ("MATCH (a)<-[:OWNS]-(t), (a)-[d]-(b) RETURN a, t, b",
     f"MATCH (a)<-[__r0 :OWNS]-(t), (a)-[d]-(b) WHERE {N('a')} AND {R('__r0')} AND {N('t')}"
     f" AND {R('d')} AND {N('b')} RETURN a, t, b"),
    ("MATCH (a) WHERE a.x = 1 OR a.y = 2 RETURN a",
     f"MATCH (a) WHERE (a.x = 1 OR a.y = 2) AND {N('a')} RETURN a"),
    ("MATCH (a:Service)\nWHERE a.tier = 'gold' OR a.name STARTS WITH 'pay'\n"
     "WITH a ORDER BY a.name MATCH (a)-[r]->(b) RETURN a, b ORDER BY b.name SKIP 1 LIMIT 5",
     f"MATCH (a:Service)\nWHERE (a.tier = 'gold' OR a.name STARTS WITH 'pay') AND {N('a')}\n"
     f"WITH a ORDER BY a.name MATCH (a)-[r]->(b) WHERE {N('a')} AND {R('r')} AND {N('b')}"
     " RETURN a, b ORDER BY b.name SKIP 1 LIMIT 5"),
    ("MATCH (a:Service) OPTIONAL MATCH (a)<-[o:OWNS]-(t:Team) WHERE t.name <> 'x' "
     "RETURN a, t",
     f"MATCH (a:Service) WHERE {N('a')} OPTIONAL MATCH (a)<-[o:OWNS]-(t:Team)"
     f" WHERE (t.name <> 'x') AND {N('a')} AND {R('o')} AND {N('t')} RETURN a, t"),
    ("MATCH (s:Service)-[r:DEPENDS_ON*1..3]->(d) RETURN s, d",
     f"MATCH __p0 = (s:Service)-[r:DEPENDS_ON*1..3]->(d) WHERE {N('s')} AND {VL('r')}"
     f" AND {N('d')} AND {P('__p0')} RETURN s, d"),
    ("MATCH (s)-[*]-(d) RETURN d",
     f"MATCH __p1 = (s)-[__r0 *]-(d) WHERE {N('s')} AND {VL('__r0')} AND {N('d')}"
     f" AND {P('__p1')} RETURN d"),
    ("MATCH p = (s)-[:A|B*0..]->(:X) RETURN p",
     f"MATCH p = (s)-[__r0 :A|B*0..]->(__n1 :X) WHERE {N('s')} AND {VL('__r0')}"
     f" AND {N('__n1')} AND {P('p')} RETURN p"),
    ("MATCH p = (a)-[r]->(b) RETURN nodes(p), relationships(p)",
     f"MATCH p = (a)-[r]->(b) WHERE {N('a')} AND {R('r')} AND {N('b')}"
     " RETURN nodes(p), relationships(p)"),
    ("MATCH (n) WHERE n.note = 'MATCH (x) WHERE (a)-->(b)' RETURN n, \"(\" AS s",
     f"MATCH (n) WHERE (n.note = 'MATCH (x) WHERE (a)-->(b)') AND {N('n')} RETURN n, \"(\" AS s"),
    ("MATCH (n) // MATCH (m)-->() in a comment\nRETURN n /* (a)-->(b) */",
     f"MATCH (n) WHERE {N('n')} // MATCH (m)-->() in a comment\nRETURN n /* (a)-->(b) */"),
    ("MATCH (n:Service) USING INDEX n:Service(tenant_id) WHERE n.name = $name RETURN n",
     f"MATCH (n:Service) USING INDEX n:Service(tenant_id) WHERE (n.name = $name) AND {N('n')}"
     " RETURN n"),
    ("MATCH (n:Service) USING SCAN n:Service RETURN n",
     f"MATCH (n:Service) USING SCAN n:Service WHERE {N('n')} RETURN n"),
    ("MATCH (n:Service WHERE n.tier = 'gold')-[r WHERE r.weight > 0.5]->(m) RETURN m",
     f"MATCH (n:Service WHERE n.tier = 'gold')-[r WHERE r.weight > 0.5]->(m)"
     f" WHERE {N('n')} AND {R('r')} AND {N('m')} RETURN m"),
    ("MATCH (n:Service|Team), (IS Person), (m IS Service&!Team) RETURN n, m",
     f"MATCH (n:Service|Team), (__n0 IS Person), (m IS Service&!Team)"
     f" WHERE {N('n')} AND {N('__n0')} AND {N('m')} RETURN n, m"),
    ("MATCH (`my node`:`Odd(Label`) RETURN `my node`.name",
     f"MATCH (`my node`:`Odd(Label`) WHERE {N('`my node`')} RETURN `my node`.name"),
    ("MATCH (a)<-->(b), (a) - [r] - > (c) RETURN a",
     f"MATCH (a)<-[__r0]->(b), (a) - [r] - > (c) WHERE {N('a')} AND {R('__r0')} AND {N('b')}"
     f" AND {R('r')} AND {N('c')} RETURN a"),
    ("MATCH (a)-->(a) RETURN a;",
     f"MATCH (a)-[__r0]->(a) WHERE {N('a')} AND {R('__r0')} RETURN a"),
    ("CALL { MATCH (n:Service) RETURN n UNION MATCH (n:Team) RETURN n } RETURN n.name",
     f"CALL {{ MATCH (n:Service) WHERE {N('n')} RETURN n UNION MATCH (n:Team) WHERE {N('n')}"
     " RETURN n } RETURN n.name"),
    ("MATCH (a:Service) CALL { WITH a MATCH (a)-[r]->(b) WHERE b.x > 1 RETURN b } RETURN a, b",
     f"MATCH (a:Service) WHERE {N('a')} CALL {{ WITH a MATCH (a)-[r]->(b)"
     f" WHERE (b.x > 1) AND {N('a')} AND {R('r')} AND {N('b')} RETURN b }} RETURN a, b"),
    ("CALL () { MATCH (n)-->(m) WHERE n.name ENDS WITH 'db' RETURN count(m) AS c } RETURN c",
     f"CALL () {{ MATCH (n)-[__r0]->(m) WHERE (n.name ENDS WITH 'db') AND {N('n')}"
     f" AND {R('__r0')} AND {N('m')} RETURN count(m) AS c }} RETURN c"),
    ("MATCH (n:Service) RETURN n.name AS name UNION ALL MATCH (n:Team) RETURN n.name AS name",
     f"MATCH (n:Service) WHERE {N('n')} RETURN n.name AS name UNION ALL MATCH (n:Team)"
     f" WHERE {N('n')} RETURN n.name AS name"),
    ("MATCH (n) RETURN {match: n.match, optional: 1} AS m",
     f"MATCH (n) WHERE {N('n')} RETURN {{match: n.match, optional: 1}} AS m"),
    ("match (n) where n.a = 1 with n, [x IN range(1, 3) | x * 2] AS xs "
     "optional match (n)-[:R]->(m) return n, xs, m",
     f"match (n) where (n.a = 1) AND {N('n')} with n, [x IN range(1, 3) | x * 2] AS xs "
     f"optional match (n)-[__r0 :R]->(m) WHERE {N('n')} AND {R('__r0')} AND {N('m')}"
     " return n, xs, m"),
    ("UNWIND $names AS name MATCH (s:Service {name: name}) RETURN s",
     f"UNWIND $names AS name MATCH (s:Service {{name: name}}) WHERE {N('s')} RETURN s"),
    ("MATCH (a) RETURN *",
     f"MATCH (a) WHERE {N('a')} RETURN *"),
    ("MATCH (a)–[r]–＞(b), (a)\u00ad\u00ad(c) RETURN a",
     f"MATCH (a)–[r]–＞(b), (a)\u00ad[__r0]\u00ad(c) WHERE {N('a')} AND {R('r')} AND {N('b')}"
     f" AND {R('__r0')} AND {N('c')} RETURN a"),
    ("CALL `db`.labels() YIELD label RETURN label", "CALL `db`.labels() YIELD label RETURN label"),
    ("RETURN 1 AS one", "RETURN 1 AS one"),
    ("CALL db.labels() YIELD label RETURN label", "CALL db.labels() YIELD label RETURN label"),
    ("MATCH (n) WHERE n.x IN [1, 2] AND (n.a - (1)) > 0 RETURN apoc.text.join([n.name], ',')",
     f"MATCH (n) WHERE (n.x IN [1, 2] AND (n.a - (1)) > 0) AND {N('n')}"
     " RETURN apoc.text.join([n.name], ',')"),
]


@pytest.mark.parametrize(("query", "expected"), CASES, ids=[c[0][:50] for c in CASES])
def test_rewrite(query: str, expected: str) -> None:
    assert check_read_only(query).query  # the input is what the guard lets through
    assert scope_query(query) == expected


def refused(query: str) -> dict[str, object]:
    with pytest.raises(BadRequest) as info:
        scope_query(query)
    assert info.value.status == 400
    assert "rewriter cannot handle" in info.value.message
    detail = info.value.detail
    assert isinstance(detail, dict)
    assert isinstance(detail["offset"], int)
    return detail


REFUSALS: list[tuple[str, str]] = [
    ("MATCH (n) WHERE n.v = $__v RETURN n", "reserved name"),
    ("MATCH (__n0) RETURN __n0", "reserved name"),
    ("MATCH (n) RETURN n.x AS `__x`", "reserved name"),
    ("MATCH (n) WHERE n.x = $`__tenant` RETURN n", "reserved name"),
    ("MATCH (a), (b) WHERE (a)-[:DEPENDS_ON]->(b) RETURN a", "pattern expression outside MATCH"),
    ("MATCH (a) WHERE NOT (a)<--() RETURN a", "pattern expression outside MATCH"),
    ("MATCH (a) RETURN [(a)-->(b) | b.name] AS names", "pattern expression outside MATCH"),
    ("MATCH (a) RETURN size([(a)-[:R]->() | 1]) AS n", "pattern expression outside MATCH"),
    ("MATCH (a) RETURN [(a)–[r]–＞(b) | b] AS x", "pattern expression outside MATCH"),
    ("MATCH (a) WHERE (a) <- - (b) RETURN a", "pattern expression outside MATCH"),
    ("MATCH (a) WHERE EXISTS { (a)-->() } RETURN a", "EXISTS { } subquery"),
    ("MATCH (a) WHERE exists {MATCH (a)-->(b) WHERE b.x = 1} RETURN a", "EXISTS { } subquery"),
    ("MATCH (a) RETURN COUNT { (a)-->() } AS degree", "COUNT { } subquery"),
    ("MATCH (a) RETURN collect { MATCH (a)-->(b) RETURN b.name } AS n", "COLLECT { } subquery"),
    ("MATCH ((a)-[:R]->(b)){1,3} RETURN a", "quantified or nested path pattern"),
    ("MATCH (x) ((a)-[:R]->(b))+ (y) RETURN x", "quantified path pattern"),
    ("MATCH (a)-[:R]->{1,3}(b) RETURN a", "quantified path pattern"),
    ("MATCH (a)-->+(b) RETURN a", "quantified path pattern"),
    ("MATCH p = shortestPath((a)-[*]-(b)) RETURN p", "shortestPath"),
    ("MATCH p = allShortestPaths((a)-[*]-(b)) RETURN p", "allShortestPaths"),
    ("MATCH p = ANY SHORTEST (a)-[:R]-+(b) RETURN p", "path selector"),
    ("MATCH ALL (a)-->(b) RETURN a", "path selector"),
    ("MATCH REPEATABLE ELEMENTS (a)-->(b) RETURN a", "match mode"),
    ("CALL db.index.fulltext.queryNodes('idx', 'pay') YIELD node RETURN node",
     "procedure db.index.fulltext.queryNodes"),
    ("CALL db.index.vector.queryNodes('v', 5, $e) YIELD node RETURN node",
     "procedure db.index.vector.queryNodes"),
    ("MATCH (a) CALL apoc.path.expand(a, 'R', null, 1, 2) YIELD path RETURN path",
     "procedure apoc.path.expand"),
    ("UNWIND $ids AS id RETURN gds.util.asNode(id) AS n", "function gds.util.asNode"),
    ("CALL gds.pageRank.stream('g') YIELD nodeId RETURN nodeId", "procedure gds.pageRank.stream"),
    ("MATCH (a) RETURN apoc.node.degree(a) AS d", "function apoc.node.degree"),
    ("RETURN `gds`.util . `asNode`(1) AS n", "function gds.util.asNode"),
    ("CALL `db.index.fulltext.queryNodes`('i', 'q') YIELD node RETURN node",
     "procedure db.index.fulltext.queryNodes"),
    ("MATCH (a), (b) RETURN apoc.nodes.connected(a, b) AS c", "function apoc.nodes.connected"),
    ("MATCH (a)-->() RETURN * UNION MATCH (a) RETURN *", "RETURN * in UNION"),
    ("MATCH (a WHERE (a)-->()) RETURN a", "quantified or nested path pattern"),
    ("MATCH (a {x: [(a)-->(b) | b.x]}) RETURN a", "quantified or nested path pattern"),
    ("MATCH (a) , RETURN a", "unsupported pattern syntax"),
    ("MATCH (a)-[r]>(b) RETURN a", "unsupported pattern syntax"),
]


@pytest.mark.parametrize(("query", "construct"), REFUSALS, ids=[r[0][:50] for r in REFUSALS])
def test_refusal_names_the_construct(query: str, construct: str) -> None:
    detail = refused(query)
    assert detail["construct"] == construct, detail


def test_refusal_message_is_clear() -> None:
    with pytest.raises(BadRequest) as info:
        scope_query("MATCH (a) WHERE (a)-->() RETURN a")
    assert info.value.message.startswith(
        "the AT/scope rewriter cannot handle pattern expression outside MATCH")
    assert info.value.to_dict()["error"]["code"] == "bad_request"


def test_property_keys_starting_with_underscores_are_fine() -> None:
    assert scope_query("MATCH (n) RETURN n.__x, n.`__y`") == (
        f"MATCH (n) WHERE {N('n')} RETURN n.__x, n.`__y`")


def test_output_is_not_rewritten_twice() -> None:
    once = scope_query("MATCH (a)-->(b) RETURN b")
    assert refused(once)["construct"] == "reserved name"


def test_subtraction_of_parenthesised_values_is_not_a_pattern() -> None:
    assert scope_query("RETURN (1) - (2) AS x, (3)-4 AS y") == "RETURN (1) - (2) AS x, (3)-4 AS y"


def test_every_element_gets_exactly_one_predicate() -> None:
    out = scope_query("MATCH (a)-[:R]->(b)<-[s]-(:C), (d) OPTIONAL MATCH (d)--(e) RETURN a")
    assert out.count(".tenant_id = $__tenant") == 6 + 3  # a, r, b, s, C, d; d, --, e
    assert re.findall(r"__[nr]\d+", out.split(" WHERE ")[0]) == ["__r0", "__n1"]


def test_unbalanced_text_is_refused() -> None:
    assert refused("MATCH (a RETURN a")["construct"] == "unbalanced brackets"


def test_scope_parameters() -> None:
    assert scope_parameters("acme", 7, ("public", "internal")) == {
        "__tenant": "acme", "__v": 7, "__clearance": ["public", "internal"]}
