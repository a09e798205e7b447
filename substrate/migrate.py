"""DBA-style migrations for Neo4j and PostgreSQL (in the manner of neo4j-migrations / Flyway).

Files: ``migrations/neo4j/V0001__Description.cypher`` and ``migrations/postgres/V0001__x.sql``;
a ``.j2`` suffix renders the file with Jinja2 (StrictUndefined) from configuration values
(only ``embedding_dim`` today). The checksum is taken over the file as written, so changing the
embedder's dimensions is a new migration, never an edit of an applied one.

Ledgers: Neo4j holds one ``:__Migration`` node per applied version chained by ``:NEXT``;
PostgreSQL holds the ``substrate_schema_history`` table. Both record version, description,
checksum, applied_at and duration. Concurrent runs serialise on a PostgreSQL advisory lock.
A ``Ledger`` with another label / table keeps a separate ledger (the tests use one).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jinja2
import psycopg
from neo4j import Driver
from psycopg import sql

from substrate.cypher import CypherLibrary
from substrate.errors import MigrationError
from substrate.settings import PROJECT_ROOT, Settings

Target = Literal["neo4j", "postgres"]
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
_NAME = re.compile(r"^V(\d{4,})__([A-Za-z0-9_]+)\.(cypher|sql)(\.j2)?$")
LOCK_KEY = 0x5B57_0001  # advisory lock id shared by every `migrate up`
_LEDGER_LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LEDGER_TABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class Ledger:
    """Where applied migrations are recorded: a Neo4j label and a PostgreSQL table."""

    label: str = "__Migration"
    table: str = "substrate_schema_history"

    def __post_init__(self) -> None:
        if not _LEDGER_LABEL.match(self.label):
            raise MigrationError(f"bad Neo4j ledger label {self.label!r}")
        if not _LEDGER_TABLE.match(self.table):
            raise MigrationError(f"bad PostgreSQL ledger table {self.table!r}")


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    path: Path
    checksum: str

    def render(self, settings: Settings) -> str:
        text = self.path.read_text()
        if self.path.suffix != ".j2":
            return text
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
        return env.from_string(text).render(embedding_dim=int(settings.embedding_dim))


@dataclass(frozen=True)
class Applied:
    version: int
    description: str
    checksum: str
    applied_at: str
    duration_ms: int


@dataclass(frozen=True)
class MigrationState:
    target: Target
    applied: list[Applied]
    pending: list[Migration]
    tampered: list[str]  # file names whose checksum differs from the ledger

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "applied": [a.__dict__ for a in self.applied],
            "pending": [m.path.name for m in self.pending],
            "tampered": self.tampered,
        }


def discover(target: Target, root: Path = MIGRATIONS_DIR) -> list[Migration]:
    found: dict[int, Migration] = {}
    for path in sorted((root / target).iterdir()):
        m = _NAME.match(path.name)
        if not m:
            raise MigrationError(f"badly named migration file {path} (want V0001__Name.ext)")
        version = int(m.group(1))
        if version in found:
            raise MigrationError(f"two migrations with version {version}: {path.name}")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        found[version] = Migration(version, m.group(2).replace("_", " "), path, digest)
    return [found[v] for v in sorted(found)]


def split_statements(script: str) -> list[str]:
    """Split a script on ``;`` at line ends, ignoring ``//`` and ``--`` comment lines."""
    statements, current = [], []
    for line in script.splitlines():
        if line.strip().startswith(("//", "--")):
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            statements.append("\n".join(current).strip().rstrip(";").strip())
            current = []
    tail = "\n".join(current).strip()
    if tail:
        statements.append(tail)
    return [s for s in statements if s]


