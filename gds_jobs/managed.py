"""The incremental community consumer as ``substrate up`` runs it (``python -m gds_jobs watch``,
the part ``communities`` of the stack: pid file, log, stopped by ``substrate down``).

It is :class:`gds_jobs.consumer.CommunityConsumer` with one policy more: it keeps the
communities of tenants that have them current, it does not build a tenant's first set — that
is the full job's (``python -m gds_jobs communities``, the nightly cron, the demo load). So a
tenant's first ingest costs no Leiden run in the background, and the events of a stream replayed
from its start (a new durable reads every retained event) are skipped at the cost of two
queries each: no state at that level yet, or a set already stored at that snapshot or a newer
one (``gds_jobs.incremental.due``). The lock is taken only when some level is due. And it
handles an event once the event is ``SETTLE_S`` old (see :class:`ManagedConsumer`).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import psycopg
from nats.aio.msg import Msg

from gds_jobs.consumer import CommunityConsumer
from gds_jobs.consumer import watch as consume
from gds_jobs.guard import Progress, exclusive
from gds_jobs.incremental import IncrementalResult, due, update_communities
from gds_jobs.runtime import job_context
from substrate.retrieval.scope import ReadScope, clearance_for
from substrate.settings import Settings

SETTLE_S = 30.0


def settle_left(msg: Msg, settle_s: float = SETTLE_S) -> float:
    """Seconds until the event is ``settle_s`` old (its time in the stream)."""
    try:
        stored = msg.metadata.timestamp
    except Exception:  # noqa: BLE001 - no JetStream metadata: nothing to wait for
        return 0.0
    age = (datetime.now(UTC) - stored).total_seconds()
    return max(0.0, min(settle_s, settle_s - age))


class ManagedConsumer(CommunityConsumer):
    """``report``: progress lines on stderr, one JSON line per level run on stdout.

    An event is handled once it is ``SETTLE_S`` old: a full run started right after a commit
    (the demo load, an operator, a test) stores its set first, and the event is then skipped
    instead of racing it; events stay in order (one in flight, the wait is in the handler)."""

    def __init__(self, settings: Settings, tenant: str | None = None,
                 report: bool = False) -> None:
        super().__init__(settings, tenant, quiet=True)  # the base prints skipped levels too
        self.report = report

    async def handle(self, msg: Msg) -> None:
        await asyncio.sleep(settle_left(msg))
        await super().handle(msg)

    def apply(self, tenant: str, version: int, changed: list[str]) -> list[IncrementalResult]:
        scopes = [ReadScope(tenant, version, clearance_for(level), pinned=True)
                  for level in self.levels]
        with psycopg.connect(self.settings.postgres_dsn) as conn:
            waiting = any(due(conn, s, build_missing=False) for s in scopes)
        if not waiting:
            return [IncrementalResult(tenant, s.clearance[-1], version, "skipped")
                    for s in scopes]
        progress = Progress("communities-incremental", quiet=not self.report)
        with exclusive(self.settings, "communities", tenant), \
                job_context(self.settings) as ctx:
            results = [update_communities(ctx, s, changed, self.embedder, progress,
                                          build_missing=False) for s in scopes]
        self.stats.results.clear()  # a long-running process: the log keeps them
        for r in results:
            if self.report and r.mode != "skipped":
                print(json.dumps(r.to_dict()), flush=True)
        return results


def watch(settings: Settings, tenant: str | None, quiet: bool = False) -> int:
    """The ``watch`` command: consume until interrupted or killed (``substrate down``); one
    JSON line per level run (skipped events print nothing)."""
    return consume(settings, tenant, consumer=ManagedConsumer(settings, tenant, report=not quiet))
