"""The durable JetStream consumer of ``graph.updated`` that keeps communities current
(RSN-15): ``python -m gds_jobs watch [--tenant T]``, a long-running process beside the gateway.

Each event runs :func:`gds_jobs.incremental.update_communities` at the event's snapshot for
every clearance level, under the same advisory lock as the nightly full rebuild (a rebuild in
progress: the event is redelivered later). The event is acked only once every level is stored,
so a crash or a failed run means redelivery, never a lost update. Kept apart from the cache
invalidator (``substrate.cache_invalidator``): its own durable, its own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import nats
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from gds_jobs.guard import JobBusy, Progress, exclusive
from gds_jobs.incremental import IncrementalResult, update_communities
from gds_jobs.runtime import job_context
from substrate.embeddings import TextEmbedder, make_embedder
from substrate.graph import events
from substrate.retrieval.scope import CLASSIFICATIONS, ReadScope, clearance_for
from substrate.settings import Settings

log = logging.getLogger(__name__)

DURABLE = "substrate-communities"
FETCH_WAIT_S = 2.0
BUSY_DELAY_S = 5.0
FAILED_DELAY_S = 10.0
ACK_WAIT_S = 600  # a re-run at scale takes a while: no redelivery while it works


@dataclass
class ConsumerStats:
    events: int = 0
    skipped: int = 0  # other tenants' events
    redelivered: int = 0
    last_error: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


class CommunityConsumer:
    def __init__(self, settings: Settings, tenant: str | None = None,
                 durable: str = DURABLE, levels: Sequence[str] = CLASSIFICATIONS,
                 embedder: TextEmbedder | None = None, deliver_new: bool = False,
                 quiet: bool = True) -> None:
        self.settings, self.tenant, self.durable = settings, tenant, durable
        self.levels, self.deliver_new, self.quiet = tuple(levels), deliver_new, quiet
        self.embedder = embedder or make_embedder(settings)
        self.stats = ConsumerStats()

    def apply(self, tenant: str, version: int, changed: list[str]) -> list[IncrementalResult]:
        """Every clearance level at ``version``, under the communities lock."""
        progress = Progress("communities-incremental", quiet=self.quiet)
        with exclusive(self.settings, "communities", tenant), \
                job_context(self.settings) as ctx:
            return [update_communities(ctx, ReadScope(tenant, version, clearance_for(level),
                                                      pinned=True),
                                       changed, self.embedder, progress)
                    for level in self.levels]

    async def handle(self, msg: Msg) -> None:
        got = await events.received(msg)
        if got is None:
            return
        event, version, tenant = got
        if self.tenant is not None and tenant != self.tenant:
            self.stats.skipped += 1
            await msg.ack()
            return
        try:
            changed = await asyncio.to_thread(events.changed_ids, self.settings, event, version)
            results = await asyncio.to_thread(self.apply, tenant, version, changed)
        except JobBusy as exc:
            await self._retry(msg, exc, BUSY_DELAY_S)
            return
        except Exception as exc:  # noqa: BLE001 - any failure: redeliver later, keep consuming
            await self._retry(msg, exc, FAILED_DELAY_S)
            return
        await msg.ack()
        self.stats.events += 1
        self.stats.results += [r.to_dict() for r in results]
        if not self.quiet:
            for r in results:
                print(json.dumps(r.to_dict()), flush=True)

    async def _retry(self, msg: Msg, exc: Exception, delay: float) -> None:
        self.stats.redelivered += 1
        self.stats.last_error = f"{type(exc).__name__}: {exc}"
        await msg.nak(delay=delay)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Pull and apply events until ``stop`` is set (forever without one)."""
        nc = await nats.connect(self.settings.nats_servers, connect_timeout=2,
                                max_reconnect_attempts=-1, reconnect_time_wait=1.0)
        try:
            js = nc.jetstream()
            await events.ensure_stream(js, events.stream_replicas(nc))
            policy = DeliverPolicy.NEW if self.deliver_new else DeliverPolicy.ALL
            config = ConsumerConfig(durable_name=self.durable, ack_policy=AckPolicy.EXPLICIT,
                                    deliver_policy=policy, ack_wait=ACK_WAIT_S,
                                    max_ack_pending=1)
            sub = await js.pull_subscribe(events.SUBJECT, durable=self.durable,
                                          stream=events.STREAM, config=config)
            while stop is None or not stop.is_set():
                try:
                    msgs = await sub.fetch(1, timeout=FETCH_WAIT_S)
                except TimeoutError:
                    continue
                for msg in msgs:
                    await self.handle(msg)
        finally:
            with contextlib.suppress(Exception):
                await nc.close()


def watch(settings: Settings, tenant: str | None, quiet: bool = False,
          consumer: CommunityConsumer | None = None) -> int:
    """Consume until interrupted (a kill is safe: an event is acked once stored); one JSON
    line per level applied. ``consumer``: another policy (``gds_jobs.managed``)."""
    consumer = consumer or CommunityConsumer(settings, tenant, quiet=quiet)
    try:
        asyncio.run(consumer.run())
    except KeyboardInterrupt:
        return 0
    except (OSError, nats.errors.Error) as exc:
        print(json.dumps({"error": {"code": "unavailable", "message": str(exc),
                                    "detail": None}}), file=sys.stderr)
        return 1
    return 0
