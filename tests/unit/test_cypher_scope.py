"""/cypher scope: Neo4j's Cypher 5 grammar, the allow-lists and the rewrite (cypher_scope)."""

from __future__ import annotations

import pytest

from substrate.errors import BadRequest, Forbidden
from substrate.retrieval.cypher_grammar import lex, parse
from substrate.retrieval.cypher_scope import (
    AtClause,
    check_regex,
    node_predicate,
    rel_predicate,
    scope_parameters,
    scope_query,
    split_at,
)
from substrate.retrieval.scope import ReadScope

READS = [
    "MATCH (n:Service {name: $name}) RETURN n",
    "MATCH (s:Service)-[:DEPENDS_ON*1..3]->(d) RETURN s.name, collect(d.name) LIMIT 10",
    "RETURN 'CREATE' AS s",
    'RETURN "MERGE (n) DETACH DELETE n; DROP DATABASE neo4j" AS s',
    "MATCH (n) // DELETE n\nRETURN n",
    "MATCH (n) /* CREATE (m) */ RETURN n",
    "MATCH (n) RETURN n.`set` AS x, n.delete AS y",
    "MATCH (n) RETURN n.name AS `the name with spaces`",
    "MATCH (n)-[:DELETE]->(m) RETURN m",
    "MATCH (n) CALL { WITH n MATCH (n)-->(m) RETURN count(m) AS c } RETURN n, c",
    "MATCH (n) RETURN COUNT { (n)-->() } AS degree, EXISTS { (n)<--() } AS used",
    "MATCH (a)-[r]->(b) RETURN type(r), vector.similarity.cosine(a.embedding, b.embedding)",
    "MATCH (n) RETURN n UNION MATCH (m) RETURN m AS n",
    "MATCH (n:Service|Team&!Secret) RETURN n",
    "MATCH p = ((a)-[r]->(b)){1,3} RETURN p",
    "MATCH p = ANY SHORTEST (a)-->+(b) RETURN p",
    "MATCH (n) RETURN [(n)-->(m) WHERE m.x > 1 | m.name] AS names",
    "MATCH (n) WHERE n.name =~ 'pay.*' RETURN n",
    "RETURN range(1, 100) AS r",
    "CALL custom.substrate_retrieval_dependencies('x', 1, ['public'], 'service:a') "
    "YIELD target RETURN target",
]


@pytest.mark.parametrize("query", READS)
def test_read_queries_are_scoped_and_parse_again(query: str) -> None:
    scoped = scope_query(query)
    parse(scoped.text)  # the rewrite is still Cypher 5
    assert "$__tenant" in scoped.text or "(" not in query.split("RETURN")[0]


WRITES = [
    "MATCH (n) /* */ DETACH DELETE n", "cReAtE (n:Service {name: 'x'})",
    "MATCH (n) SET n.owner = 'me'", "MERGE (n:Team {name: 'x'})", "MATCH (n) REMOVE n:Service",
    "MATCH (n) FOREACH (x IN [1] | SET n.x = x)", "CALL { CREATE (n) }",
    "MATCH (n) CALL (n) { DETACH DELETE n }",
    "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
    "MATCH (n) CALL { WITH n RETURN n } IN TRANSACTIONS RETURN n", "USE system SHOW USERS",
    "SHOW USERS", "SHOW INDEXES", "DROP INDEX service_embedding", "GRANT ROLE admin TO bob",
    "ALTER USER neo4j SET PASSWORD 'x'", "STOP DATABASE neo4j",
    "TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "WITH 1 AS `a`CREATE (n) RETURN n",
    "MATCH (n) RETURN n; MATCH (m) RETURN m",
]


@pytest.mark.parametrize("query", WRITES)
def test_writes_admin_and_second_statements_are_forbidden(query: str) -> None:
    with pytest.raises(Forbidden) as info:
        scope_query(query)
    assert info.value.status == 403 and info.value.detail["construct"]


REFUSED = {
    "EXPLAIN MATCH (n) RETURN n": "syntax",
    "CYPHER runtime=slotted MATCH (n) RETURN n": "syntax",
    "MATCH (n": "syntax",
    "RETURN 'unterminated": "syntax",
    "CALL db.labels() YIELD label RETURN label": "procedure db.labels",
    "CALL db.index.fulltext.queryNodes('entity_names', 'x') YIELD node RETURN node":
        "procedure db.index.fulltext.querynodes",
    "MATCH (n) CALL apoc.path.subgraphNodes(n, {}) YIELD node RETURN node":
        "procedure apoc.path.subgraphnodes",
    "CALL gds.graph.list()": "procedure gds.graph.list",
    "MATCH (n) RETURN gds.util.asNode(id(n) + 1)": "function gds.util.asnode",
    "RETURN apoc.cypher.runFirstColumnSingle('MATCH (n) RETURN n', {})":
        "function apoc.cypher.runfirstcolumnsingle",
    "MATCH (`__n0`) RETURN 1": "reserved name",
    "MATCH (n) WHERE n.t = $__tenant RETURN n": "reserved name",
    "MATCH (a) RETURN shortestPath((a)-[*]-(b:Service))": "shortestPath expression",
    "MATCH ((a)-[r*1..2]->(b)){1,2} RETURN a": "variable-length relationship",
    "MATCH (n) WHERE n.name =~ '(a+)+$' RETURN n": "=~",
    "MATCH (n) WHERE n.name =~ n.other RETURN n": "=~",
    "RETURN size(range(1, 30000000))": "range()",
    "CALL custom.substrate_retrieval_dependencies('x')": "procedure "
                                                        "custom.substrate_retrieval_dependencies",
}


