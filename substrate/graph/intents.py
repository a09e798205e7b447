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

COPY_CHUNK = 1 << 20  # bytes per write to a COPY stream


@dataclass(frozen=True)
class Intent:
    version: int
    tenant: str
    source: str
    content_hash: str


def record(
    conn: psycopg.Connection[Any], version: int, tenant: str, valid_at: datetime,
    source: str, content_hash: str, changes: list[ChangeRow], note: str | None,
) -> bytes:
    """Record the intent with its change rows (as change_log's COPY text, which it returns:
    the writer hands it to :func:`complete`, the reconciler reads it back)."""
    nodes = sum(1 for c in changes if c.kind == "node")
    head = b"%d\t%s\t" % (version, _text(tenant))
    rows = b"".join([
        b"%s%s\t%s\t%s\t%s\t%s\n" % (head, _text(c.kind), _text(c.element_id),
                                    _text(c.op), _json(c.before), _json(c.after))
        for c in changes
    ])
    conn.execute(
        "INSERT INTO write_intents (version, tenant_id, valid_at, source, content_hash, "
        "changed_nodes, changed_edges, note, changes) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %b)",
        (version, tenant, valid_at, source, content_hash, nodes, len(changes) - nodes, note,
         rows),
    )
    return rows


def _text(value: str) -> bytes:
    """A field of COPY's text format (backslash, tab, newline, carriage return escaped)."""
    data = value.encode()
    if b"\\" in data or b"\t" in data or b"\n" in data or b"\r" in data:
        data = (data.replace(b"\\", b"\\\\").replace(b"\t", b"\\t")
                .replace(b"\n", b"\\n").replace(b"\r", b"\\r"))
    return data


def _json(value: dict[str, Any] | None) -> bytes:
    """A change row's before/after as a COPY field of JSON text (values JSON does not know,
    e.g. Neo4j temporal types, as their string form); NULL as ``\\N``. JSON text holds no
    raw control character: only its backslashes need escaping."""
    if value is None:
        return b"\\N"
    return orjson.dumps(value, default=str).replace(b"\\", b"\\\\")


def pending(conn: psycopg.Connection[Any]) -> list[Intent]:
    rows = conn.execute(
        "SELECT version, tenant_id, source, content_hash FROM write_intents ORDER BY version"
    ).fetchall()
    return [Intent(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]


def complete(conn: psycopg.Connection[Any], version: int, *, reconciled: bool = False,
             bookmarks: Sequence[str] = (), rows: bytes | None = None) -> bool:
    """In one transaction: the intent becomes the snapshot row, its change log and an
    ``snapshot.commit`` audit entry; the intent is deleted. False if there was no intent.
    ``bookmarks``: the Neo4j bookmarks of the write (its ``graph.updated`` event carries
    them). ``rows``: what :func:`record` returned (else read from the intent)."""
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
        if rows is None:
            found = conn.execute("SELECT changes FROM write_intents WHERE version = %s",
                                 (version,)).fetchone()
            rows = found[0] if found else None
        if rows:
            with conn.cursor().copy(
                "COPY change_log (snapshot_version, tenant_id, element_kind, element_id, op, "
                "before, after) FROM STDIN"
            ) as copy:
                for i in range(0, len(rows), COPY_CHUNK):
                    copy.write(rows[i : i + COPY_CHUNK])
        # an intent recorded by an older writer: its rows moved in one pass (the intent's
        # DELETE below then cascades to no rows)
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
