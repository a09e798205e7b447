"""A background task that follows NATS for the life of a process and reconnects on its own.

nats-py retries a refused first connect forever with ``max_reconnect_attempts=0`` and for
minutes with the default; :func:`connect_once` tries one more time, then raises, and never
reconnects a dropped connection (``allow_reconnect=False``): the :class:`Follower` loop does,
with a doubling back-off, so its owner sees every outage (and can stop trusting what it
learnt from the subject until it is back).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import nats
from nats.aio.client import Client as NatsClient

from substrate.settings import Settings

BACKOFF_S = (0.2, 2.0)  # first and longest wait between reconnects
CONNECT_TIMEOUT_S = 5.0

ErrorCallback = Callable[[Exception], Awaitable[None]]


async def connect_once(settings: Settings, error_cb: ErrorCallback) -> NatsClient:
    client: NatsClient = await asyncio.wait_for(nats.connect(
        settings.nats_servers, connect_timeout=2, allow_reconnect=False,
        max_reconnect_attempts=1, reconnect_time_wait=0.05, error_cb=error_cb,
    ), timeout=CONNECT_TIMEOUT_S)
    return client


class Follower:
    """Runs ``follow`` (connect, subscribe, work until the connection ends) again and again;
    ``on_failure`` hears why each round ended and whether it had come up (then the next
    round starts soon, else the wait doubles up to ``BACKOFF_S[1]``)."""

    def __init__(self, name: str, follow: Callable[[], Awaitable[bool]],
                 on_failure: Callable[[BaseException], None]) -> None:
        self.name = name
        self._follow = follow  # returns (or raises) when the connection is gone; True: was up
        self._on_failure = on_failure
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        wait = BACKOFF_S[0]
        while True:
            came_up = False
            try:
                came_up = await self._follow()
            except Exception as exc:  # noqa: BLE001 - NATS down or gone: back off, reconnect
                self._on_failure(exc)
            if came_up:
                wait = BACKOFF_S[0]
            await asyncio.sleep(wait)
            wait = min(wait * 2, BACKOFF_S[1])
