"""Each data part answers for real: Neo4j with APOC + GDS and its vector / full-text indexes,
PostgreSQL with an HNSW pgvector index, Redis, and NATS JetStream with a durable consumer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import nats
import psycopg
import pytest
import redis
from graphdatascience import GraphDataScience
from neo4j import Driver

from substrate.settings import Settings

pytestmark = pytest.mark.integration


# --- Neo4j plugins ------------------------------------------------------------------------
def test_apoc_and_gds_versions_answer(driver: Driver) -> None:
    records, _, _ = driver.execute_query(
        "CALL dbms.components() YIELD name, versions WHERE name = 'Neo4j Kernel' "
        "RETURN versions[0] AS neo4j, apoc.version() AS apoc, gds.version() AS gds"
    )
    row = records[0]
    assert row["neo4j"].startswith("5.26.")
    assert row["apoc"].startswith("5.26.")
    assert row["gds"].startswith("2.13.")


def test_bolt_keep_alive_only_while_streaming(driver: Driver) -> None:
    """No ``connection.recv_timeout_seconds`` hint (sent only for ALL), which would make the
    gateway's async driver wrap every socket read in a task and a timer."""
    records, _, _ = driver.execute_query(
        "SHOW SETTINGS YIELD name, value "
        "WHERE name = 'server.bolt.connection_keep_alive_for_requests' RETURN value")
    assert [r["value"] for r in records] == ["STREAMING"]


@pytest.fixture
def gds(stack: Settings) -> Iterator[GraphDataScience]:
    client = GraphDataScience(stack.neo4j_uri, auth=(stack.neo4j_user, stack.neo4j_password))
    try:
        yield client
    finally:
        client.close()


def test_gds_pagerank_on_a_three_node_graph(gds: GraphDataScience) -> None:
    assert gds.server_version().major == 2  # the Python client talks to the GDS 2.x plugin
    label, graph_name = "SubstrateTestPageRank", f"substrate_test_pr_{uuid.uuid4().hex[:8]}"
    gds.run_cypher(f"MATCH (n:{label}) DETACH DELETE n")
    # a and b both point at c; c points back at a: c ranks first, a second, b last
    gds.run_cypher(
        f"CREATE (a:{label} {{name: 'a'}}), (b:{label} {{name: 'b'}}), (c:{label} {{name: 'c'}}),"
        " (a)-[:LINKS]->(c), (b)-[:LINKS]->(c), (c)-[:LINKS]->(a)"
    )
    try:
        projected = gds.run_cypher(
            f"MATCH (s:{label}) OPTIONAL MATCH (s)-[:LINKS]->(t:{label}) "
            "WITH gds.graph.project($graph, s, t) AS g "
            "RETURN g.nodeCount AS nodes, g.relationshipCount AS rels",
            params={"graph": graph_name},
        )
        assert (int(projected["nodes"][0]), int(projected["rels"][0])) == (3, 3)
        graph = gds.graph.get(graph_name)
        try:
            scores = gds.page_rank.stream(graph, log_progress=False)
            ranked = scores.sort_values("score", ascending=False)
            names = [gds.util.as_node(int(node_id))["name"] for node_id in ranked["nodeId"]]
            assert names == ["c", "a", "b"]
            assert ranked["score"].iloc[0] > ranked["score"].iloc[1] > ranked["score"].iloc[2]
        finally:
            gds.graph.drop(graph)
        assert not gds.graph.exists(graph_name)
    finally:
        gds.run_cypher(f"MATCH (n:{label}) DETACH DELETE n")


# --- Neo4j indexes ------------------------------------------------------------------------
VEC_LABEL, VEC_INDEX = "SubstrateTestVector", "substrate_test_vector"
FT_LABEL, FT_INDEX = "SubstrateTestFulltext", "substrate_test_fulltext"


@pytest.fixture
def vector_index(driver: Driver) -> Iterator[str]:
    driver.execute_query(f"MATCH (n:{VEC_LABEL}) DETACH DELETE n")
    driver.execute_query(
        f"CREATE VECTOR INDEX {VEC_INDEX} IF NOT EXISTS FOR (n:{VEC_LABEL}) ON n.embedding "
        "OPTIONS {indexConfig: {`vector.dimensions`: 3, "
        "`vector.similarity_function`: 'euclidean'}}"
    )
    try:
        yield VEC_INDEX
    finally:
        driver.execute_query(f"MATCH (n:{VEC_LABEL}) DETACH DELETE n")
        driver.execute_query(f"DROP INDEX {VEC_INDEX} IF EXISTS")


def test_vector_index_returns_the_nearest_vector(driver: Driver, vector_index: str) -> None:
    driver.execute_query(
        f"UNWIND $rows AS row CREATE (n:{VEC_LABEL} {{name: row.name}}) "
        "WITH n, row CALL db.create.setNodeVectorProperty(n, 'embedding', row.v)",
        rows=[
            {"name": "x", "v": [1.0, 0.0, 0.0]},
            {"name": "y", "v": [0.0, 1.0, 0.0]},
            {"name": "z", "v": [0.0, 0.0, 1.0]},
            {"name": "xy", "v": [0.7, 0.7, 0.0]},
        ],
    )
    driver.execute_query("CALL db.awaitIndexes(120)")
    records, _, _ = driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, state WHERE name = $name RETURN state", name=vector_index
    )
    assert records[0]["state"] == "ONLINE"
    records, _, _ = driver.execute_query(
        "CALL db.index.vector.queryNodes($index, 2, $q) YIELD node, score "
        "RETURN node.name AS name, score ORDER BY score DESC",
        index=vector_index, q=[0.1, 0.95, 0.05],
    )
    assert [r["name"] for r in records] == ["y", "xy"]
    assert records[0]["score"] > records[1]["score"]


