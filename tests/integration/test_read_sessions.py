"""Read sessions kept between reads (``substrate/retrieval/bookmarks.py``: ``ReadSessions``):
one session serves consecutive reads, concurrent reads each get their own, a failed or
cancelled read's session is never kept, at most ``limit`` wait idle, and a read still sees
this process's own writes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from neo4j import Query
from neo4j.exceptions import CypherSyntaxError

from substrate.retrieval.bookmarks import ReadSessions, read
from substrate.retrieval.cypher_run import FETCH_SIZE, QueryTooLarge, bounded_read
from substrate.services import Services, open_services
from substrate.settings import Settings

pytestmark = pytest.mark.integration

T = TypeVar("T")
ONE = "RETURN $x AS x"


def _with_services(stack: Settings, scenario: Callable[[Services], Awaitable[T]]) -> T:
    async def run() -> T:
        services = open_services(stack, check_templates=False)
        try:
            return await scenario(services)
        finally:
            await services.aclose()

    return asyncio.run(run())


def test_consecutive_reads_share_one_session_and_concurrent_ones_do_not(
        stack: Settings) -> None:
    async def scenario(services: Services) -> dict[str, Any]:
        driver, sessions = services.async_driver, ReadSessions(limit=3)
        values = [(await read(driver, ONE, {"x": i}, sessions=sessions))[0]["x"]
                  for i in range(5)]
        after_sequential = sessions.idle
        kept = sessions._idle[0][1]
        await read(driver, ONE, {"x": 9}, sessions=sessions)
        reused = sessions._idle[0][1] is kept
        many = await asyncio.gather(*(read(driver, "CALL apoc.util.sleep(50) RETURN $x AS x",
                                           {"x": i}, sessions=sessions) for i in range(5)))
        after_concurrent = sessions.idle
        await sessions.aclose()
        return {"values": values, "after_sequential": after_sequential, "reused": reused,
                "many": [rows[0]["x"] for rows in many], "after_concurrent": after_concurrent,
                "closed": kept.closed(), "idle_at_end": sessions.idle}

    out = _with_services(stack, scenario)
    assert out["values"] == [0, 1, 2, 3, 4]
    assert out["after_sequential"] == 1 and out["reused"]
    assert out["many"] == [0, 1, 2, 3, 4]
    assert out["after_concurrent"] == 3  # five sessions at once; three kept (the limit)
    assert out["closed"] and out["idle_at_end"] == 0


def test_a_failed_or_cancelled_read_does_not_keep_its_session(stack: Settings) -> None:
    async def scenario(services: Services) -> dict[str, Any]:
        driver, sessions = services.async_driver, ReadSessions()
        await read(driver, ONE, {"x": 1}, sessions=sessions)
        good = sessions._idle[0][1]
        with pytest.raises(CypherSyntaxError):
            await read(driver, "RETURN $x AS", {"x": 1}, sessions=sessions)
        failed_closed, idle_after_failure = good.closed(), sessions.idle
        await read(driver, ONE, {"x": 2}, sessions=sessions)
        slow = sessions._idle[0][1]
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await read(driver, "CALL apoc.util.sleep(3000) RETURN 1 AS x", {},
                           sessions=sessions)
        idle_after_cancel = sessions.idle
        rows = await read(driver, ONE, {"x": 3}, sessions=sessions)  # the next read works
        fresh = sessions._idle[0][1] is not slow
        await sessions.aclose()
        return {"failed_closed": failed_closed, "idle_after_failure": idle_after_failure,
                "idle_after_cancel": idle_after_cancel, "x": rows[0]["x"], "fresh": fresh}

    out = _with_services(stack, scenario)
    assert out["failed_closed"] and out["idle_after_failure"] == 0
    assert out["idle_after_cancel"] == 0
    assert out["x"] == 3 and out["fresh"]


def test_a_kept_session_reads_this_process_s_own_writes(stack: Settings) -> None:
    tenant = f"t-read-sessions-{uuid.uuid4().hex[:8]}"

    async def scenario(services: Services) -> list[int]:
        driver, sessions = services.async_driver, ReadSessions()
        count = "MATCH (n:ReadSessionsProbe {tenant_id: $t}) RETURN count(n) AS n"
        seen = [(await read(driver, count, {"t": tenant}, sessions=sessions))[0]["n"]]
        try:
            for _ in range(3):  # written through the same driver: its bookmark manager
                await driver.execute_query("CREATE (:ReadSessionsProbe {tenant_id: $t})",
                                           {"t": tenant})
                seen.append((await read(driver, count, {"t": tenant},
                                        sessions=sessions))[0]["n"])
        finally:
            await driver.execute_query("MATCH (n:ReadSessionsProbe {tenant_id: $t}) DELETE n",
                                       {"t": tenant})
            await sessions.aclose()
        return seen

    assert _with_services(stack, scenario) == [0, 1, 2, 3]


def test_cypher_reads_cut_short_keep_a_clean_session(stack: Settings) -> None:
    """POST /cypher's reads (``bounded_read``) on kept sessions: a read cut at the row limit
    consumed the rest and leaves its session clean for the next read; one refused for its
    size is not kept."""
    async def scenario(services: Services) -> dict[str, Any]:
        driver, sessions = services.async_driver, ReadSessions(fetch_size=FETCH_SIZE)
        many = Query("UNWIND range(1, 500) AS x RETURN x")
        cut = await bounded_read(driver, many, {}, 10, 10**6, sessions)
        kept = sessions.idle
        whole = await bounded_read(driver, many, {}, 1000, 10**6, sessions)
        with pytest.raises(QueryTooLarge):
            await bounded_read(driver, Query("RETURN range(1, 1000) AS big"), {}, 10, 100,
                               sessions)
        idle_after_refusal = sessions.idle
        await sessions.aclose()
        return {"cut": cut, "kept": kept, "whole": whole, "refused": idle_after_refusal}

    out = _with_services(stack, scenario)
    assert out["cut"] == (["x"], [[x] for x in range(1, 11)], "rows") and out["kept"] == 1
    assert out["whole"] == (["x"], [[x] for x in range(1, 501)], None)
    assert out["refused"] == 0
