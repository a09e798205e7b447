"""The query cache starts a read's computation with its lookup while that kind mostly misses
(substrate/cache_early.py), on the stack's real Redis: the same answers and stores as a
lookup-first cache, a hit drops the early answer, a warm kind stops starting early, an
error of the computation reaches the caller, a dead Redis uses the early answer."""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest
import redis

from substrate.cache import QueryCache, tenant_prefix
from substrate.cache_early import START_ABOVE
from substrate.errors import NotFound
from substrate.retrieval.scope import latest_scope
from substrate.settings import Settings
from tests.support.local_procs import free_port

pytestmark = pytest.mark.integration
KINDS = ("dependencies", "ownership", "memory")


@pytest.fixture
def tenant(stack: Settings) -> Any:
    name = f"t-early-{uuid.uuid4().hex[:8]}"
    yield name
    rds = redis.Redis.from_url(stack.redis_url)
    keys = list(rds.scan_iter(match=f"{tenant_prefix(name)}*"))
    if keys:
        rds.delete(*keys)


def test_a_miss_computes_once_and_stores_then_hits_stop_early_starts(
    stack: Settings, tenant: str
) -> None:
    calls: list[str] = []

    def compute(service: str) -> Any:
        async def run() -> dict[str, Any]:
            calls.append(service)
            await asyncio.sleep(0.01)  # longer than the lookup: the lookup answers first
            return {"service": {"ceid": f"service:{service}"}, "n": len(calls)}
        return run

    async def scenario() -> None:
        cache = QueryCache.from_settings(stack, defer_stores=True, early_start=KINDS)
        scope = latest_scope(tenant, 5, 5)
        try:
            first, cached = await cache.get_or_compute("dependencies", {"s": "a"}, scope,
                                                       compute("a"))
            assert not cached and first["n"] == 1 and first["cache"]["status"] == "storing"
            await cache.drain()
            assert cache.early.stats.started == 1 and cache.early.stats.unused == 0
            # a hit while the kind still mostly misses: computed early, answer dropped
            again, cached = await cache.get_or_compute("dependencies", {"s": "a"}, scope,
                                                       compute("a"))
            assert cached and again["n"] == 1 and again["cache"]["status"] == "hit"
            assert cache.early.stats.unused == 1
            # hits bring the miss rate under START_ABOVE: no early start any more
            while cache.early.miss_rate["dependencies"] >= START_ABOVE:
                await cache.get_or_compute("dependencies", {"s": "a"}, scope, compute("a"))
            started, before = cache.early.stats.started, len(calls)
            hit, cached = await cache.get_or_compute("dependencies", {"s": "a"}, scope,
                                                     compute("a"))
            assert cached and hit["n"] == 1
            await asyncio.sleep(0.05)
            assert cache.early.stats.started == started and len(calls) == before
            # another kind still starts early; its miss is computed once
            other, cached = await cache.get_or_compute("ownership", {"s": "b"}, scope,
                                                       compute("b"))
            assert not cached and calls.count("b") == 1
            assert cache.early.stats.started == started + 1
        finally:
            await cache.aclose()

    asyncio.run(scenario())


def test_an_error_of_the_early_computation_reaches_the_caller(
    stack: Settings, tenant: str
) -> None:
    async def missing() -> dict[str, Any]:
        raise NotFound("no Service 'nope'")

    async def scenario() -> None:
        cache = QueryCache.from_settings(stack, defer_stores=True, early_start=KINDS)
        try:
            with pytest.raises(NotFound):
                await cache.get_or_compute("memory", {"s": "nope"}, latest_scope(tenant, 5, 5),
                                           missing)
            assert cache.early.stats.started == 1
        finally:
            await cache.aclose()

    asyncio.run(scenario())


def test_redis_down_answers_from_the_early_computation(stack: Settings, tenant: str) -> None:
    dead = Settings.from_env({**os.environ, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    calls: list[int] = []

    async def compute() -> dict[str, Any]:
        calls.append(1)
        return {"n": len(calls)}

    async def scenario() -> list[dict[str, Any]]:
        cache = QueryCache.from_settings(dead, defer_stores=True, early_start=KINDS)
        try:
            return [(await cache.get_or_compute("dependencies", {}, latest_scope(tenant, 5, 5),
                                                compute))[0] for _ in range(2)]
        finally:
            await cache.aclose()

    out = asyncio.run(scenario())
    assert [o["n"] for o in out] == [1, 2] and len(calls) == 2
    assert all(o["cache"]["status"] == "unavailable" for o in out)


def test_a_kind_not_named_never_starts_early(stack: Settings, tenant: str) -> None:
    async def compute() -> dict[str, Any]:
        return {"answer": "x"}

    async def scenario() -> None:
        cache = QueryCache.from_settings(stack, defer_stores=True, early_start=KINDS)
        try:
            out, cached = await cache.get_or_compute("search", {"q": "x"},
                                                     latest_scope(tenant, 5, 5), compute)
            assert not cached and out["answer"] == "x"
            assert cache.early.stats.started == 0
        finally:
            await cache.aclose()

    asyncio.run(scenario())
