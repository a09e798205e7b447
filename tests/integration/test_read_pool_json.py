"""The gateway's PostgreSQL pool reads json/jsonb through orjson where that gives the
standard library's value, and through json where it would not (an integer beyond 64 bits);
and it plans every execution of a prepared statement for its values."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from psycopg import AsyncConnection, pq

from substrate.jsonwire import exact_loads
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings

pytestmark = pytest.mark.integration

DOCUMENTS = [
    '{"name": "checkout", "tier": 1, "w": 0.25, "tags": ["a", "é"], "owner": null}',
    '{"id": 123456789012345678901234567890, "n": -9223372036854775808}',
]


T = TypeVar("T")


def on_a_pooled_connection(stack: Settings,
                           work: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
    """``work`` on one connection of the gateway's pool (``ReadService.open``)."""
    async def run() -> T:
        services = open_services(stack, check_templates=False)
        read = ReadService(services)
        try:
            await read.open()
            assert read.pool is not None
            async with read.pool.connection() as conn:
                return await work(conn)
        finally:
            await read.aclose()
            await services.aclose()
    return asyncio.run(run())


def test_pooled_connections_read_json_with_the_standard_librarys_values(
        stack: Settings) -> None:
    async def work(conn: AsyncConnection[Any]) -> list[Any]:
        for fmt in (pq.Format.TEXT, pq.Format.BINARY):
            loader = conn.adapters.get_loader(conn.adapters.types["jsonb"].oid, fmt)
            assert loader is not None and loader._loads is exact_loads
        out = []
        for text in DOCUMENTS:
            cur = await conn.execute("SELECT %s::jsonb, %s::json", (text, text))
            out.append(await cur.fetchone())
        return out

    rows = on_a_pooled_connection(stack, work)
    assert rows[0] == ({"name": "checkout", "tier": 1, "w": 0.25, "tags": ["a", "é"],
                        "owner": None},) * 2
    big = {"id": 123456789012345678901234567890, "n": -9223372036854775808}
    assert rows[1] == (big, big) and isinstance(rows[1][0]["id"], int)


def test_pooled_connections_plan_each_execution_for_its_values(stack: Settings) -> None:
    """A statement psycopg prepares (run 5 times) keeps being planned for its values: a
    generic plan of a change-log window read of a 2M-edge tenant took 1.2 s, a custom one
    80 ms. The window read itself is timed in ``bench_scale`` (UC-06 at L)."""
    async def work(conn: AsyncConnection[Any]) -> tuple[str, str, int]:
        mode = await (await conn.execute("SHOW plan_cache_mode")).fetchone()
        timeout = await (await conn.execute("SHOW statement_timeout")).fetchone()
        for _ in range(8):  # past psycopg's prepare threshold
            await conn.execute("SELECT count(*) FROM snapshots WHERE tenant_id = %s",
                               (stack.tenant,))
        prepared = await (await conn.execute(
            "SELECT count(*) FROM pg_prepared_statements")).fetchone()
        assert mode and timeout and prepared
        return str(mode[0]), str(timeout[0]), int(prepared[0])

    mode, timeout, prepared = on_a_pooled_connection(stack, work)
    assert mode == "force_custom_plan" and timeout == "5s"
    assert prepared >= 1  # statements are still prepared (parsed once); only plans differ