@pytest.fixture
def fulltext_index(driver: Driver) -> Iterator[str]:
    driver.execute_query(f"MATCH (n:{FT_LABEL}) DETACH DELETE n")
    driver.execute_query(
        f"CREATE FULLTEXT INDEX {FT_INDEX} IF NOT EXISTS "
        f"FOR (n:{FT_LABEL}) ON EACH [n.name, n.text]"
    )
    try:
        yield FT_INDEX
    finally:
        driver.execute_query(f"MATCH (n:{FT_LABEL}) DETACH DELETE n")
        driver.execute_query(f"DROP INDEX {FT_INDEX} IF EXISTS")


def test_fulltext_query_matches(driver: Driver, fulltext_index: str) -> None:
    driver.execute_query(
        f"UNWIND $rows AS row CREATE (:{FT_LABEL} {{name: row.name, text: row.text}})",
        rows=[
            {"name": "payments-api", "text": "Charges cards and refunds payments."},
            {"name": "ledger", "text": "Double-entry bookkeeping for every account."},
            {"name": "search", "text": "Indexes product catalogues."},
        ],
    )
    driver.execute_query("CALL db.awaitIndexes(120)")
    records, _, _ = driver.execute_query(
        "CALL db.index.fulltext.queryNodes($index, $q) YIELD node, score "
        "RETURN node.name AS name, score ORDER BY score DESC",
        index=fulltext_index, q="refunds OR bookkeeping~",
    )
    assert {r["name"] for r in records} == {"payments-api", "ledger"}
    records, _, _ = driver.execute_query(
        "CALL db.index.fulltext.queryNodes($index, $q) YIELD node RETURN node.name AS name",
        index=fulltext_index, q="catalog*",
    )
    assert [r["name"] for r in records] == ["search"]


# --- PostgreSQL + pgvector ---------------------------------------------------------------
def test_pgvector_hnsw_index_returns_the_nearest_row(pg: psycopg.Connection) -> None:
    with pg.transaction():
        pg.execute("CREATE EXTENSION IF NOT EXISTS vector")
        pg.execute(
            "CREATE TEMP TABLE substrate_test_items (id text PRIMARY KEY, embedding vector(3))"
        )
        pg.execute(
            "CREATE INDEX substrate_test_items_hnsw ON substrate_test_items "
            "USING hnsw (embedding vector_l2_ops)"
        )
        pg.execute(
            "INSERT INTO substrate_test_items VALUES "
            "('x', '[1,0,0]'), ('y', '[0,1,0]'), ('z', '[0,0,1]'), ('far', '[9,9,9]')"
        )
        pg.execute("SET LOCAL enable_seqscan = off")  # a 4-row table: make the planner use HNSW
        query = "SELECT id FROM substrate_test_items ORDER BY embedding <-> %s::vector LIMIT 1"
        plan = "\n".join(r[0] for r in pg.execute("EXPLAIN " + query, ("[0.1,0.9,0.2]",)))
        assert "substrate_test_items_hnsw" in plan
        row = pg.execute(query, ("[0.1,0.9,0.2]",)).fetchone()
        assert row is not None and row[0] == "y"
        row = pg.execute(query, ("[0.2,0.1,0.95]",)).fetchone()
        assert row is not None and row[0] == "z"
    pg.execute("DROP TABLE IF EXISTS substrate_test_items")


# --- Redis --------------------------------------------------------------------------------
def test_redis_set_get(stack: Settings) -> None:
    client = redis.Redis.from_url(stack.redis_url, socket_timeout=5)
    key = f"substrate:test:{uuid.uuid4().hex}"
    try:
        assert client.set(key, "hello", ex=60)
        assert client.get(key) == b"hello"
        assert 0 < client.ttl(key) <= 60
    finally:
        client.delete(key)
        client.close()
    assert client.get(key) is None


# --- NATS JetStream -----------------------------------------------------------------------
async def _durable_consumer_gets_earlier_message(url: str) -> list[bytes]:
    suffix = uuid.uuid4().hex[:8]
    stream, subject, durable = (
        f"SUBSTRATE_TEST_{suffix}", f"substrate.test.{suffix}", f"substrate_test_{suffix}"
    )
    nc = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        await js.add_stream(name=stream, subjects=[subject])
        try:
            ack = await js.publish(subject, b"published before the consumer existed")
            assert ack.stream == stream and ack.seq == 1
            # only now does the durable consumer come into being
            sub = await js.pull_subscribe(subject, durable=durable, stream=stream)
            msgs = await sub.fetch(1, timeout=5)
            for msg in msgs:
                await msg.ack_sync()
            info = await js.consumer_info(stream, durable)
            assert info.config.durable_name == durable
            assert info.num_ack_pending == 0
            await sub.unsubscribe()
            return [m.data for m in msgs]
        finally:
            await js.delete_stream(stream)
    finally:
        await nc.close()


def test_nats_durable_consumer_receives_message_published_before_it(stack: Settings) -> None:
    data = asyncio.run(_durable_consumer_gets_earlier_message(stack.nats_url))
    assert data == [b"published before the consumer existed"]
