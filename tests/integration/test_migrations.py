"""Migrations against the real Neo4j and PostgreSQL: clean ledgers, idempotence, tamper
detection, failing migrations left unrecorded, and the lock that keeps concurrent runs apart.

Tests that must record a migration use a separate test ledger (``Ledger``) and a temporary
migrations root, so the real ledgers never see a test version."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from neo4j import Driver

from substrate.errors import MigrationError
from substrate.migrate import LOCK_KEY, MIGRATIONS_DIR, Ledger, Migrator, Target
from substrate.settings import PROJECT_ROOT, Settings
from substrate.stack.up import up

pytestmark = pytest.mark.integration

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
TEST_LEDGER = Ledger(label="__MigrationTest", table="substrate_test_schema_history")
MARKER = "SubstrateMigrationTest"  # label of the nodes test migrations create
PG_TABLE = "substrate_test_migration_rows"  # table test migrations create


def _clean(driver: Driver, settings: Settings) -> None:
    driver.execute_query(f"MATCH (n:{TEST_LEDGER.label}) DETACH DELETE n")
    driver.execute_query(f"MATCH (n:{MARKER}) DETACH DELETE n")
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TEST_LEDGER.table}")
        conn.execute(f"DROP TABLE IF EXISTS {PG_TABLE}")
        conn.execute("DROP TABLE IF EXISTS substrate_test_broken")


@pytest.fixture
def clean(driver: Driver, stack: Settings) -> Iterator[None]:
    _clean(driver, stack)
    try:
        yield
    finally:
        _clean(driver, stack)


def write_root(tmp_path: Path, files: dict[str, str]) -> Path:
    """A migrations root holding only ``files`` ({"neo4j/V0001__X.cypher": text, ...})."""
    root = tmp_path / "migrations"
    for target in ("neo4j", "postgres"):
        (root / target).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


def copy_real_root(tmp_path: Path) -> Path:
    root = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, root)
    return root


def marker_count(driver: Driver) -> int:
    records, _, _ = driver.execute_query(f"MATCH (n:{MARKER}) RETURN count(n) AS n")
    return int(records[0]["n"])


def pg_rows(settings: Settings) -> int:
    with psycopg.connect(settings.postgres_dsn) as conn:
        row = conn.execute(f"SELECT count(*) FROM {PG_TABLE}").fetchone()
    assert row is not None
    return int(row[0])


def pg_ledger_versions(settings: Settings, table: str) -> list[int]:
    with psycopg.connect(settings.postgres_dsn) as conn:
        return [r[0] for r in conn.execute(f"SELECT version FROM {table} ORDER BY version")]


# --- the real ledgers ---------------------------------------------------------------------
def test_migrate_verify_is_clean_on_the_real_ledgers(stack: Settings) -> None:
    result = subprocess.run(
        [str(CLI), "migrate", "verify"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for target in ("neo4j", "postgres"):
        files = sorted(p.name for p in (MIGRATIONS_DIR / target).iterdir())
        assert report[target]["tampered"] == []
        assert report[target]["pending"] == []
        assert len(report[target]["applied"]) == len(files)
        for applied, name in zip(report[target]["applied"], files, strict=True):
            digest = hashlib.sha256((MIGRATIONS_DIR / target / name).read_bytes()).hexdigest()
            assert applied["checksum"] == digest
            assert applied["applied_at"] and applied["duration_ms"] >= 0


def test_real_neo4j_ledger_is_one_chain_in_version_order(driver: Driver) -> None:
    records, _, _ = driver.execute_query(
        "MATCH (m:__Migration) WHERE NOT ()-[:NEXT]->(m) "
        "MATCH path = (m)-[:NEXT*0..]->(last:__Migration) WHERE NOT (last)-[:NEXT]->() "
        "RETURN [n IN nodes(path) | n.version] AS versions"
    )
    assert len(records) == 1  # one head, one tail
    versions = records[0]["versions"]
    assert versions == sorted(versions) == list(range(1, len(versions) + 1))


def test_applying_twice_is_a_no_op_on_the_real_ledgers(driver: Driver, stack: Settings) -> None:
    migrator = Migrator(stack, driver)
    before = {t: migrator.applied(t) for t in ("neo4j", "postgres")}
    assert migrator.up("neo4j") == []
    assert migrator.up("postgres") == []
    assert {t: migrator.applied(t) for t in ("neo4j", "postgres")} == before


def test_initial_schema_is_in_place(driver: Driver, stack: Settings) -> None:
    records, _, _ = driver.execute_query(
        "SHOW INDEXES YIELD name, type, state, options RETURN name, type, state, options"
    )
    indexes = {r["name"]: r for r in records}
    for name in ("entity_embedding", "chunk_embedding"):
        assert indexes[name]["type"] == "VECTOR"
        assert indexes[name]["state"] == "ONLINE"
        dims = indexes[name]["options"]["indexConfig"]["vector.dimensions"]
        assert dims == stack.embedding_dim  # dimensions come from configuration
    for name in ("entity_names", "entity_text", "chunk_text"):
        assert indexes[name]["type"] == "FULLTEXT"
    records, _, _ = driver.execute_query("SHOW CONSTRAINTS YIELD name RETURN collect(name) AS n")
    assert {"migration_version", "entity_ceid", "service_ceid"} <= set(records[0]["n"])
    with psycopg.connect(stack.postgres_dsn) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )}
    assert {"snapshots", "community_summaries", "substrate_schema_history"} <= tables


# --- idempotence with a test ledger -------------------------------------------------------
def test_a_new_migration_is_applied_once_and_chained(
    driver: Driver, stack: Settings, clean: None, tmp_path: Path
) -> None:
    root = write_root(tmp_path, {
        "neo4j/V0001__First_marker.cypher":
            f"// test migration\nCREATE (:{MARKER} {{step: 1}});\n",
        "postgres/V0001__Marker_table.sql":
            f"-- test migration\nCREATE TABLE {PG_TABLE} (id integer);\n"
            f"INSERT INTO {PG_TABLE} VALUES (1);\n",
    })
    migrator = Migrator(stack, driver, root=root, ledger=TEST_LEDGER)
    assert migrator.up("neo4j") == ["V0001__First_marker.cypher"]
    assert migrator.up("postgres") == ["V0001__Marker_table.sql"]
    assert migrator.up("neo4j") == []
    assert migrator.up("postgres") == []
    assert marker_count(driver) == 1  # CREATE ran once, not twice
    assert pg_rows(stack) == 1

    (root / "neo4j" / "V0002__Second_marker.cypher").write_text(
        f"CREATE (:{MARKER} {{step: 2}});\n"
    )
    assert migrator.up("neo4j") == ["V0002__Second_marker.cypher"]
    assert marker_count(driver) == 2
    applied = migrator.applied("neo4j")
    assert [a.version for a in applied] == [1, 2]
    assert applied[1].checksum == hashlib.sha256(
        (root / "neo4j" / "V0002__Second_marker.cypher").read_bytes()
    ).hexdigest()
    assert applied[1].description == "Second marker"
    records, _, _ = driver.execute_query(
        f"MATCH (a:{TEST_LEDGER.label} {{version: 1}})-[:NEXT]->(b:{TEST_LEDGER.label}) "
        "RETURN b.version AS v"
    )
    assert [r["v"] for r in records] == [2]
    assert pg_ledger_versions(stack, TEST_LEDGER.table) == [1]
    # the real ledgers did not see any of it
    real = Migrator(stack, driver)
    assert all(a.description != "First marker" for a in real.applied("neo4j"))


def test_ledger_names_are_validated() -> None:
    for bad in ({"label": "x) DETACH DELETE (y"}, {"table": "history; DROP TABLE snapshots"},
                {"table": "History"}):
        with pytest.raises(MigrationError):
            Ledger(**bad)


# --- tamper detection ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "file_name"),
    [("neo4j", "V0002__Indexes.cypher"), ("postgres", "V0001__Snapshots_and_change_log.sql")],
)
def test_a_changed_applied_file_is_refused(
    driver: Driver, stack: Settings, tmp_path: Path, target: Target, file_name: str
) -> None:
    root = copy_real_root(tmp_path)
    migrator = Migrator(stack, driver, root=root)
    assert migrator.verify(target).tampered == []
    with (root / target / file_name).open("a") as fh:
        fh.write("\n-- an innocent-looking edit\n" if target == "postgres" else "\n// edit\n")
    assert migrator.state(target).tampered == [file_name]
    with pytest.raises(MigrationError) as verify_info:
        migrator.verify(target)
    assert file_name in verify_info.value.message
    assert verify_info.value.detail["tampered"] == [file_name]
    before = migrator.applied(target)
    with pytest.raises(MigrationError) as up_info:
        migrator.up(target)
    assert file_name in up_info.value.message
    assert migrator.applied(target) == before


# --- failing migrations -------------------------------------------------------------------
def test_failing_neo4j_migration_is_not_recorded(
    driver: Driver, stack: Settings, tmp_path: Path
) -> None:
    root = copy_real_root(tmp_path)
    bad = "MATCH (n:SubstrateTestBroken) RETURN n.x +"
    (root / "neo4j" / "V9001__Broken.cypher").write_text(f"RETURN 1;\n{bad};\n")
    migrator = Migrator(stack, driver, root=root)
    with pytest.raises(MigrationError) as info:
        migrator.up("neo4j")
    assert "V9001__Broken.cypher" in info.value.message
    assert info.value.detail["statement"] == bad
    assert info.value.detail["error"]
    assert 9001 not in [a.version for a in migrator.applied("neo4j")]
    assert [m.version for m in migrator.state("neo4j").pending] == [9001]
    Migrator(stack, driver).verify("neo4j")  # the real ledger is untouched and clean


def test_failing_postgres_migration_is_rolled_back(
    driver: Driver, stack: Settings, tmp_path: Path, clean: None
) -> None:
    root = copy_real_root(tmp_path)
    bad = "INSERT INTO substrate_test_no_such_table VALUES (1)"
    (root / "postgres" / "V9001__Broken.sql").write_text(
        "CREATE TABLE substrate_test_broken (id integer);\n"
        "INSERT INTO substrate_test_broken VALUES (1);\n"
        f"{bad};\n"
    )
    migrator = Migrator(stack, driver, root=root)
    with pytest.raises(MigrationError) as info:
        migrator.up("postgres")
    assert "V9001__Broken.sql" in info.value.message
    assert info.value.detail["statement"] == bad
    assert "substrate_test_no_such_table" in info.value.detail["error"]
    assert 9001 not in pg_ledger_versions(stack, "substrate_schema_history")
    with psycopg.connect(stack.postgres_dsn) as conn:
        row = conn.execute("SELECT to_regclass('substrate_test_broken')").fetchone()
    assert row == (None,)  # the earlier statements of the file were rolled back too


# --- the lock -----------------------------------------------------------------------------
@pytest.fixture
def held_lock(stack: Settings) -> Iterator[None]:
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


def test_up_refuses_while_another_run_holds_the_lock(
    driver: Driver, stack: Settings, held_lock: None
) -> None:
    with pytest.raises(MigrationError, match="another `migrate up` is running"):
        Migrator(stack, driver).up("neo4j")
    with pytest.raises(MigrationError, match="advisory lock held"):
        up(stack, demo=False, gateway=False, progress=lambda _m: None)


@pytest.mark.parametrize("target", ["neo4j", "postgres"])
def test_two_concurrent_runs_never_both_apply(
    driver: Driver, stack: Settings, clean: None, tmp_path: Path, target: Target
) -> None:
    slow = {  # long enough for the two runs to overlap
        "neo4j": ("neo4j/V0001__Slow.cypher",
                  f"CALL apoc.util.sleep(1500);\nCREATE (:{MARKER} {{step: 1}});\n"),
        "postgres": ("postgres/V0001__Slow.sql",
                     f"SELECT pg_sleep(1.5);\nCREATE TABLE {PG_TABLE} (id integer);\n"
                     f"INSERT INTO {PG_TABLE} VALUES (1);\n"),
    }[target]
    root = write_root(tmp_path, dict([slow]))
    Migrator(stack, driver, root=root, ledger=TEST_LEDGER).applied(target)  # create the ledger
    barrier = threading.Barrier(2)
    results: list[list[str] | MigrationError] = []

    def run() -> None:
        migrator = Migrator(stack, driver, root=root, ledger=TEST_LEDGER)
        barrier.wait()
        try:
            results.append(migrator.up(target))
        except MigrationError as exc:
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    applied = [r for r in results if isinstance(r, list) and r]
    refused = [r for r in results if isinstance(r, MigrationError)]
    assert len(results) == 2
    assert applied == [[Path(slow[0]).name]]
    assert len(refused) == 1 and "another `migrate up` is running" in refused[0].message
    if target == "neo4j":
        assert marker_count(driver) == 1
    else:
        assert pg_rows(stack) == 1
    assert [a.version for a in Migrator(stack, driver, ledger=TEST_LEDGER).applied(target)] == [1]
