from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from substrate.errors import BadRequest, Forbidden
from substrate.retrieval.cypher_guard import (
    AtClause,
    check_read_only,
    mask,
    split_at_suffix,
    take_rows,
)


def refused(query: str) -> dict[str, str]:
    with pytest.raises(Forbidden) as info:
        check_read_only(query)
    assert info.value.status == 403
    detail = info.value.detail
    assert isinstance(detail, dict)
    return detail


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:Service {name: $name}) RETURN n",
        "MATCH (s:Service)-[:DEPENDS_ON*1..3]->(d) RETURN s.name, collect(d.name) LIMIT 10",
        "RETURN 'CREATE' AS s",
        "RETURN 'http://example.com/x' AS url, \"a // b /* c\" AS s",
        'RETURN "MERGE (n) DETACH DELETE n; DROP DATABASE neo4j" AS s',
        "RETURN 'it\\'s a SET' AS s",
        "MATCH (n) // DELETE n\nRETURN n",
        "MATCH (n) /* CREATE (m) */ RETURN n",
        "MATCH (n) RETURN n.`set` AS x, n.delete AS y",
        "MATCH (n) WHERE n.name STARTS WITH 'x' RETURN startNode(n), $create",
        "MATCH (n) RETURN n;",
        "MATCH (n) RETURN n ;  \n",
        "CALL db.labels() YIELD label RETURN label",
        "CALL db.labels",
        "CALL db.index.vector.queryNodes('service_embedding', 5, $v) YIELD node, score "
        "RETURN node, score",
        "CALL db.index.fulltext.queryNodes('entity_names', $q) YIELD node RETURN node",
        "MATCH (s:Service {name:'a'}) CALL apoc.path.subgraphNodes(s, {maxLevel: 2}) "
        "YIELD node RETURN node",
        "CALL gds.pageRank.stream('services') YIELD nodeId, score "
        "RETURN gds.util.asNode(nodeId).name, score",
        "CALL gds.graph.list() YIELD graphName RETURN graphName",
        "MATCH (n) CALL { WITH n MATCH (n)-->(m) RETURN count(m) AS c } RETURN n, c",
        "MATCH (n) RETURN COUNT { (n)-->() } AS degree, EXISTS { (n)<--() } AS used",
        "MATCH (a)-[r]->(b) RETURN type(r), datetime().epochMillis, "
        "vector.similarity.cosine(a.embedding, b.embedding)",
        "MATCH (n) RETURN n UNION MATCH (m) RETURN m AS n",
    ],
)
def test_read_queries_pass(query: str) -> None:
    verdict = check_read_only(query)
    assert verdict.at is None
    assert not verdict.query.rstrip().endswith(";")


