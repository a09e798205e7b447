"""The snapshot clock: which snapshot an unpinned read sees, kept in memory (RSN-10 hot path).

Every read is scoped to the newest snapshot (global, versions are one sequence) and carries
its tenant's newest (the query cache's freshness check). Asking PostgreSQL on every request
put a connection on the hot path; instead each gateway process keeps both here:

- ``graph.updated`` events (a plain NATS subscription on the subject the outbox publishes:
  every process sees every event, unlike the cache invalidator's shared durable consumer)
  move them forward as soon as a write's event is out;
- a refresh from PostgreSQL (one statement for all the tenants this process knows) when the
  subscription (re)connects, and then every ``REFRESH_S`` as a fallback for a lost event.

The clock answers only while it is live: subscribed, and refreshed within ``STALE_AFTER_S``.
Otherwise (NATS down, PostgreSQL refresh failing, a tenant not seen yet) :meth:`read` says
None and the caller resolves the scope in PostgreSQL as before, and tells the clock what it
found (:meth:`learn`), so the next read of that tenant is in memory.

An event also carries the Neo4j bookmarks of the snapshot's write: the clock keeps those of
each tenant's newest snapshot (:meth:`bookmarks_for`), and reads at that snapshot pass them
(:mod:`substrate.retrieval.bookmarks`), so on a cluster a lagging member waits for the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from substrate.graph.events import SUBJECT
from substrate.nats_follow import Follower, connect_once
from substrate.retrieval.bookmarks import BookmarkStats
from substrate.settings import Settings

log = logging.getLogger(__name__)

REFRESH_S = 2.0  # fallback refresh from PostgreSQL while live (3 missed: not live)

# (latest snapshot, {tenant: its latest}) for the given tenants
Refresh = Callable[[list[str]], Awaitable[tuple[int, dict[str, int]]]]


@dataclass
class ClockStats:
    connected: bool = False
    events: int = 0
    refreshes: int = 0
    refresh_errors: int = 0
    served: int = 0  # scopes answered from memory
    fallbacks: int = 0  # scopes resolved in PostgreSQL (not live, or a tenant not seen yet)
    last_event_version: int | None = None
    last_error: str | None = None
    events_with_bookmarks: int = 0


class SnapshotClock:
    def __init__(self, settings: Settings, refresh: Refresh,
                 refresh_s: float = REFRESH_S, reads: BookmarkStats | None = None) -> None:
        self.settings = settings
        self._refresh = refresh
        self.refresh_s = refresh_s
        self.stale_after_s = 3 * refresh_s
        self.latest = 0
        self.tenants: dict[str, int] = {}
        self.stats = ClockStats()
        self.bookmarks: dict[str, tuple[int, tuple[str, ...]]] = {}  # tenant: (version, raw)
        self.reads = reads  # the reads that passed them (shown with the clock's stats)
        self._refreshed_at = float("-inf")  # monotonic time of the last good refresh
        self._follower = Follower("snapshot-clock", self._follow, self._failed)
        self._nc: NatsClient | None = None  # set while subscribed

    # --- the hot path ------------------------------------------------------------------
    @property
    def live(self) -> bool:
        """Subscribed right now (a dropped connection counts at once, not at the next
        refresh) and refreshed from PostgreSQL lately."""
        return self._nc is not None and self._nc.is_connected and \
            time.monotonic() - self._refreshed_at < self.stale_after_s

    def read(self, tenant: str) -> tuple[int, int] | None:
        """(latest snapshot, ``tenant``'s latest) from memory, or None: ask PostgreSQL."""
        tenant_latest = self.tenants.get(tenant)
        if tenant_latest is None or not self.live:
            self.stats.fallbacks += 1
            return None
        self.stats.served += 1
        return self.latest, tenant_latest

    def learn(self, tenant: str, latest: int, tenant_latest: int) -> None:
        """What a PostgreSQL resolution found (the tenant exists): remember it."""
        self.latest = max(self.latest, latest)
        self.tenants[tenant] = max(self.tenants.get(tenant, 0), tenant_latest)

    def bookmarks_for(self, tenant: str, version: int) -> tuple[str, ...]:
        """The bookmarks of ``tenant``'s snapshot ``version`` if it is the newest event's
        (else empty: read as without a bookmark)."""
        known = self.bookmarks.get(tenant)
        return known[1] if known is not None and known[0] == version else ()

    def observe(self, tenant: str, version: int, bookmarks: tuple[str, ...] = ()) -> None:
        """A ``graph.updated`` event: snapshot ``version`` of ``tenant`` committed (by a
        write whose Neo4j ``bookmarks`` the event carries)."""
        if version >= self.bookmarks.get(tenant, (0, ()))[0]:
            self.bookmarks[tenant] = (version, bookmarks)
        self.stats.events_with_bookmarks += bool(bookmarks)
        # versions are one increasing sequence and every event since the subscription
        # reaches this process, so the newest event of a tenant is its newest snapshot
        self.latest = max(self.latest, version)
        self.tenants[tenant] = max(self.tenants.get(tenant, 0), version)
        self.stats.events += 1
        self.stats.last_event_version = version

    def to_dict(self) -> dict[str, Any]:
        return {"live": self.live, "latest": self.latest, "tenants": len(self.tenants),
                "refresh_s": self.refresh_s, **asdict(self.stats),
                "bookmarked_reads": None if self.reads is None else asdict(self.reads)}

    # --- keeping it current --------------------------------------------------------------
    def start(self) -> None:
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()
        self.stats.connected = False

    async def refresh(self) -> None:
        try:
            latest, tenants = await self._refresh(sorted(self.tenants))
        except Exception as exc:  # noqa: BLE001 - PostgreSQL down: not live until it is back
            self.stats.refresh_errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            return
        self.latest = max(self.latest, latest)
        for tenant, version in tenants.items():
            self.tenants[tenant] = max(self.tenants.get(tenant, 0), version)
        self._refreshed_at = time.monotonic()
        self.stats.refreshes += 1

    async def _follow(self) -> bool:
        """Subscribe, then refresh (so nothing before the subscription is missed), then
        refresh every ``refresh_s`` until the connection ends."""
        nc = await connect_once(self.settings, self._on_error)
        try:
            await nc.subscribe(SUBJECT, cb=self._on_event)
            await nc.flush()  # the server has the subscription: later events reach us
            await self.refresh()
            self._nc = nc
            self.stats.connected = True
            while not nc.is_closed:
                await asyncio.sleep(self.refresh_s)
                await self.refresh()
            self.stats.last_error = "ConnectionError: NATS connection closed"
            return True
        finally:
            self._nc = None
            self.stats.connected = False
            with contextlib.suppress(Exception):
                await nc.close()

    def _failed(self, exc: BaseException) -> None:
        self.stats.last_error = f"{type(exc).__name__}: {exc}"

    async def _on_error(self, exc: Exception) -> None:
        self.stats.last_error = f"{type(exc).__name__}: {exc}"

    async def _on_event(self, msg: Msg) -> None:
        try:
            event = json.loads(msg.data)
            marks = event.get("bookmarks")
            marks = marks if isinstance(marks, list) else []
            self.observe(str(event["tenant_id"]), int(event["snapshot_version"]),
                         tuple(str(b) for b in marks if isinstance(b, str)))
        except (ValueError, KeyError, TypeError):
            log.warning("snapshot clock: malformed graph.updated event: %r", msg.data[:200])
