"""``graph.updated`` events on NATS JetStream, sent from the snapshot outbox.

Every committed snapshot row starts unpublished; after the commit the writer publishes all
unpublished snapshots in order (JetStream de-duplicates by message id), so a NATS outage
delays events but never loses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import nats
import orjson
import psycopg
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.api import StreamConfig
from nats.js.errors import APIError, BadRequestError, NotFoundError

from substrate.graph import faults, snapshots
from substrate.settings import Settings

log = logging.getLogger(__name__)

STREAM = "GRAPH"
SUBJECT = "graph.updated"
HEADER_ROOM = 4096  # headers and protocol overhead inside the server's max_payload
PUBLISH_DEADLINE = 20.0  # seconds for one outbox drain (connect 2 s, 5 s per publish ack)
MAX_REPLICAS = 3


def stream_replicas(nc: NatsClient) -> int:
    """Copies of the stream: one per server the client knows (NATS_URL and the servers a
    cluster advertises), at most 3 - a 3-node cluster keeps the events with a node down."""
    return max(1, min(MAX_REPLICAS, len(nc.servers)))


async def ensure_stream(js: Any, replicas: int = 1) -> None:
    """The GRAPH stream with ``replicas`` copies; one made with fewer is scaled up (a single
    server refuses more than one copy: then it stays at one)."""
    try:
        info = await js.stream_info(STREAM)
    except NotFoundError:
        try:
            await js.add_stream(StreamConfig(name=STREAM, subjects=["graph.>"],
                                             num_replicas=replicas))
        except APIError as exc:
            if replicas > 1:  # a single server: "replicas > 1 not supported" (or a race)
                await ensure_stream(js, 1)
            elif not isinstance(exc, BadRequestError):  # 400: created meanwhile
                raise
        return
    if (info.config.num_replicas or 1) < replicas:
        with contextlib.suppress(APIError):  # a single server keeps its one copy
            await js.update_stream(replace(info.config, num_replicas=replicas))


def encode_event(event: dict[str, Any], max_bytes: int) -> bytes:
    """The event as JSON. When its id list does not fit in one NATS message (a bulk import),
    the list is left out and ``changed_ids_truncated`` says so: a consumer reads the ids from
    the change log. Still one message per snapshot, never one that the server refuses."""
    data = orjson.dumps(event)
    if len(data) <= max_bytes:
        return data
    slim = {**event, "changed_ids": [], "changed_ids_truncated": True,
            "changed_count": len(event["changed_ids"])}
    return orjson.dumps(slim)


async def _ignore(error: Exception) -> None:
    """Connection errors surface as the exception of ``connect``/``publish``, not as logs."""


async def _publish(settings: Settings, events: list[dict[str, Any]]) -> None:
    # nats-py retries a refused first connect forever unless max_reconnect_attempts > 0
    # (0 means "no limit" there), which hung every commit while NATS was down
    nc = await nats.connect(settings.nats_servers, connect_timeout=2, allow_reconnect=False,
                            max_reconnect_attempts=1, reconnect_time_wait=0.2,
                            error_cb=_ignore)
    try:
        js = nc.jetstream()
        await ensure_stream(js, stream_replicas(nc))
        for event in events:
            stamped = {**event, "published_at": datetime.now(UTC).isoformat()}
            await js.publish(
                SUBJECT, encode_event(stamped, nc.max_payload - HEADER_ROOM),
                headers={"Nats-Msg-Id": f"snapshot-{event['snapshot_version']}"},
            )
    finally:
        await nc.close()


def publish_pending(settings: Settings, tenant: str | None = None,
                    known: Mapping[int, list[str]] | None = None,
                    conn: psycopg.Connection[Any] | None = None) -> int:
    """Publish every unpublished snapshot (of ``tenant`` only, when given); returns how many
    were sent (0 if NATS is down). ``published_at`` lets consumers measure their delay.
    ``known``: the changed ids of some of them, by version, as the writer had them (the
    others' are read from the change log). ``conn``: an open autocommit connection to use
    (else one for this call)."""
    try:
        return drain_outbox(settings, tenant, known, conn)
    except Exception:  # noqa: BLE001 - NATS down: the outbox keeps them for the outbox loop
        return 0


def drain_outbox(settings: Settings, tenant: str | None = None,
                 known: Mapping[int, list[str]] | None = None,
                 conn: psycopg.Connection[Any] | None = None) -> int:
    """Like :func:`publish_pending` but raises when NATS (or PostgreSQL) fails."""
    if conn is None:
        with psycopg.connect(settings.postgres_dsn, connect_timeout=3) as own:
            return _drain(settings, own, tenant, known or {})
    return _drain(settings, conn, tenant, known or {})


def _drain(settings: Settings, conn: psycopg.Connection[Any], tenant: str | None,
           known: Mapping[int, list[str]]) -> int:
    pending = [(v, t) for v, t in snapshots.unpublished(conn) if tenant in (None, t)]
    if not pending:
        return 0
    events = [
        {"snapshot_version": v, "tenant_id": t,
         "changed_ids": known[v] if v in known else snapshots.changed_ids(conn, v),
         "bookmarks": snapshots.bookmarks(conn, v)}  # Neo4j's, for read-your-writes
        for v, t in pending
    ]
    asyncio.run(asyncio.wait_for(_publish(settings, events), PUBLISH_DEADLINE))
    faults.point("after_publish")
    for v, _ in pending:
        snapshots.mark_published(conn, v)
    return len(events)


BACKLOG_SQL = ("SELECT count(*), extract(epoch FROM now() - min(committed_at))::float8 "
               "FROM snapshots WHERE NOT published")


def backlog(settings: Settings, conn: psycopg.Connection[Any] | None = None,
            ) -> tuple[int, float | None]:
    """(unpublished snapshots, age in seconds of the oldest one). ``conn``: the caller's open
    connection (the outbox publisher asks every second), else one for this call."""
    if conn is None:
        with psycopg.connect(settings.postgres_dsn, connect_timeout=3) as own:
            return backlog(settings, own)
    row = conn.execute(BACKLOG_SQL).fetchone()
    assert row is not None
    return int(row[0]), None if row[1] is None else float(row[1])


async def received(msg: Msg) -> tuple[dict[str, Any], int, str] | None:
    """A consumed ``graph.updated`` message as (event, snapshot version, tenant); a malformed
    one is terminated (JetStream never redelivers it) and gives None."""
    try:
        event = json.loads(msg.data)
        return event, int(event["snapshot_version"]), str(event["tenant_id"])
    except (ValueError, KeyError, TypeError):
        log.warning("dropping malformed graph.updated event: %r", msg.data[:200])
        await msg.term()
        return None


def changed_ids(settings: Settings, event: dict[str, Any], version: int) -> list[str]:
    """The element ids an event names; when the event had to truncate them, the snapshot's
    change log has them all."""
    if not event.get("changed_ids_truncated"):
        return [str(x) for x in event.get("changed_ids", [])]
    with psycopg.connect(settings.postgres_dsn) as conn:
        return snapshots.changed_ids(conn, version)
