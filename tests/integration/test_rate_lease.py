"""Rate-limit leases (issue 12, thin hot path): a replica takes a caller's requests from the
shared GCRA in Redis a few at a time, so most requests need no Redis round trip, and the
limit still holds across replicas (two limiters on the stack's Redis, one caller)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from substrate.cache import redis_client
from substrate.security.limits import RateLimiter
from substrate.settings import Settings

pytestmark = pytest.mark.integration


class Counted:
    """Counts the limiter scripts' Redis calls (one per lease taken)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.calls = 0
        script = limiters[0].script

        async def counted(keys: list[str], args: list[int]) -> Any:
            self.calls += 1
            return await script(keys=keys, args=args)

        for limiter in limiters:
            limiter.script = counted  # type: ignore[assignment]


def test_leases_keep_the_shared_limit_across_replicas(stack: Settings) -> None:
    caller = f"test-lease-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[list[bool], int]:
        client = redis_client(stack, timeout=2.0)
        try:
            a = RateLimiter(client, per_minute=6, burst=10, lease=4)
            b = RateLimiter(client, per_minute=6, burst=10, lease=4)
            counter = Counted(a, b)
            allowed = []
            for i in range(14):  # alternate replicas: 10 fit the burst, then refusals
                decision = await (a if i % 2 == 0 else b).check(caller)
                allowed.append(decision.allowed)
            return allowed, counter.calls
        finally:
            await client.aclose()

    allowed, calls = asyncio.run(scenario())
    assert allowed.count(True) == 10 and allowed[-2:] == [False, False], allowed
    assert calls < 14  # leases: fewer Redis round trips than requests


def test_a_refusal_names_when_to_retry(stack: Settings) -> None:
    caller = f"test-lease-{uuid.uuid4().hex[:8]}"

    async def scenario() -> list[float]:
        client = redis_client(stack, timeout=2.0)
        try:
            limiter = RateLimiter(client, per_minute=60, burst=3, lease=5)
            return [(await limiter.check(caller)).retry_after_s for _ in range(4)]
        finally:
            await client.aclose()

    waits = asyncio.run(scenario())
    assert waits[:3] == [0.0, 0.0, 0.0] and 0 < waits[3] <= 1.0, waits


def test_a_lease_outlasts_a_pause_of_a_second(stack: Settings) -> None:
    """A caller who asks now and then spends its lease across the pauses (the requests were
    charged when it was granted): no Redis round trip per request."""
    caller = f"test-lease-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[list[bool], int]:
        client = redis_client(stack, timeout=2.0)
        try:
            limiter = RateLimiter(client, per_minute=600, burst=100, lease=5)
            counter = Counted(limiter)
            allowed = []
            for _ in range(3):
                allowed.append((await limiter.check(caller)).allowed)
                await asyncio.sleep(1.1)
            return allowed, counter.calls
        finally:
            await client.aclose()

    allowed, calls = asyncio.run(scenario())
    assert allowed == [True, True, True] and calls == 1
