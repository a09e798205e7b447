"""The snapshot clock's bookkeeping (the live path runs against NATS in
tests/integration/test_snapshot_clock.py)."""

from __future__ import annotations

import asyncio

from substrate.retrieval.snapshot_clock import SnapshotClock
from substrate.settings import Settings


async def _versions(tenants: list[str]) -> tuple[int, dict[str, int]]:
    return 40, {t: 7 for t in tenants}


async def _down(tenants: list[str]) -> tuple[int, dict[str, int]]:
    raise OSError("connection refused")


def test_versions_only_move_forward() -> None:
    clock = SnapshotClock(Settings.from_env(), _versions)
    clock.learn("a", 10, 4)
    clock.observe("a", 12)
    clock.observe("b", 11)  # an event proves the tenant has that snapshot
    clock.learn("a", 9, 3)  # a slower PostgreSQL answer never moves it back
    assert clock.latest == 12 and clock.tenants == {"a": 12, "b": 11}
    asyncio.run(clock.refresh())
    assert clock.latest == 40 and clock.tenants == {"a": 12, "b": 11}
    assert clock.stats.events == 2 and clock.stats.refreshes == 1


def test_not_subscribed_means_ask_postgres() -> None:
    clock = SnapshotClock(Settings.from_env(), _versions)
    clock.learn("a", 10, 4)
    asyncio.run(clock.refresh())
    assert not clock.live  # refreshed, but no subscription: an event could be missed
    assert clock.read("a") is None and clock.read("unseen") is None
    assert clock.stats.fallbacks == 2 and clock.stats.served == 0


def test_a_failed_refresh_is_counted_and_keeps_the_versions() -> None:
    clock = SnapshotClock(Settings.from_env(), _down)
    clock.learn("a", 10, 4)
    asyncio.run(clock.refresh())
    stats = clock.to_dict()
    assert stats["refresh_errors"] == 1 and stats["refreshes"] == 0
    assert "connection refused" in stats["last_error"]
    assert stats["live"] is False and clock.tenants == {"a": 4}
