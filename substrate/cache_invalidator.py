"""The durable JetStream consumer that evicts query-cache entries named by ``graph.updated``.

One pull consumer per Redis cache (the durable name hashes the Redis URL): gateway replicas
that share a Redis share the consumer, so each event is applied by one of them (again only
after a failed ack: eviction is idempotent). At most one event is in flight across all
replicas (``max_ack_pending=1``): a tenant's events are applied in order, so the ``applied``
watermark never passes an event whose entries are still in Redis. Each event is acked only
after its entries were evicted, so Redis down means redelivery, never a lost eviction. NATS
down: the task retries with backoff (the TTL bounds what it cannot evict meanwhile) and
resumes from its durable position; NATS_URL may list several servers (a cluster): a lost
connection reconnects to the next one that answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from substrate.cache import CacheUnavailable, QueryCache
from substrate.graph.events import (
    STREAM,
    SUBJECT,
    changed_ids,
    ensure_stream,
    received,
    stream_replicas,
)
from substrate.graph.ontology import Ontology
from substrate.nats_follow import Follower, connect_once
from substrate.observability.metrics import INVALIDATION_LAG
from substrate.settings import Settings

log = logging.getLogger(__name__)

DURABLE_PREFIX = "substrate-cache"
FETCH_WAIT_S = 2.0  # a pull waits this long for the next event
ACK_WAIT_S = 10  # a replica that died holding an event: another gets it after this
REDELIVER_DELAY_S = 1.0


def durable_name(settings: Settings) -> str:
    digest = hashlib.sha256(settings.redis_url.encode()).hexdigest()[:12]
    return f"{DURABLE_PREFIX}-{digest}"


@dataclass
class InvalidationStats:
    connected: bool = False
    events: int = 0
    evicted: int = 0
    redelivered: int = 0
    caught_up: int = 0  # events published before this connection came up (a backlog)
    reconnects: int = 0
    connected_at: datetime | None = None
    last_version: int | None = None
    last_tenant: str | None = None
    last_delay_ms: float | None = None
    last_error: str | None = None
    delays_ms: deque[float] = field(default_factory=lambda: deque(maxlen=200))
    # the newest applied events: {"tenant", "version", "evicted", "delay_ms"}
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=50))

    def to_dict(self) -> dict[str, Any]:
        delays = sorted(self.delays_ms)
        return {
            "connected": self.connected, "events": self.events, "evicted": self.evicted,
            "redelivered": self.redelivered, "caught_up": self.caught_up,
            "reconnects": self.reconnects,
            "last_version": self.last_version, "last_tenant": self.last_tenant,
            "last_delay_ms": self.last_delay_ms, "last_error": self.last_error,
            "recent_delay_ms": {
                "n": len(delays),
                "p50": delays[len(delays) // 2] if delays else None,
                "max": delays[-1] if delays else None,
            },
            "recent_events": list(self.recent),
        }


class CacheInvalidator:
    def __init__(self, settings: Settings, cache: QueryCache) -> None:
        self.settings = settings
        self.cache = cache
        self.durable = durable_name(settings)
        self.stats = InvalidationStats()
        # every failure (NATS down, stream gone) waits and reconnects
        self._follower = Follower("cache-invalidator", self._follow, self._failed)

    def start(self) -> None:
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def _follow(self) -> bool:
        """One connection's life: True when it had come up (the next one starts soon)."""
        try:
            await self._consume()
        except Exception as exc:  # noqa: BLE001 - reported here, the follower reconnects
            self._failed(exc)
        came_up = self.stats.connected
        self.stats.connected = False
        self.stats.reconnects += 1
        return came_up

    def _failed(self, exc: BaseException) -> None:
        self.stats.last_error = f"{type(exc).__name__}: {exc}"

    async def _consume(self) -> None:
        nc = await connect_once(self.settings, self._on_error)
        try:
            js = nc.jetstream()
            await ensure_stream(js, stream_replicas(nc))
            config = self._consumer_config()
            await js.add_consumer(STREAM, config)  # creates it, or updates an older config
            sub = await js.pull_subscribe(SUBJECT, durable=self.durable, stream=STREAM,
                                          config=config)
            self.stats.connected = True
            self.stats.connected_at = datetime.now(UTC)
            await self._pull(nc, sub)
        finally:
            with contextlib.suppress(Exception):
                await nc.close()

    async def _on_error(self, exc: Exception) -> None:
        self.stats.last_error = f"{type(exc).__name__}: {exc}"  # the loop reconnects

    def _consumer_config(self) -> ConsumerConfig:
        return ConsumerConfig(durable_name=self.durable, ack_policy=AckPolicy.EXPLICIT,
                              deliver_policy=DeliverPolicy.ALL, ack_wait=ACK_WAIT_S,
                              max_ack_pending=1, filter_subject=SUBJECT)

    async def _pull(self, nc: NatsClient, sub: Any) -> None:
        while not nc.is_closed:
            try:
                # one at a time: a batch pull lingers until it is full or times out
                msgs: list[Msg] = await sub.fetch(1, timeout=FETCH_WAIT_S)
            except TimeoutError:
                continue
            for msg in msgs:
                await self.handle(msg)
        raise ConnectionError("NATS connection closed")

    async def handle(self, msg: Msg) -> None:
        """Evict, then ack; Redis down: nak so the event comes back a little later."""
        got = await received(msg)
        if got is None:
            return
        event, version, tenant = got
        try:
            ids = await asyncio.to_thread(changed_ids, self.settings, event, version)
            evicted = await self.cache.invalidate(tenant, version, ids)
        except (CacheUnavailable, psycopg.Error) as exc:
            self.stats.redelivered += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            await msg.nak(delay=REDELIVER_DELAY_S)
            return
        await msg.ack()
        self._record(event, msg, version, tenant, evicted)

    def _record(self, event: dict[str, Any], msg: Msg, version: int, tenant: str,
                evicted: int) -> None:
        s = self.stats
        s.events += 1
        s.evicted += evicted
        s.last_version, s.last_tenant = version, tenant
        published = _published_at(event, msg)
        delay = None
        if published is None or s.connected_at is None or published < s.connected_at:
            s.caught_up += 1  # a backlog event: its delay is the outage, not the consumer
        else:
            delay = s.last_delay_ms = round(
                (datetime.now(UTC) - published).total_seconds() * 1000, 3)
            s.delays_ms.append(delay)
            INVALIDATION_LAG.observe(delay / 1000)
        s.recent.append({"tenant": tenant, "version": version, "evicted": evicted,
                         "delay_ms": delay})


