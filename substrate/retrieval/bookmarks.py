"""Neo4j bookmarks on the read path: read-your-writes across processes on a cluster.

A snapshot is written by another process (the ingest CLI, a connector); its ``graph.updated``
event carries the Neo4j bookmarks of that write transaction, the snapshot clock remembers them
per tenant, and an unpinned read at that snapshot passes them here: a routed read on a cluster
member that has not applied the write yet waits until it has (instead of answering, and
caching, the old graph as the new snapshot). No bookmark: the read runs as before (with the
driver's own ``execute_query`` bookmark manager: this process's writes).

A bookmark Neo4j refuses (malformed, of another database, never reached in time) must not
break reads: the read is re-run without it, the refusal counted, and that bookmark not offered
again.

Each read is one auto-commit query routed as a read (RUN and PULL in one Bolt round trip; a
managed transaction, as ``execute_query`` runs, adds BEGIN and a COMMIT round trip). A read is
idempotent, so a retryable failure (a leader change, a lost connection, a transient error) is
re-run the way ``execute_query`` would: with backoff, for at most ``NEO4J_RETRY_S``.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from neo4j import AsyncDriver, AsyncResult, AsyncSession, Bookmarks, Query, Record
from neo4j.exceptions import DriverError, Neo4jError

from substrate.db import NEO4J_RETRY_S

REFUSED = frozenset({
    "Neo.ClientError.Transaction.InvalidBookmark",
    "Neo.ClientError.Transaction.InvalidBookmarkMixture",
    "Neo.TransientError.Transaction.BookmarkTimeout",
})
MAX_REFUSED = 1024  # refused bookmarks remembered (then forgotten all at once)
RETRY_FIRST_S = 0.05  # first backoff of a retried read; doubles up to RETRY_MAX_S
RETRY_MAX_S = 1.0
T = TypeVar("T")
MAX_IDLE_SESSIONS = 64  # read sessions kept between reads (the gateway's concurrency)


def fingerprint(bookmarks: Sequence[str]) -> str:
    """A short digest of raw bookmarks for stats (the raw values look like secrets to the
    response redactor, and need not be shown)."""
    return hashlib.sha256("\n".join(sorted(bookmarks)).encode()).hexdigest()[:16]


@dataclass
class BookmarkStats:
    reads: int = 0  # queries run with a snapshot's bookmarks (and accepted)
    refused: int = 0  # queries whose bookmarks Neo4j refused: re-run without them
    last_fingerprint: str | None = None  # of the last accepted read's bookmarks
    last_refusal: str | None = None


class ReadBookmarks:
    def __init__(self) -> None:
        self.stats = BookmarkStats()
        self.sessions = ReadSessions()  # the reads without a snapshot's bookmarks
        self._refused: set[str] = set()

    def usable(self, bookmarks: Sequence[str]) -> list[str]:
        return [b for b in bookmarks if b not in self._refused]

    async def execute(self, driver: AsyncDriver, query: str, params: dict[str, Any],
                      bookmarks: Sequence[str] = ()) -> list[Record]:
        """Run ``query`` as a routed read, after ``bookmarks`` when given."""
        usable = self.usable(bookmarks)
        if not usable:
            return await read(driver, query, params, sessions=self.sessions)
        try:
            records = await read(driver, query, params, usable)
        except Neo4jError as exc:
            if exc.code not in REFUSED:
                raise
            self._refuse(usable, f"{exc.code}: {exc.message}")
            return await read(driver, query, params, sessions=self.sessions)
        self.stats.reads += 1
        self.stats.last_fingerprint = fingerprint(usable)
        return records

    def _refuse(self, bookmarks: list[str], reason: str) -> None:
        if len(self._refused) >= MAX_REFUSED:
            self._refused.clear()
        self._refused.update(bookmarks)
        self.stats.refused += 1
        self.stats.last_refusal = reason[:300]


async def _all_records(result: AsyncResult) -> list[Record]:
    return [record async for record in result]


async def read(driver: AsyncDriver, query: str, params: dict[str, Any],
               bookmarks: Sequence[str] = (), sessions: ReadSessions | None = None
               ) -> list[Record]:
    """One auto-commit read routed to a reader: after ``bookmarks`` when given, else after
    this process's own writes (the driver's ``execute_query`` bookmark manager), on a session
    from ``sessions`` when given. Retryable failures are re-run with backoff within
    ``NEO4J_RETRY_S``."""
    deadline, delay = time.monotonic() + NEO4J_RETRY_S, RETRY_FIRST_S
    while True:
        try:
            if not bookmarks:  # a kept session (no pool given: one for this read only)
                return await (sessions or ReadSessions(limit=0)).run(
                    driver, query, params, _all_records)
            async with driver.session(default_access_mode="READ",
                                      bookmarks=Bookmarks.from_raw_values(bookmarks)) as session:
                return await _all_records(await session.run(query, params))
        except (Neo4jError, DriverError) as exc:
            if not exc.is_retryable() or time.monotonic() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_S)


class ReadSessions:
    """Auto-commit read sessions (with the driver's ``execute_query`` bookmark manager) kept
    between reads. A session holds no connection between its queries; making and closing one
    per read (its configuration, the bookmark manager's callbacks, its teardown) cost the
    gateway ~0.1 ms a request. One read uses a session at a time; a session whose query
    failed is closed, never kept. A kept session also sends the bookmark of its previous read:
    on a cluster, reads through it never see an older graph than one it already returned.
    At most ``limit`` are kept idle (the rest are closed after use); ``fetch_size``: the
    sessions' (the driver's default when None)."""

    def __init__(self, limit: int = MAX_IDLE_SESSIONS, fetch_size: int | None = None) -> None:
        self.limit = limit
        self.fetch_size = fetch_size
        self._idle: list[tuple[AsyncDriver, AsyncSession]] = []

    async def run(self, driver: AsyncDriver, query: str | Query, params: dict[str, Any],
                  take: Callable[[AsyncResult], Awaitable[T]]) -> T:
        """``take(result)``: what the read returns (e.g. every record); it must leave the
        result consumed (read to its end, or ``consume()``d)."""
        session = self._take(driver)
        try:
            out = await take(await session.run(query, params))
        except asyncio.CancelledError:
            session.cancel()  # cannot wait for a graceful close: kill its connection
            raise
        except BaseException:
            await session.close()
            raise
        if len(self._idle) < self.limit:
            self._idle.append((driver, session))
        else:
            await session.close()
        return out

    def _take(self, driver: AsyncDriver) -> AsyncSession:
        for i in range(len(self._idle) - 1, -1, -1):
            if self._idle[i][0] is driver:
                return self._idle.pop(i)[1]
        config: dict[str, Any] = {} if self.fetch_size is None else {
            "fetch_size": self.fetch_size}
        return driver.session(default_access_mode="READ",
                              bookmark_manager=driver.execute_query_bookmark_manager, **config)

    @property
    def idle(self) -> int:
        return len(self._idle)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _driver, session in idle:
            await session.close()
