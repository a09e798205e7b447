"""Start a read's computation while its cache lookup is in flight, when lookups of that kind
mostly miss: a miss then costs the longer of the lookup and the computation instead of both.

Whether a kind mostly misses is a moving average of its recent lookups in this process
(``EWMA_WEIGHT``), starting at "always misses"; at or above ``START_ABOVE`` the computation
starts with the lookup. When the lookup hits after all, the early computation is left to
finish and its answer is dropped (cancelling a Neo4j read mid-flight would cost its
connection); a kind whose lookups mostly hit does not start early, so a warm cache pays no
extra reads. Only the kinds named start early: reads of one round trip (the direct
endpoints), where the lookup is a fair share of the time and a dropped answer is cheap — not
``/search``, whose computation is many times its lookup. A lookup that fails (Redis down)
uses the early computation; a request cancelled during the lookup cancels it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

START_ABOVE = 0.5  # miss rate from which a kind's computation starts with its lookup
EWMA_WEIGHT = 0.1  # weight of the newest lookup in the miss rate

Compute = Callable[[], Awaitable[dict[str, Any]]]
Early = asyncio.Future[dict[str, Any]]


@dataclass
class EarlyStats:
    started: int = 0  # computations started with their lookup
    unused: int = 0  # ... whose lookup hit: the answer was dropped


class EarlyStart:
    def __init__(self, kinds: Iterable[str] = ()) -> None:
        self.kinds = frozenset(kinds)  # the kinds that may start early (cheap reads)
        self.miss_rate: dict[str, float] = {}
        self.stats = EarlyStats()
        self._unused: set[Early] = set()  # held until done (the loop keeps weak references)

    def start(self, kind: str, compute: Compute) -> Early | None:
        """The computation, started now when ``kind`` mostly misses; else None."""
        if kind not in self.kinds or self.miss_rate.get(kind, 1.0) < START_ABOVE:
            return None
        self.stats.started += 1
        return asyncio.ensure_future(compute())

    def learn(self, kind: str, missed: bool) -> None:
        rate = self.miss_rate.get(kind, 1.0)
        self.miss_rate[kind] = rate + EWMA_WEIGHT * (float(missed) - rate)

    def drop(self, early: Early | None) -> None:
        """The lookup hit: ``early`` finishes unobserved."""
        if early is None:
            return
        self.stats.unused += 1
        self._unused.add(early)
        early.add_done_callback(self._finished)

    def cancel(self, early: Early | None) -> None:
        """The request ended during the lookup (cancelled, or a bug)."""
        if early is not None and not early.done():
            early.cancel()
            self.drop(early)

    def _finished(self, early: Early) -> None:
        self._unused.discard(early)
        if not early.cancelled():
            early.exception()  # read, so asyncio does not report it as never retrieved
