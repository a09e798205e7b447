"""The snapshot clock's Neo4j bookmarks (cross-process read-your-writes): kept per tenant
for its newest snapshot, from ``graph.updated`` events, and offered only at that snapshot."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from nats.aio.msg import Msg

from substrate.retrieval.bookmarks import BookmarkStats
from substrate.retrieval.snapshot_clock import SnapshotClock
from substrate.settings import Settings


async def _versions(tenants: list[str]) -> tuple[int, dict[str, int]]:
    return 40, {t: 7 for t in tenants}


def _event(clock: SnapshotClock, **event: Any) -> None:
    msg = Msg(_client=None, subject="graph.updated", data=json.dumps(event).encode())  # type: ignore[arg-type]
    asyncio.run(clock._on_event(msg))


def test_bookmarks_of_the_newest_snapshot_only() -> None:
    clock = SnapshotClock(Settings.from_env(), _versions)
    clock.observe("a", 5, ("FB:five",))
    assert clock.bookmarks_for("a", 5) == ("FB:five",)
    assert clock.bookmarks_for("a", 4) == () and clock.bookmarks_for("b", 5) == ()
    clock.observe("a", 3, ("FB:three",))  # a late, older event never replaces them
    assert clock.bookmarks_for("a", 5) == ("FB:five",) and clock.bookmarks_for("a", 3) == ()
    clock.observe("a", 8)  # newer snapshot without bookmarks: none known (read as before)
    assert clock.bookmarks_for("a", 8) == () and clock.bookmarks_for("a", 5) == ()
    clock.learn("a", 9, 9)  # found in PostgreSQL: a version no event brought, no bookmark
    assert clock.bookmarks_for("a", 9) == ()
    assert clock.stats.events_with_bookmarks == 2


def test_events_carry_bookmarks_and_bad_ones_are_dropped() -> None:
    reads = BookmarkStats(reads=3, refused=1)
    clock = SnapshotClock(Settings.from_env(), _versions, reads=reads)
    _event(clock, tenant_id="t", snapshot_version=12, changed_ids=[],
           bookmarks=["FB:x", 7, None, "FB:y"])  # only strings are bookmarks
    assert clock.tenants == {"t": 12} and clock.bookmarks_for("t", 12) == ("FB:x", "FB:y")
    _event(clock, tenant_id="t", snapshot_version=13, changed_ids=[])  # an older publisher
    assert clock.tenants == {"t": 13} and clock.bookmarks_for("t", 13) == ()
    _event(clock, tenant_id="t", snapshot_version=14, bookmarks="FB:not-a-list")
    assert clock.tenants == {"t": 14} and clock.bookmarks_for("t", 14) == ()
    stats = clock.to_dict()
    assert stats["events"] == 3 and stats["events_with_bookmarks"] == 1
    assert stats["bookmarked_reads"]["reads"] == 3 and stats["bookmarked_reads"]["refused"] == 1
