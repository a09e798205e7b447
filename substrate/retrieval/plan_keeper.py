"""Keep the plans of the gateway's reads ready in Neo4j's query cache, off the request path.

Planning one of the retrieval templates costs Neo4j 0.13-0.5 s (measured on this machine:
``retrieval/direct_impact`` 0.48 s, ``retrieval/direct_dependencies`` 0.31 s), against 2-5 ms
to run it from a cached plan. Neo4j plans a query again when its plan is gone (a restart of
Neo4j, ``db.clearQueryCaches()``, the cache full) or stale: once the statistics behind it
(label and relationship counts) moved by more than ``dbms.cypher.statistics_divergence_threshold``
and ``dbms.cypher.min_replan_interval`` (10 s) has passed, the next query to use it plans it
again. After a large import every template is replanned that way, each by the first request
that uses it: at the 2M-edge size of ``bench_scale`` the first direct requests took 200-310 ms
and a first ``/search`` several seconds, while the ones after took 2-10 ms.

Neo4j's cache holds a plan per query text *and* per parameter shape: each parameter's type
and, for strings and lists, its size in powers of ten (measured on Neo4j 5.26: a tenant
name of 16 characters and one of 5 are planned apart, 2 and 10 share a plan, 11 and 100
too; lists alike). So each read the gateway runs through
:class:`~substrate.retrieval.graph_queries.GraphReader` is remembered here by its text and
that shape (:func:`shape`), with its latest parameters, the most recent ``RECENT`` of them;
every ``interval`` seconds :meth:`PlanKeeper.refresh` runs each again as the gateway ran it,
but for a tenant that holds nothing: ``$tenant`` replaced by as many NUL characters
(:func:`no_tenant`: the same size, so the same plan; no tenant is named so). Every template
is scoped to ``$tenant``, so its index seeks find nothing and a run costs ~1-5 ms, and the
plan it leaves in the cache is the one the next request of that shape uses. A stale plan is
thus replanned by the keeper, not by a user's request. A query that fails there (a template
that would not run without its tenant) is forgotten, never retried in a loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from neo4j import AsyncDriver
from neo4j.exceptions import DriverError, Neo4jError

log = logging.getLogger(__name__)

RECENT = 64  # (text, shape) pairs kept: the direct endpoints and /search's strategies
SLOW_S = 0.05  # a refresh that took longer planned the query (it was gone or stale)


def _size(n: int) -> int:
    """A string's or list's size as the plan cache tells them apart (powers of ten)."""
    if n <= 10:
        return -1 if n == 0 else 0 if n == 1 else 1
    return 2 if n <= 100 else math.ceil(math.log10(n))


_SIZED = (str, list, tuple)


def shape(params: dict[str, Any]) -> tuple[tuple[str, type, int], ...]:
    """What of ``params`` tells Neo4j's cached plans apart: each one's type, and the size
    class of the strings and lists (a read's parameters come in its call's order)."""
    return tuple((k, type(v), _size(len(v)) if type(v) in _SIZED else 0)
                 for k, v in params.items())


def no_tenant(tenant: Any) -> str:
    """A tenant name of the same size as ``tenant`` that no tenant has (NUL characters)."""
    return "\0" * len(tenant) if isinstance(tenant, str) else "\0"


@dataclass
class KeeperStats:
    refreshes: int = 0  # rounds
    queries: int = 0  # queries run by the rounds
    replanned: int = 0  # of them, those that took more than SLOW_S (planned again)
    forgotten: int = 0  # queries that failed without their tenant
    last_round_s: float = 0.0


class PlanKeeper:
    """The recent reads' plans, run again every ``interval`` seconds (0: never)."""

    def __init__(self, driver: AsyncDriver, interval: float, recent: int = RECENT) -> None:
        self.driver = driver
        self.interval = interval
        self.recent = recent
        self.stats = KeeperStats()
        self._queries: OrderedDict[tuple[str, Any], dict[str, Any]] = OrderedDict()
        self._task: asyncio.Task[None] | None = None

    def seen(self, query: str, params: dict[str, Any]) -> None:
        """A read ran ``query`` with ``params`` (kept by reference: a read's parameters are
        not changed after it ran). On the request path: its shape and a dictionary update."""
        queries, key = self._queries, (query, shape(params))
        if key in queries:
            queries.move_to_end(key)
        elif len(queries) >= self.recent:
            queries.popitem(last=False)
        queries[key] = params

    def remembered(self) -> list[tuple[str, dict[str, Any]]]:
        """The (query, parameters) pairs a refresh runs, oldest first."""
        return [(query, params) for (query, _), params in self._queries.items()]

    async def refresh(self) -> int:
        """Run every remembered query once for ``NO_TENANT``; returns how many ran."""
        started, ran = time.monotonic(), 0
        for key, params in list(self._queries.items()):
            query, t = key[0], time.monotonic()
            try:
                async with self.driver.session(default_access_mode="READ") as session:
                    result = await session.run(
                        query, {**params, "tenant": no_tenant(params.get("tenant"))})
                    await result.consume()
            except (Neo4jError, DriverError, OSError) as exc:
                if isinstance(exc, Neo4jError) and not exc.is_retryable():
                    self._queries.pop(key, None)  # it needs its tenant: not ours to keep
                    self.stats.forgotten += 1
                    log.info("plan keeper forgot a query: %s", exc)
                    continue
                break  # Neo4j unreachable: the next round tries again
            ran += 1
            if time.monotonic() - t > SLOW_S:
                self.stats.replanned += 1
        self.stats.refreshes += 1
        self.stats.queries += ran
        self.stats.last_round_s = round(time.monotonic() - started, 3)
        return ran

    def start(self) -> None:
        if self.interval > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(),
                                                                name="plan-keeper")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.refresh()
            except Exception:  # noqa: BLE001 - a background helper never stops the gateway
                log.exception("plan keeper round failed")