@pytest.mark.parametrize(("query", "construct"), list(REFUSED.items()))
def test_refusals_name_the_construct(query: str, construct: str) -> None:
    with pytest.raises(BadRequest) as info:
        scope_query(query)
    assert info.value.status == 400
    assert info.value.detail["construct"] == construct, info.value.detail


def test_one_lexer_sees_a_back_quoted_name_glued_to_a_keyword() -> None:
    kinds = [t.type for t in lex("WITH 1 AS `a`MATCH (n) RETURN n") if t.type != "SPACE"]
    assert kinds[:5] == ["WITH", "UNSIGNED_DECIMAL_INTEGER", "AS", "ESCAPED_SYMBOLIC_NAME",
                         "MATCH"]
    assert node_predicate("n") in scope_query("WITH 1 AS `a`MATCH (n) RETURN n").text


def test_every_element_is_scoped_inline_and_anonymous_ones_are_named() -> None:
    text = scope_query("MATCH (a)-->(:Service {x: 1} WHERE true OR false) RETURN a").text
    assert text == (f"MATCH (a WHERE {node_predicate('a')})-[__r0 WHERE {rel_predicate('__r0')}]"
                    f"->(__n1 :Service {{x: 1}} WHERE (true OR false) AND "
                    f"{node_predicate('__n1')}) RETURN a")


def test_a_variable_length_relationship_scopes_every_hop_and_its_ends() -> None:
    text = scope_query("MATCH (a)-[r*1..3]->(b) WHERE a.x = 1 RETURN b").text
    assert "WHERE (a.x = 1) AND all(__x IN r WHERE" in text
    assert node_predicate("startNode(__x)") in text and node_predicate("endNode(__x)") in text


def test_a_pattern_predicate_becomes_an_exists_subquery() -> None:
    text = scope_query("MATCH (a) WHERE NOT (a)-->() RETURN a").text
    assert "WHERE NOT EXISTS { (a WHERE" in text and text.endswith("} RETURN a")


def test_scoped_procedures_get_the_reserved_scope_arguments() -> None:
    text = scope_query("CALL custom.substrate_retrieval_ownership('other', 1, ['restricted'], "
                       "'service:x') YIELD owner RETURN owner").text
    assert "custom.substrate_retrieval_ownership($__tenant, $__v, $__clearance, 'service:x')" \
        in text


def test_range_with_parameters_is_bounded_too() -> None:
    with pytest.raises(BadRequest):
        scope_query("RETURN range($a, $b)", {"a": 0, "b": 10**9})
    scope_query("RETURN range($a, $b)", {"a": 0, "b": 10})


@pytest.mark.parametrize("pattern", ["(a+)+$", "(.*)*x", "(a|aa)+", "(\\w+\\s?)*$",
                                     ".*.*.*.*x", "(a)\\1", "x" * 201])
def test_catastrophic_regexes_are_refused(pattern: str) -> None:
    with pytest.raises(BadRequest):
        check_regex(pattern, 0)


@pytest.mark.parametrize("pattern", ["pay.*", "(?i)service:.+", "[a-z]+-[0-9]{1,3}", "a|b"])
def test_plain_regexes_pass(pattern: str) -> None:
    check_regex(pattern, 0)


@pytest.mark.parametrize(("suffix", "at"), [
    ("AT('2026-10-01T00:00:00Z')", AtClause(timestamp=None)),
    ("AT(42);", AtClause(snapshot_version=42)),
    ("at($when)", AtClause(parameter="when")),
])
def test_at_suffix(suffix: str, at: AtClause) -> None:
    query, found = split_at(f"MATCH (n) RETURN n {suffix}")
    assert query == "MATCH (n) RETURN n"
    assert found is not None
    if at.timestamp is None and at.snapshot_version is None and at.parameter is None:
        assert found.timestamp is not None and found.timestamp.year == 2026
    else:
        assert found == at


def test_at_inside_a_string_or_comment_is_not_a_suffix() -> None:
    assert split_at("RETURN 'AT(42)' AS s")[1] is None
    assert split_at("RETURN 1 AS s // AT(42)")[1] is None


def test_scope_parameters_follow_the_read_scope() -> None:
    scope = ReadScope(tenant="t", version=3, clearance=("public",), pinned=True)
    params = scope_parameters(scope)
    assert params["__tenant"] == "t" and params["__v"] == 3
    assert params["__clearance"] == ["public"]


def test_a_reader_restricted_to_jurisdictions_calls_no_procedure() -> None:
    query = ("CALL custom.substrate_retrieval_ownership('t', 1, ['public'], 'service:x') "
             "YIELD owner RETURN owner")
    with pytest.raises(Forbidden) as info:  # the principal's rights, not a malformed query
        scope_query(query, jurisdictions_restricted=True)
    assert "jurisdictions" in info.value.message
