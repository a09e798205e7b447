"""The verification queue: low-confidence or ambiguous extracted items wait in PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from substrate.errors import BadRequest, NotFound
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord


@dataclass(frozen=True)
class QueueItem:
    record: NodeRecord | EdgeRecord
    reason: str

    @property
    def kind(self) -> str:
        return "edge" if isinstance(self.record, EdgeRecord) else "node"


def record_to_json(record: NodeRecord | EdgeRecord) -> dict[str, Any]:
    data = asdict(record)
    if isinstance(record, NodeRecord):
        data["provenance"] = list(record.provenance)
    return data


def record_from_json(kind: str, data: dict[str, Any]) -> NodeRecord | EdgeRecord:
    if kind == "node":
        return NodeRecord(data["ceid"], data["label"], dict(data.get("props", {})),
                          tuple(data.get("provenance", ())), float(data.get("confidence", 1)))
    return EdgeRecord(data["type"], data["src"], data["dst"], data["evidence_ref"],
                      float(data.get("confidence", 1)), float(data.get("weight", 1)),
                      data.get("source", ""), dict(data.get("props", {})))


def enqueue(conn: psycopg.Connection[Any], tenant: str, source: str,
            items: list[QueueItem]) -> int:
    """Insert pending items in the caller's transaction. An item identical to one already in
    the queue (pending, approved or rejected) is not queued again, so re-running a source
    does not bring back what a reviewer has decided."""
    count = 0
    for item in items:
        record = json.dumps(record_to_json(item.record), sort_keys=True)
        cur = conn.execute(
            "INSERT INTO verification_queue (tenant_id, kind, record, confidence, reason, source) "
            "SELECT %(t)s, %(k)s, %(r)s::jsonb, %(c)s, %(why)s, %(s)s WHERE NOT EXISTS ("
            "SELECT 1 FROM verification_queue WHERE tenant_id = %(t)s "
            "AND md5(record::text) = md5(%(r)s::jsonb::text)) ON CONFLICT DO NOTHING",
            {"t": tenant, "k": item.kind, "r": record, "c": item.record.confidence,
             "why": item.reason, "s": source},
        )
        count += cur.rowcount
    return count


SUGGESTED_EDGES_SQL = (
    "SELECT id, record FROM verification_queue WHERE tenant_id = %(t)s AND status = 'pending' "
    "AND kind = 'edge' AND record->>'type' = ANY(%(types)s) AND record->>%(side)s = %(ceid)s "
    "ORDER BY confidence DESC, id LIMIT %(limit)s")


async def suggested_edges(conn: psycopg.AsyncConnection[Any], tenant: str, ceid: str,
                          types: list[str], outgoing: bool, limit: int = 5
                          ) -> list[tuple[int, EdgeRecord]]:
    """The pending (unverified) edges of ``types`` from ``ceid`` (into it: ``outgoing``
    False), most confident first, with their queue ids."""
    cur = await conn.execute(SUGGESTED_EDGES_SQL, {
        "t": tenant, "types": types, "side": "src" if outgoing else "dst", "ceid": ceid,
        "limit": limit})
    out = []
    for item_id, record in await cur.fetchall():
        edge = record_from_json("edge", record)
        assert isinstance(edge, EdgeRecord)
        out.append((int(item_id), edge))
    return out


def list_items(conn: psycopg.Connection[Any], tenant: str, status: str = "pending",
               limit: int = 100) -> list[dict[str, Any]]:
    if status not in ("pending", "approved", "rejected"):
        raise BadRequest("status must be pending, approved or rejected", {"status": status})
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT id, kind, record, confidence, reason, source, status, "
            "created_at::text AS created_at, decided_at::text AS decided_at, decided_by, "
            "snapshot_version FROM verification_queue WHERE tenant_id = %s AND status = %s "
            "ORDER BY id LIMIT %s",
            (tenant, status, limit),
        ).fetchall()
    return [dict(r) for r in rows]


def take(conn: psycopg.Connection[Any], tenant: str, item_id: int) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "SELECT id, kind, record, source, status FROM verification_queue "
            "WHERE tenant_id = %s AND id = %s FOR UPDATE",
            (tenant, item_id),
        ).fetchone()
    if row is None:
        raise NotFound(f"no verification item {item_id}", {"id": item_id})
    if row["status"] != "pending":
        raise BadRequest(f"item {item_id} is already {row['status']}", {"id": item_id})
    return dict(row)


def decide(conn: psycopg.Connection[Any], item_id: int, status: str, actor: str,
           version: int | None) -> None:
    conn.execute(
        "UPDATE verification_queue SET status = %s, decided_at = now(), decided_by = %s, "
        "snapshot_version = %s WHERE id = %s",
        (status, actor, version, item_id),
    )


def as_batch(kind: str, record: dict[str, Any]) -> GraphBatch:
    rec = record_from_json(kind, record)
    if isinstance(rec, NodeRecord):
        return GraphBatch(nodes=[rec])
    return GraphBatch(edges=[rec])
