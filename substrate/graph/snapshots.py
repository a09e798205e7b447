"""PostgreSQL side of a snapshot: the monotonic version, the change log, time -> version."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

SNAPSHOT_LOCK = 0x5B57_0002  # serialises writers so versions are gap-free and monotonic


class ChangeRow(NamedTuple):  # a tuple: a bulk ingest makes one per changed element
    kind: str  # node | edge
    element_id: str
    op: str  # add | update | close
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@contextmanager
def writers_lock(conn: psycopg.Connection[Any], wait: bool = True) -> Iterator[bool]:
    """Hold the writers' session lock on ``conn`` (an autocommit connection) for the whole
    write: intent, Neo4j transaction, snapshot. A crashed writer's session ends and frees it.
    ``wait=False``: do not wait, yield False when another writer holds it."""
    if wait:
        conn.execute("SELECT pg_advisory_lock(%s)", (SNAPSHOT_LOCK,))
    else:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (SNAPSHOT_LOCK,)).fetchone()
        if not (row and row[0]):
            yield False
            return
    try:
        yield True
    finally:
        if not conn.closed and not conn.broken:
            conn.execute("SELECT pg_advisory_unlock(%s)", (SNAPSHOT_LOCK,))


def next_version(conn: psycopg.Connection[Any]) -> int:
    """Under the writers' lock: the next version (after every snapshot and intent)."""
    row = conn.execute(
        "SELECT greatest((SELECT max(version) FROM snapshots), "
        "(SELECT max(version) FROM write_intents), 0) + 1"
    ).fetchone()
    assert row is not None
    return int(row[0])


def latest_version(conn: psycopg.Connection[Any], tenant: str | None = None) -> int:
    if tenant is None:
        row = conn.execute("SELECT coalesce(max(version), 0) FROM snapshots").fetchone()
    else:
        row = conn.execute(
            "SELECT coalesce(max(version), 0) FROM snapshots WHERE tenant_id = %s", (tenant,)
        ).fetchone()
    return int(row[0]) if row else 0


def version_at(conn: psycopg.Connection[Any], tenant: str, at: datetime) -> int | None:
    """The newest snapshot of the tenant whose real-world time is at or before ``at``."""
    row = conn.execute(
        "SELECT max(version) FROM snapshots WHERE tenant_id = %s AND valid_at <= %s",
        (tenant, at),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def snapshot_bounds(conn: psycopg.Connection[Any], tenant: str) -> tuple[datetime, datetime] | None:
    row = conn.execute(
        "SELECT min(valid_at), max(valid_at) FROM snapshots WHERE tenant_id = %s", (tenant,)
    ).fetchone()
    return None if row is None or row[0] is None else (row[0], row[1])


def unpublished(conn: psycopg.Connection[Any]) -> list[tuple[int, str]]:
    return [
        (int(r[0]), str(r[1]))
        for r in conn.execute(
            "SELECT version, tenant_id FROM snapshots WHERE NOT published ORDER BY version"
        ).fetchall()
    ]


def changed_ids(conn: psycopg.Connection[Any], version: int) -> list[str]:
    rows = conn.execute(
        "SELECT DISTINCT element_id FROM change_log WHERE snapshot_version = %s "
        "UNION SELECT DISTINCT x FROM change_log, "
        "LATERAL (VALUES (coalesce(after, before) ->> 'src'), "
        "(coalesce(after, before) ->> 'dst')) v(x) "
        "WHERE snapshot_version = %s AND element_kind = 'edge' AND x IS NOT NULL",
        (version, version),
    ).fetchall()
    return sorted(str(r[0]) for r in rows)


def bookmarks(conn: psycopg.Connection[Any], version: int) -> list[str]:
    """The Neo4j bookmarks of the write that made snapshot ``version`` (empty: unknown)."""
    row = conn.execute("SELECT neo4j_bookmarks FROM snapshots WHERE version = %s",
                       (version,)).fetchone()
    return [str(b) for b in row[0]] if row and row[0] else []


def mark_published(conn: psycopg.Connection[Any], version: int) -> None:
    conn.execute("UPDATE snapshots SET published = true WHERE version = %s", (version,))
