"""Migrations neo4j V0006 and postgres V0015/V0016: a password inside a key=value connection
string, stored as written before the connectors masked it, is masked in the graph (an entity's
``env``, an edge's ``address``), in the change log, the verification queue and the write
intents; run twice, nothing more changes."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import psycopg
import pytest
from neo4j import Driver

from substrate.migrate import MIGRATIONS_DIR, split_statements

RAW = "Server=sqldata;Database=CatalogDb;User Id=sa;Password=Pass@word;Encrypt=False"
MASKED = "Server=sqldata;Database=CatalogDb;User Id=sa;Password=***;Encrypt=False"


@pytest.fixture
def tenant(driver: Driver, pg: psycopg.Connection) -> Iterator[str]:
    name = f"t-mask-{secrets.token_hex(4)}"
    yield name
    driver.execute_query("MATCH (n:Entity {tenant_id: $t}) DETACH DELETE n", t=name)
    pg.execute("DELETE FROM change_log WHERE tenant_id = %s", (name,))
    pg.commit()


def _run(driver: Driver, pg: psycopg.Connection) -> None:
    neo4j = (MIGRATIONS_DIR / "neo4j" / "V0006__Mask_connection_string_passwords.cypher")
    for statement in split_statements(neo4j.read_text()):
        driver.execute_query(statement)
    sql = MIGRATIONS_DIR / "postgres" / "V0015__Mask_connection_string_passwords.sql"
    for statement in split_statements(sql.read_text()):
        pg.execute(statement.encode())  # a file, not a literal: bytes
    pg.commit()


def test_stored_connection_string_passwords_are_masked(driver: Driver, pg: psycopg.Connection,
                                                       tenant: str) -> None:
    driver.execute_query(
        "CREATE (a:Entity:Service {tenant_id: $t, ceid: 'service:catalog-api', "
        "  env: ['ConnectionStrings__CatalogDb=' + $raw, 'LOG_LEVEL=info']})"
        "-[:DEPENDS_ON {tenant_id: $t, address: $raw}]->"
        "(:Entity:Infrastructure {tenant_id: $t, ceid: 'infra:sqldata'})", t=tenant, raw=RAW)
    (version,) = pg.execute("SELECT max(version) FROM snapshots").fetchone() or (0,)
    after = {"props": {"env": [f"ConnectionStrings__CatalogDb={RAW}"]}}
    pg.execute("INSERT INTO change_log (snapshot_version, tenant_id, element_kind, element_id, "
               "op, before, after) VALUES (%s, %s, 'node', 'service:catalog-api', 'add', NULL, "
               "%s)", (version, tenant, json.dumps(after)))
    pg.commit()
    for _ in range(2):  # idempotent
        _run(driver, pg)
        records, _, _ = driver.execute_query(
            "MATCH (a:Entity {tenant_id: $t, ceid: 'service:catalog-api'})-[r]->() "
            "RETURN a.env AS env, r.address AS address", t=tenant)
        assert records[0]["env"] == [f"ConnectionStrings__CatalogDb={MASKED}", "LOG_LEVEL=info"]
        assert records[0]["address"] == MASKED
        row = pg.execute("SELECT before, after FROM change_log WHERE tenant_id = %s",
                         (tenant,)).fetchone()
        assert row is not None and row[0] is None
        assert row[1] == {"props": {"env": [f"ConnectionStrings__CatalogDb={MASKED}"]}}


def test_queued_and_interrupted_writes_are_masked_too(pg: psycopg.Connection,
                                                      tenant: str) -> None:
    """Postgres V0016: the verification queue, an interrupted intent's change rows and its
    change blob. Written and checked in one transaction, rolled back: the reconciler never
    sees the made-up intent."""
    sql = MIGRATIONS_DIR / "postgres" / "V0016__Mask_passwords_in_queue_and_intents.sql"
    other = RAW.replace("Pass@word", "0ther-secret")
    version = 9_000_000_000 + secrets.randbelow(1_000_000)
    blob = (f"{version}\t{tenant}\tnode\tservice:catalog-api\tadd\t\\N\t"
            + json.dumps({"props": {"env": [f"ConnectionStrings__CatalogDb={RAW}"]}})
            + "\n").encode()
    with pg.transaction(force_rollback=True):
        for raw in (RAW, other):  # the same pending edge, recorded with two passwords
            record = {"type": "DEPENDS_ON", "src": "service:catalog-api",
                      "dst": "infra:sqldata", "props": {"address": raw}}
            pg.execute("INSERT INTO verification_queue (tenant_id, kind, record, confidence, "
                       "reason, source) VALUES (%s, 'edge', %s, 0.5, 'fuzzy', 'git')",
                       (tenant, json.dumps(record)))
        pg.execute("INSERT INTO write_intents (version, tenant_id, valid_at, source, "
                   "content_hash, changed_nodes, changed_edges, changes) VALUES (%s, %s, now(), "
                   "'git', 'h', 1, 0, %s)", (version, tenant, blob))
        pg.execute("INSERT INTO write_intent_changes (intent_version, tenant_id, element_kind, "
                   "element_id, op, before, after) VALUES (%s, %s, 'edge', 'e1', 'add', NULL, "
                   "%s)", (version, tenant, json.dumps({"props": {"address": RAW}})))
        for _ in range(2):  # idempotent
            for statement in split_statements(sql.read_text()):
                pg.execute(statement.encode())
            records = [r[0] for r in pg.execute(
                "SELECT record FROM verification_queue WHERE tenant_id = %s", (tenant,))]
            assert [r["props"]["address"] for r in records] == [MASKED]
            (changes,) = pg.execute("SELECT changes FROM write_intents WHERE version = %s",
                                    (version,)).fetchone() or (None,)
            assert bytes(changes) == blob.replace(b"Pass@word", b"***")
            (after,) = pg.execute("SELECT after FROM write_intent_changes WHERE "
                                  "intent_version = %s", (version,)).fetchone() or (None,)
            assert after == {"props": {"address": MASKED}}
