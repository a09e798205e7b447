"""Migration files on disk: naming rules, duplicate versions, statement splitting, rendering."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from substrate.errors import MigrationError
from substrate.migrate import MIGRATIONS_DIR, Ledger, Target, discover, split_statements
from substrate.settings import Settings


def root_with(tmp_path: Path, target: str, *names: str) -> Path:
    (tmp_path / target).mkdir(parents=True)
    for name in names:
        (tmp_path / target / name).write_text(f"// {name}\nRETURN 1;\n")
    return tmp_path


def test_discover_orders_by_version_and_reads_names(tmp_path: Path) -> None:
    root = root_with(
        tmp_path, "neo4j",
        "V0010__Tenth.cypher", "V0002__Second_one.cypher", "V10000__Big.cypher.j2",
        "V0001__First.cypher",
    )
    found = discover("neo4j", root)
    assert [m.version for m in found] == [1, 2, 10, 10000]
    assert [m.description for m in found] == ["First", "Second one", "Tenth", "Big"]
    first = found[0]
    assert first.checksum == hashlib.sha256(first.path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "name",
    [
        "V1__Too_short.cypher",  # at least four digits
        "V0001_One_underscore.cypher",
        "V0001__Has-dash.cypher",
        "0001__No_prefix.cypher",
        "V0001__Wrong_ext.txt",
        "V0001__Name.cypher.bak",
        "README.md",
    ],
)
def test_badly_named_files_are_refused(tmp_path: Path, name: str) -> None:
    root = root_with(tmp_path, "neo4j", "V0001__Fine.cypher")
    (root / "neo4j" / name).write_text("RETURN 1;")
    with pytest.raises(MigrationError, match="badly named migration file"):
        discover("neo4j", root)


def test_duplicate_versions_are_refused(tmp_path: Path) -> None:
    root = root_with(tmp_path, "postgres", "V0003__A.sql", "V00003__B.sql")
    with pytest.raises(MigrationError, match="two migrations with version 3"):
        discover("postgres", root)


def test_the_project_migrations_are_numbered_from_one_without_gaps() -> None:
    targets: tuple[Target, ...] = ("neo4j", "postgres")
    for target in targets:
        versions = [m.version for m in discover(target, MIGRATIONS_DIR)]
        assert versions == list(range(1, len(versions) + 1))


def test_j2_migrations_render_embedding_dim_from_settings() -> None:
    settings = Settings.from_env({"EMBEDDING_DIM": "768"})
    vector = next(m for m in discover("neo4j", MIGRATIONS_DIR) if m.path.suffix == ".j2")
    text = vector.render(settings)
    assert "`vector.dimensions`: 768" in text and "{{" not in text
    plain = discover("neo4j", MIGRATIONS_DIR)[0]
    assert plain.render(settings) == plain.path.read_text()


def test_split_statements() -> None:
    script = """\
// a Cypher comment; with a semicolon;
CREATE CONSTRAINT a IF NOT EXISTS
FOR (n:A) REQUIRE n.id IS UNIQUE;
-- an SQL comment;
RETURN 'a;b' AS s;

;
MATCH (n) RETURN n"""
    assert split_statements(script) == [
        "CREATE CONSTRAINT a IF NOT EXISTS\nFOR (n:A) REQUIRE n.id IS UNIQUE",
        "RETURN 'a;b' AS s",
        "MATCH (n) RETURN n",  # a last statement without ';' is kept
    ]
    assert split_statements("// only comments\n-- here\n\n") == []
    assert split_statements("SELECT 1;   \nSELECT 2 ;\n") == ["SELECT 1", "SELECT 2"]


def test_ledger_defaults_and_validation() -> None:
    assert Ledger() == Ledger("__Migration", "substrate_schema_history")
    Ledger("__MigrationTest", "substrate_test_history")
    for label, table in (("9bad", "t"), ("a b", "t"), ("ok", "Upper"), ("ok", "x;drop")):
        with pytest.raises(MigrationError):
            Ledger(label, table)