def _published_at(event: dict[str, Any], msg: Msg) -> datetime | None:
    """The publisher's stamp, else the time the stream stored the message."""
    try:
        if event.get("published_at"):
            return datetime.fromisoformat(str(event["published_at"]))
        stamp: datetime = msg.metadata.timestamp
        return stamp
    except (ValueError, AttributeError):
        return None


@dataclass
class CacheRuntime:
    """What the gateway's lifespan holds: the cache and the task that invalidates it."""

    cache: QueryCache
    invalidator: CacheInvalidator

    def stats(self) -> dict[str, Any]:
        early = self.cache.early
        return {"cache": {**asdict(self.cache.stats), "redis_available": self.cache.available,
                          "ttl_seconds": self.cache.ttl,
                          "early_start": {**asdict(early.stats), "miss_rate": {
                              k: round(v, 3) for k, v in sorted(early.miss_rate.items())}}},
                "invalidation": {"durable": self.invalidator.durable,
                                 **self.invalidator.stats.to_dict()}}

    async def aclose(self) -> None:
        await self.invalidator.stop()
        await self.cache.aclose()


EARLY_KINDS = ("dependencies", "ownership", "memory")  # one-round-trip reads (cache_early)


def start_cache(settings: Settings, ontology: Ontology | None = None) -> CacheRuntime:
    """The query cache and its invalidator, started on the running event loop (a long-lived
    process: a miss is answered before its store reaches Redis, see :mod:`substrate.cache`)."""
    cache = QueryCache.from_settings(settings, ontology, defer_stores=True,
                                     early_start=EARLY_KINDS)
    invalidator = CacheInvalidator(settings, cache)
    invalidator.start()
    return CacheRuntime(cache, invalidator)
