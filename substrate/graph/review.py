"""Approve or reject items of the verification queue (CLI and HTTP call these)."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from substrate.graph import verification as vq
from substrate.graph.writer import GraphWriter


def audit(conn: psycopg.Connection[Any], tenant: str, actor: str, action: str,
          target: str, detail: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO audit_log (tenant_id, actor, action, target, detail) "
        "VALUES (%s, %s, %s, %s, %s)",
        (tenant, actor, action, target, json.dumps(detail, default=str)),
    )


def approved_source(source: str) -> str:
    """The source an approved item is written under: a re-run of the proposing connector in
    sync mode (which never asserts the item itself) must not close what a reviewer approved."""
    return f"review:{source}"


def approve(writer: GraphWriter, tenant: str, item_id: int, actor: str) -> dict[str, Any]:
    """Write the item with its evidence as a new snapshot, then mark it approved."""
    with psycopg.connect(writer.settings.postgres_dsn) as conn, conn.transaction():
        item = vq.take(conn, tenant, item_id)
        result = writer.commit(
            vq.as_batch(item["kind"], item["record"]), source=approved_source(item["source"]),
            tenant=tenant, verified=True, note=f"verification item {item_id} approved",
        )
        vq.decide(conn, item_id, "approved", actor, result.snapshot_version)
        audit(conn, tenant, actor, "verification.approve", str(item_id),
              {"snapshot_version": result.snapshot_version, "record": item["record"]})
    return {"id": item_id, "status": "approved", "snapshot_version": result.snapshot_version}


def reject(postgres_dsn: str, tenant: str, item_id: int, actor: str) -> dict[str, Any]:
    with psycopg.connect(postgres_dsn) as conn, conn.transaction():
        item = vq.take(conn, tenant, item_id)
        vq.decide(conn, item_id, "rejected", actor, None)
        audit(conn, tenant, actor, "verification.reject", str(item_id),
              {"record": item["record"]})
    return {"id": item_id, "status": "rejected"}
