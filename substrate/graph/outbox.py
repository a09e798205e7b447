"""The continuous outbox publisher: ``graph.updated`` leaves within seconds of a commit or
of NATS coming back, never waiting for the next write.

Its own loop (in the gateway process): reconcile interrupted writes (without waiting for a
writer's lock), publish every unpublished snapshot, sleep; after a failure the sleep doubles
up to ``MAX_BACKOFF``. Its status (backlog, age of the oldest unpublished snapshot, last
error) is part of ``/readyz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from neo4j import Driver

from substrate.cypher import CypherLibrary
from substrate.graph import events
from substrate.graph.reconcile import reconcile
from substrate.settings import Settings

log = logging.getLogger(__name__)

INTERVAL = 1.0  # seconds between rounds when all is well
MAX_BACKOFF = 2.0  # NATS back: published within this many seconds (plus one round)
RECONCILE_EVERY = 5  # rounds


@dataclass
class OutboxStatus:
    backlog: int = 0
    oldest_age_s: float | None = None
    last_error: str | None = None
    last_round_at: float | None = None
    published: int = 0

    def to_dict(self) -> dict[str, Any]:
        age = None if self.last_round_at is None else round(time.time() - self.last_round_at, 1)
        return {"backlog": self.backlog,
                "oldest_age_s": None if self.oldest_age_s is None else round(
                    self.oldest_age_s, 1),
                "last_error": self.last_error, "last_round_s_ago": age,
                "published": self.published}


class OutboxPublisher:
    def __init__(self, settings: Settings, driver: Driver, cypher: CypherLibrary) -> None:
        self.settings, self.driver, self.cypher = settings, driver, cypher
        self.status = OutboxStatus()
        self._task: asyncio.Task[None] | None = None
        # kept across rounds: a new connection every second cost a SCRAM handshake each
        self._pg: psycopg.Connection[Any] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="outbox")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._close()

    def _connection(self) -> psycopg.Connection[Any]:
        if self._pg is None or self._pg.closed:
            self._pg = psycopg.connect(self.settings.postgres_dsn, connect_timeout=3,
                                       autocommit=True)
        return self._pg

    def _close(self) -> None:
        if self._pg is not None:
            with contextlib.suppress(psycopg.Error):
                self._pg.close()
            self._pg = None

    def _backlog(self) -> tuple[int, float | None]:
        try:
            return events.backlog(self.settings, self._connection())
        except psycopg.Error:
            self._close()  # a broken connection: the next round opens another
            raise

    async def _run(self) -> None:
        delay, rounds = INTERVAL, 0
        while True:
            try:
                await asyncio.to_thread(self.round, rounds % RECONCILE_EVERY == 0)
                delay = INTERVAL
            except Exception as exc:  # noqa: BLE001 - a part is down: retry with backoff
                self.status.last_error = f"{type(exc).__name__}: {exc}"[:300]
                delay = min(delay * 2, MAX_BACKOFF)
            rounds += 1
            await asyncio.sleep(delay)

    def round(self, with_reconcile: bool) -> int:
        """One round (blocking): reconcile, publish, refresh the status."""
        if with_reconcile:
            reconcile(self.settings.postgres_dsn, self.driver, self.cypher, wait=False)
        self.status.backlog, self.status.oldest_age_s = self._backlog()
        sent = events.drain_outbox(self.settings) if self.status.backlog else 0
        self.status.published += sent
        if sent:
            self.status.backlog, self.status.oldest_age_s = self._backlog()
        self.status.last_error = None
        self.status.last_round_at = time.time()
        return sent
