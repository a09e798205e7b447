"""POST /cypher: typed read-only results; every write or admin attempt is refused."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from substrate.settings import Settings
from tests.support.gateway_client import gateway


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


WRITES = [
    "CREATE (n:Service {name: 'x'})",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n:Service) SET n.name = 'x'",
    "MATCH (n:Service) REMOVE n.name",
    "MERGE (n:Service {ceid: 'service:x'})",
    "cReAtE (n:Service)",
    "MATCH (n) /* harmless */ DETACH /* comment */ DELETE n",
    "MATCH (n) // comment\nDELETE n",
    "MATCH (n) CALL { WITH n CREATE (m:Service) } RETURN n",
    "MATCH (n) CALL (n) { SET n.x = 1 } RETURN n",
    "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
    "CALL apoc.create.node(['Service'], {name: 'x'})",
    "CALL gds.pageRank.write('g', {writeProperty: 'pr'})",
    "CALL dbms.security.createUser('eve', 'pw', false)",
    "CALL db.createLabel('Evil')",
    "MATCH (n) RETURN n; MATCH (m) DELETE m",
    "RETURN 1; CREATE (n)",
    "FOREACH (x IN [1] | CREATE (:Service))",
    "DROP INDEX entity_names",
    "CREATE INDEX evil FOR (n:Service) ON (n.x)",
    "MATCH (n) WITH n CALL apoc.cypher.doIt('CREATE (m)', {}) YIELD value RETURN value",
    "USING PERIODIC COMMIT LOAD CSV FROM 'x' AS l CREATE (n)",
]


@pytest.mark.parametrize("query", WRITES)
def test_write_and_admin_attempts_are_refused(api: httpx.Client, query: str) -> None:
    r = api.post("/cypher", json={"query": query})
    assert r.status_code in (400, 403), (query, r.text)
    body = r.json()
    assert set(body["error"]) == {"code", "message", "detail"}


def test_refusals_change_nothing(api: httpx.Client) -> None:
    before = api.post("/cypher", json={"query": "MATCH (n:Service) RETURN count(n) AS c"}).json()
    api.post("/cypher", json={"query": "CREATE (n:Service {name: 'x'})"})
    after = api.post("/cypher", json={"query": "MATCH (n:Service) RETURN count(n) AS c"}).json()
    assert before["rows"] == after["rows"]


def test_a_string_that_says_create_is_fine(api: httpx.Client) -> None:
    body = api.post("/cypher", json={"query": "RETURN 'CREATE' AS word"}).json()
    assert body["rows"] == [["CREATE"]]


def test_temporal_values_are_iso_text(api: httpx.Client) -> None:
    q = ("RETURN date('2026-11-24') AS day, duration('PT2H30M') AS took, "
         "[duration('P1D')] AS spans, datetime('2026-11-24T12:00:00Z') AS at")
    body = api.post("/cypher", json={"query": q}).json()
    assert body["rows"] == [["2026-11-24", "PT2H30M", ["P1D"],
                             "2026-11-24T12:00:00.000000000+00:00"]]


def test_typed_nodes_relationships_and_paths(api: httpx.Client) -> None:
    q = ("MATCH p = (s:Service {ceid: $id})-[r:CALLS]->(t:Service) "
         "RETURN s, r, p, t.ceid AS target ORDER BY target LIMIT 3")
    body = api.post("/cypher", json={"query": q, "params": {"id": "service:checkout"}}).json()
    assert body["columns"] == ["s", "r", "p", "target"]
    s, r, p, target = body["rows"][0]
    assert s["type"] == "node" and "Service" in s["labels"]
    assert "embedding" not in s["properties"]
    assert r["type"] == "relationship" and r["rel_type"] == "CALLS"
    assert r["properties"]["evidence_ref"]
    assert p["type"] == "path" and len(p["relationships"]) == 1
    assert isinstance(target, str)


def test_row_limit_is_reported(api: httpx.Client, stack: Settings) -> None:
    q = "UNWIND range(1, $n) AS x RETURN x"
    body = api.post("/cypher", json={"query": q, "params": {"n": stack.cypher_row_limit + 5}})
    out = body.json()
    assert out["truncated"] is True and out["row_count"] == stack.cypher_row_limit
    small = api.post("/cypher", json={"query": q, "params": {"n": 3}}).json()
    assert small["truncated"] is False and small["row_count"] == 3


def test_timeout_is_reported(api: httpx.Client) -> None:
    slow = ("UNWIND range(1, 3000) AS a UNWIND range(1, 3000) AS b UNWIND range(1, 100) AS c "
            "WITH a, b, c WHERE a * b * c = -1 RETURN count(*) AS n")
    r = api.post("/cypher", json={"query": slow})
    assert r.status_code == 408, r.text
    assert r.json()["error"]["code"] == "query_timeout"


def test_at_suffix_reads_the_past(api: httpx.Client) -> None:
    q = ("MATCH (:Team {ceid: 'team:commerce'})-[r:PRIMARY_OWNER]->(s:Service {ceid: "
         "'service:checkout'}) RETURN count(r) AS n")
    past = api.post("/cypher", json={"query": q + " AT('2026-09-01T00:00:00Z')"}).json()
    now = api.post("/cypher", json={"query": q}).json()
    assert past["rows"] == [[1]] and past["pinned"] is True
    assert now["rows"] == [[0]]


def test_reserved_parameters_and_bad_bodies(api: httpx.Client) -> None:
    r = api.post("/cypher", json={"query": "RETURN $__v", "params": {"__v": 1}})
    assert r.status_code == 400
    assert api.post("/cypher", content=b"{not json",
                    headers={"content-type": "application/json"}).status_code == 400
    assert api.post("/cypher", content=b"{not json").status_code == 415
    assert api.post("/cypher", json={"query": 12}).status_code == 400
    assert api.post("/cypher", json={"query": "RETURN 1", "bogus": 1}).status_code == 400
