"""PostgreSQL side of a crash-safe write: the intent recorded before the Neo4j transaction,
turned into the snapshot (row, change log, audit entry) after it, or discarded.

Every function runs in the caller's connection; the caller holds the writers' lock
(:func:`substrate.graph.snapshots.lock_writers`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import psycopg

from substrate.graph.snapshots import ChangeRow


@dataclass(frozen=True)
class Intent:
    version: int
    tenant: str
    source: str
    content_hash: str


def record(
    conn: psycopg.Connection[Any], version: int, tenant: str, valid_at: datetime,
    source: str, content_hash: str, changes: list[ChangeRow], note: str | None,
) -> None:
    nodes = sum(1 for c in changes if c.kind == "node")
    conn.execute(
        "INSERT INTO write_intents (version, tenant_id, valid_at, source, content_hash, "
        "changed_nodes, changed_edges, note) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (version, tenant, valid_at, source, content_hash, nodes, len(changes) - nodes, note),
    )
    with conn.cursor().copy(
        "COPY write_intent_changes (intent_version, tenant_id, element_kind, element_id, op, "
        "before, after) FROM STDIN"
    ) as copy:
        for c in changes:
            copy.write_row((
                version, tenant, c.kind, c.element_id, c.op, _json(c.before), _json(c.after),
            ))


def _json(value: dict[str, Any] | None) -> str | None:
    """A change row's before/after as JSON text (values JSON does not know, e.g. Neo4j
    temporal types, as their string form)."""
    return None if value is None else orjson.dumps(value, default=str).decode()


def pending(conn: psycopg.Connection[Any]) -> list[Intent]:
    rows = conn.execute(
        "SELECT version, tenant_id, source, content_hash FROM write_intents ORDER BY version"
    ).fetchall()
    return [Intent(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]


def complete(conn: psycopg.Connection[Any], version: int, *, reconciled: bool = False,
             bookmarks: Sequence[str] = ()) -> bool:
    """In one transaction: the intent becomes the snapshot row, its change log and an
    ``snapshot.commit`` audit entry; the intent is deleted. False if there was no intent.
    ``bookmarks``: the Neo4j bookmarks of the write (its ``graph.updated`` event carries them)."""
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO snapshots (version, tenant_id, valid_at, source, content_hash, "
            "changed_nodes, changed_edges, note, neo4j_bookmarks) SELECT version, tenant_id, "
            "valid_at, source, content_hash, changed_nodes, changed_edges, note, %s::text[] "
            "FROM write_intents WHERE version = %s RETURNING tenant_id, source, content_hash, "
            "changed_nodes, changed_edges", (list(bookmarks), version),
        ).fetchone()
        if row is None:
            return False
        # moved in one pass (the intent's DELETE below then cascades to no rows)
        conn.execute(
            "WITH moved AS (DELETE FROM write_intent_changes WHERE intent_version = %s "
            "RETURNING id, intent_version, tenant_id, element_kind, element_id, op, before, "
            "after) INSERT INTO change_log (snapshot_version, tenant_id, element_kind, "
            "element_id, op, before, after) SELECT intent_version, tenant_id, element_kind, "
            "element_id, op, before, after FROM moved ORDER BY id",
            (version,),
        )
        detail = {"snapshot_version": version, "content_hash": row[2],
                  "changed_nodes": row[3], "changed_edges": row[4], "reconciled": reconciled}
        conn.execute(
            "INSERT INTO audit_log (tenant_id, actor, action, target, detail) "
            "VALUES (%s, %s, 'snapshot.commit', %s, %s)",
            (row[0], row[1], f"snapshot:{version}", json.dumps(detail)),
        )
        conn.execute("DELETE FROM write_intents WHERE version = %s", (version,))
    return True


def discard(conn: psycopg.Connection[Any], version: int) -> None:
    """The Neo4j transaction never committed: forget the intent (its changes cascade)."""
    with conn.transaction():
        conn.execute("DELETE FROM write_intents WHERE version = %s", (version,))
