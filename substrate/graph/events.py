"""``graph.updated`` events on NATS JetStream, sent from the snapshot outbox.

Every committed snapshot row starts unpublished; after the commit the writer publishes all
unpublished snapshots in order (JetStream de-duplicates by message id), so a NATS outage
delays events but never loses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import nats
import psycopg
from nats.js.api import StreamConfig
from nats.js.errors import BadRequestError

from substrate.graph import snapshots
from substrate.settings import Settings

STREAM = "GRAPH"
SUBJECT = "graph.updated"


async def ensure_stream(js: Any) -> None:
    with contextlib.suppress(BadRequestError):  # already exists with this config
        await js.add_stream(StreamConfig(name=STREAM, subjects=["graph.>"]))


async def _publish(settings: Settings, events: list[dict[str, Any]]) -> None:
    nc = await nats.connect(settings.nats_url, connect_timeout=2, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        await ensure_stream(js)
        for event in events:
            await js.publish(
                SUBJECT, json.dumps(event).encode(),
                headers={"Nats-Msg-Id": f"snapshot-{event['snapshot_version']}"},
            )
    finally:
        await nc.close()


def publish_pending(settings: Settings) -> int:
    """Publish every unpublished snapshot; returns how many were sent (0 if NATS is down)."""
    with psycopg.connect(settings.postgres_dsn) as conn:
        pending = snapshots.unpublished(conn)
        if not pending:
            return 0
        events = [
            {"snapshot_version": v, "tenant_id": t, "changed_ids": snapshots.changed_ids(conn, v)}
            for v, t in pending
        ]
        try:
            asyncio.run(_publish(settings, events))
        except Exception:  # noqa: BLE001 - NATS down: the outbox keeps them for next time
            return 0
        for v, _ in pending:
            snapshots.mark_published(conn, v)
    return len(events)
