"""PostgreSQL side of a snapshot: the monotonic version, the change log, time -> version."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

SNAPSHOT_LOCK = 0x5B57_0002  # serialises writers so versions are gap-free and monotonic


@dataclass(frozen=True)
class ChangeRow:
    kind: str  # node | edge
    element_id: str
    op: str  # add | update | close
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def reserve_version(conn: psycopg.Connection[Any]) -> int:
    """Inside an open transaction: take the writer lock and return the next version."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (SNAPSHOT_LOCK,))
    row = conn.execute("SELECT coalesce(max(version), 0) + 1 FROM snapshots").fetchone()
    assert row is not None
    return int(row[0])


def record_snapshot(
    conn: psycopg.Connection[Any], version: int, tenant: str, valid_at: datetime,
    source: str, content_hash: str, changes: list[ChangeRow], note: str | None,
) -> None:
    nodes = sum(1 for c in changes if c.kind == "node")
    conn.execute(
        "INSERT INTO snapshots (version, tenant_id, valid_at, source, content_hash, "
        "changed_nodes, changed_edges, note) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (version, tenant, valid_at, source, content_hash, nodes, len(changes) - nodes, note),
    )
    with conn.cursor().copy(
        "COPY change_log (snapshot_version, tenant_id, element_kind, element_id, op, before, "
        "after) FROM STDIN"
    ) as copy:
        for c in changes:
            copy.write_row((
                version, tenant, c.kind, c.element_id, c.op,
                None if c.before is None else json.dumps(c.before, default=str),
                None if c.after is None else json.dumps(c.after, default=str),
            ))


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


def mark_published(conn: psycopg.Connection[Any], version: int) -> None:
    conn.execute("UPDATE snapshots SET published = true WHERE version = %s", (version,))
