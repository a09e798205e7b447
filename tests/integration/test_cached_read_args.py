"""``cached_read`` keys a call by its arguments however they were passed (positionally, by
name, defaults left out) and still refuses a wrong call as Python would; on the stack's
Redis through a real QueryCache."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis

from substrate.cache import QueryCache, cached_read, tenant_prefix
from substrate.retrieval.scope import latest_scope
from substrate.settings import Settings

pytestmark = pytest.mark.integration
TENANT = f"t-args-{uuid.uuid4().hex[:8]}"
SCOPE = latest_scope(TENANT, 3, 3)


class Reads:
    def __init__(self, cache: QueryCache) -> None:
        self.cache = cache
        self.computed = 0

    @cached_read("memory")
    async def memory(self, scope: Any, service_id: str, limit: int = 20,
                     question: str | None = None) -> dict[str, Any]:
        self.computed += 1
        return {"service_id": service_id, "limit": limit, "question": question}


@pytest.fixture
def cache(stack: Settings) -> Any:
    yield stack
    rds = redis.Redis.from_url(stack.redis_url)
    keys = list(rds.scan_iter(match=f"{tenant_prefix(TENANT)}*"))
    if keys:
        rds.delete(*keys)


def test_every_way_of_passing_the_same_arguments_is_one_entry(cache: Settings) -> None:
    async def calls() -> tuple[list[dict[str, Any]], int]:
        reads = Reads(QueryCache.from_settings(cache))
        try:
            out = [await reads.memory(SCOPE, "checkout"),
                   await reads.memory(SCOPE, "checkout", 20),
                   await reads.memory(SCOPE, service_id="checkout", limit=20),
                   await reads.memory(scope=SCOPE, service_id="checkout", question=None)]
            return out, reads.computed
        finally:
            await reads.cache.aclose()

    answers, computed = asyncio.run(calls())
    assert computed == 1 and len({a["cache"]["key"] for a in answers}) == 1
    assert [a["cache"]["hit"] for a in answers] == [False, True, True, True]
    assert all(a["limit"] == 20 and a["question"] is None for a in answers)


@pytest.mark.parametrize("args, kwargs", [
    ((SCOPE,), {}), ((SCOPE, "a", 1, "q", "extra"), {}), ((SCOPE, "a"), {"service_id": "b"}),
    ((SCOPE, "a"), {"nope": 1}),
])
def test_a_wrong_call_is_a_type_error(cache: Settings, args: tuple[Any, ...],
                                      kwargs: dict[str, Any]) -> None:
    async def call() -> None:
        reads = Reads(QueryCache.from_settings(cache))
        try:
            await reads.memory(*args, **kwargs)
        finally:
            await reads.cache.aclose()

    with pytest.raises(TypeError):
        asyncio.run(call())