class Migrator:
    """Reads ledgers and applies pending migrations for one or both databases."""

    def __init__(
        self, settings: Settings, driver: Driver, root: Path = MIGRATIONS_DIR,
        ledger: Ledger | None = None,
    ) -> None:
        self.settings = settings
        self.driver = driver
        self.root = root
        self.ledger = ledger or Ledger()
        self.cypher = CypherLibrary.load()

    # --- ledgers ------------------------------------------------------------------------
    def applied(self, target: Target) -> list[Applied]:
        if target == "neo4j":
            records, _, _ = self.driver.execute_query(
                self.cypher.text("migrations/ledger", label=self.ledger.label)
            )
            return [Applied(**r.data()) for r in records]
        with psycopg.connect(self.settings.postgres_dsn) as conn:
            conn.execute(self._pg(_PG_LEDGER_DDL))
            rows = conn.execute(self._pg(_PG_LEDGER_SELECT)).fetchall()
        return [Applied(int(r[0]), r[1], r[2], r[3].isoformat(), int(r[4])) for r in rows]

    def state(self, target: Target) -> MigrationState:
        files = discover(target, self.root)
        applied = self.applied(target)
        by_version = {m.version: m for m in files}
        done = {a.version for a in applied}
        tampered = [
            by_version[a.version].path.name
            for a in applied
            if a.version in by_version and by_version[a.version].checksum != a.checksum
        ]
        pending = [m for m in files if m.version not in done]
        return MigrationState(target, applied, pending, tampered)

    def verify(self, target: Target) -> MigrationState:
        state = self.state(target)
        if state.tampered:
            raise MigrationError(
                f"{target}: applied migration(s) changed on disk: {', '.join(state.tampered)}; "
                "applied files must never change — restore them and add a new migration",
                state.to_dict(),
            )
        return state

    # --- apply --------------------------------------------------------------------------
    def up(self, target: Target) -> list[str]:
        with self._lock():
            state = self.verify(target)
            names = []
            for migration in state.pending:
                started = time.monotonic()
                if target == "neo4j":
                    self._apply_neo4j(migration)
                else:
                    self._apply_postgres(migration, started)
                names.append(migration.path.name)
            return names

    def _apply_neo4j(self, migration: Migration) -> None:
        started = time.monotonic()
        for statement in split_statements(migration.render(self.settings)):
            try:
                self.driver.execute_query(statement)
            except Exception as exc:  # noqa: BLE001 - report the failing statement
                raise MigrationError(
                    f"neo4j migration {migration.path.name} failed; not recorded",
                    {"statement": statement, "error": str(exc)},
                ) from exc
        self.driver.execute_query(
            self.cypher.text("migrations/record", label=self.ledger.label),
            version=migration.version,
            description=migration.description,
            checksum=migration.checksum,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def _apply_postgres(self, migration: Migration, started: float) -> None:
        script = migration.render(self.settings)
        with psycopg.connect(self.settings.postgres_dsn) as conn:
            try:
                with conn.transaction():
                    for statement in split_statements(script):
                        try:
                            conn.execute(statement.encode())
                        except psycopg.Error as exc:
                            raise MigrationError(
                                f"postgres migration {migration.path.name} failed; rolled back",
                                {"statement": statement, "error": str(exc).strip()},
                            ) from exc
                    conn.execute(
                        self._pg(_PG_LEDGER_INSERT),
                        (migration.version, migration.description, migration.checksum,
                         int((time.monotonic() - started) * 1000)),
                    )
            except MigrationError:
                raise

    def _pg(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(table=sql.Identifier(self.ledger.table))

    @contextmanager
    def _lock(self) -> Iterator[None]:
        with psycopg.connect(self.settings.postgres_dsn, autocommit=True) as conn:
            got = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
            if not got or not got[0]:
                raise MigrationError(
                    "another `migrate up` is running (advisory lock held); try again later"
                )
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


_PG_LEDGER_DDL = """
CREATE TABLE IF NOT EXISTS {table} (
  version integer PRIMARY KEY,
  description text NOT NULL,
  checksum text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  duration_ms integer NOT NULL
)"""
_PG_LEDGER_SELECT = (
    "SELECT version, description, checksum, applied_at, duration_ms "
    "FROM {table} ORDER BY version"
)
_PG_LEDGER_INSERT = (
    "INSERT INTO {table} (version, description, checksum, duration_ms) "
    "VALUES (%s, %s, %s, %s)"
)