@pytest.mark.parametrize(
    ("query", "token"),
    [
        ("MATCH (n) /* */ DETACH DELETE n", "DETACH"),
        ("MATCH (n) /* harmless */DELETE n", "DELETE"),
        ("cReAtE (n:Service {name: 'x'})", "CREATE"),
        ("MATCH (n) SET n.owner = 'me'", "SET"),
        ("MERGE (n:Team {name: 'x'})", "MERGE"),
        ("MATCH (n) REMOVE n:Service", "REMOVE"),
        ("MATCH (n) FOREACH (x IN [1] | SET n.x = x)", "FOREACH"),
        ("CALL { CREATE (n) }", "CREATE"),
        ("MATCH (n) CALL { WITH n DELETE n } RETURN 1", "DELETE"),
        ("MATCH (n) CALL (n) { DETACH DELETE n }", "DETACH"),
        ("LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row", "LOAD"),
        ("load\ncsv with headers from 'http://x' as r return r", "LOAD"),
        ("MATCH (n) CALL { WITH n RETURN n } IN TRANSACTIONS RETURN n", "TRANSACTIONS"),
        ("USING PERIODIC COMMIT MATCH (n) RETURN n", "PERIODIC"),
        ("USE system SHOW USERS", "USE"),
        ("SHOW USERS", "SHOW"),
        ("SHOW INDEXES", "SHOW"),
        ("DROP INDEX service_embedding", "DROP"),
        ("GRANT ROLE admin TO bob", "GRANT"),
        ("DENY READ {*} ON GRAPH * TO bob", "DENY"),
        ("REVOKE ROLE admin FROM bob", "REVOKE"),
        ("ALTER USER neo4j SET PASSWORD 'x'", "ALTER"),
        ("STOP DATABASE neo4j", "STOP DATABASE"),
        ("start\n  database neo4j", "START DATABASE"),
        ("TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "TERMINATE"),
        ("INSERT (n:Service {name: 'x'})", "INSERT"),
        ("EXPLAIN MATCH (n) RETURN n", "EXPLAIN"),
        ("PROFILE MATCH (n) RETURN n", "PROFILE"),
        ("CYPHER runtime=slotted MATCH (n) RETURN n", "CYPHER"),
        ("MATCH (n)-[:DELETE]->(m) RETURN m", "DELETE"),  # fail closed on keyword names
    ],
)
def test_write_and_admin_clauses_are_refused(query: str, token: str) -> None:
    assert refused(query)["token"] == token


@pytest.mark.parametrize(
    ("query", "token"),
    [
        ("MATCH (n) RETURN n; MATCH (m) DETACH DELETE m", ";"),
        ("MATCH (n) RETURN n; MATCH (m) RETURN m", ";"),
        ("MATCH (n) RETURN n /* ; */; RETURN 1", ";"),
    ],
)
def test_a_second_statement_is_refused(query: str, token: str) -> None:
    detail = refused(query)
    assert detail == {"token": token, "reason": "multiple statements"}


def test_a_semicolon_inside_a_string_or_comment_is_not_a_second_statement() -> None:
    assert check_read_only("RETURN 'a; b' AS s // ; DELETE\n").query == "RETURN 'a; b' AS s"


@pytest.mark.parametrize(
    ("query", "token"),
    [
        ("CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
         "apoc.periodic.iterate"),
        ("CALL gds.pageRank.write('g', {writeProperty: 'pr'})", "gds.pageRank.write"),
        ("CALL gds.pageRank.mutate('g', {mutateProperty: 'pr'})", "gds.pageRank.mutate"),
        ("CALL dbms.security.createUser('eve', 'pw', false)", "dbms.security.createUser"),
        ("CALL dbms.components()", "dbms.components"),
        ("CALL apoc.create.node(['X'], {})", "apoc.create.node"),
        ("CALL apoc.merge.node(['X'], {})", "apoc.merge.node"),
        ("CALL apoc.refactor.mergeNodes([])", "apoc.refactor.mergeNodes"),
        ("MATCH (n) CALL apoc.nodes.delete(n, 10) YIELD value RETURN value", "apoc.nodes.delete"),
        ("CALL apoc.cypher.run('MATCH (n) RETURN n', {})", "apoc.cypher.run"),
        ("CALL apoc.cypher.doIt('CREATE (n)', {})", "apoc.cypher.doIt"),
        ("RETURN apoc.cypher.runFirstColumnSingle('CREATE (n) RETURN n', {})",
         "apoc.cypher.runFirstColumnSingle"),
        ("CALL apoc.custom.installProcedure('x() :: (n)', 'CREATE (n)')",
         "apoc.custom.installProcedure"),
        ("CALL apoc.trigger.add('t', 'CREATE (n)', {})", "apoc.trigger.add"),
        ("CALL apoc.schema.assert({}, {})", "apoc.schema.assert"),
        ("CALL apoc.load.json('http://169.254.169.254/')", "apoc.load.json"),
        ("CALL gds.graph.drop('services')", "gds.graph.drop"),
        ("CALL gds.graph.project('g', 'Service', 'CALLS')", "gds.graph.project"),
        ("MATCH (a)-->(b) RETURN gds.graph.project('g', a, b)", "gds.graph.project"),
        ("CALL db.createLabel('X')", "db.createLabel"),
        ("CALL db.index.fulltext.createNodeIndex('x', ['A'], ['b'])",
         "db.index.fulltext.createNodeIndex"),
        ("CALL tx.setMetaData({a: 1})", "tx.setMetaData"),
        ("CALL apoc.do.when(true, 'CREATE (n)', '', {})", "apoc.do.when"),
        ("CALL `apoc`.`periodic`.`iterate`('a', 'b', {})", "apoc.periodic.iterate"),
        ("CALL apoc . periodic . iterate('a', 'b', {})", "apoc.periodic.iterate"),
        ("CALL/* x */apoc.periodic.commit('x')", "apoc.periodic.commit"),
        ("CALL APOC.PERIODIC.ITERATE('a', 'b', {})", "APOC.PERIODIC.ITERATE"),
    ],
)
def test_write_and_admin_procedures_are_refused(query: str, token: str) -> None:
    detail = refused(query)
    assert detail == {"token": token, "reason": "write or administration procedure"}


@pytest.mark.parametrize(
    "query",
    ["CALL db.resampleIndex('x')", "CALL my.custom.proc()", "CALL db.awaitIndexes(300)",
     "CALL apoc.nodes.get([1])"],
)
def test_procedures_off_the_allow_list_are_refused(query: str) -> None:
    assert refused(query)["reason"] == "procedure not on the read-only allow-list"


def test_verdict_lists_procedures_and_functions() -> None:
    verdict = check_read_only(
        "CALL gds.pageRank.stream('g') YIELD nodeId, score "
        "RETURN gds.util.asNode(nodeId).name AS name, score ORDER BY score DESC")
    assert verdict.procedures == ("gds.pageRank.stream",)
    assert verdict.functions == ("gds.util.asNode",)


def test_unanalysable_text_is_a_bad_request() -> None:
    for query in ["RETURN 'open", "MATCH (n) /* never closed", "RETURN `x", "  ", ";", "// x"]:
        with pytest.raises(BadRequest):
            check_read_only(query)


def test_mask_keeps_length_and_blanks_strings_and_comments() -> None:
    query = "MATCH (n) /* c */ WHERE n.x = 'CREATE' // d\nRETURN `my label`"
    masked = mask(query)
    assert len(masked) == len(query)
    assert "CREATE" not in masked and "/*" not in masked and "// d" not in masked
    assert "'      '" in masked and "my label" in masked


# --- AT(...) --------------------------------------------------------------------------------


def test_at_suffix_with_a_timestamp() -> None:
    query, at = split_at_suffix("MATCH (n) RETURN n AT('2026-10-01T00:00:00Z')")
    assert query == "MATCH (n) RETURN n"
    assert at == AtClause(timestamp=datetime(2026, 10, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("suffix", "at"),
    [
        (' at ( "2026-10-01" ) ;', AtClause(timestamp=datetime(2026, 10, 1, tzinfo=UTC))),
        (" AT(datetime('2026-10-01T12:00:00+02:00'))",
         AtClause(timestamp=datetime(2026, 10, 1, 10, tzinfo=UTC))),
        (" AT(42)", AtClause(snapshot_version=42)),
        (" AT($ts)", AtClause(parameter="ts")),
    ],
)
def test_at_suffix_forms(suffix: str, at: AtClause) -> None:
    verdict = check_read_only("MATCH (n) RETURN n" + suffix)
    assert verdict.query == "MATCH (n) RETURN n"
    assert verdict.at == at


def test_at_inside_a_string_a_comment_or_a_name_is_not_a_suffix() -> None:
    for query in ["RETURN 'x AT(42)'", "RETURN 1 // AT(42)", "RETURN my.at(42)",
                  "RETURN flat(42)"]:
        assert split_at_suffix(query) == (query, None)


def test_bad_at_arguments() -> None:
    for query in ["MATCH (n) RETURN n AT('yesterday')", "MATCH (n) RETURN n AT(n.x)"]:
        with pytest.raises(BadRequest):
            check_read_only(query)


def test_the_query_before_at_is_still_guarded() -> None:
    assert refused("MATCH (n) DETACH DELETE n AT(42)")["token"] == "DETACH"


# --- row limit -------------------------------------------------------------------------------


def test_take_rows_reads_one_extra_row_at_most() -> None:
    consumed: list[int] = []

    def rows() -> Iterator[int]:
        for i in range(1000):
            consumed.append(i)
            yield i

    taken, truncated = take_rows(rows(), 3)
    assert (taken, truncated) == ([0, 1, 2], True)
    assert len(consumed) == 4
    assert take_rows([1, 2, 3], 3) == ([1, 2, 3], False)
    assert take_rows([], 0) == ([], False)
    assert take_rows([1], 0) == ([], True)
    with pytest.raises(ValueError):
        take_rows([1], -1)
