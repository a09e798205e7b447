"""Reads that are handed no pool use the pool a long-lived service shares on their event loop
(no PostgreSQL connection per request); without one, or on another loop, they connect anew."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from psycopg_pool import AsyncConnectionPool

from substrate.retrieval.scope import pg_connection, share_pool, shared_pool, unshare_pool
from substrate.settings import Settings


async def _backend(settings: Settings) -> int:
    async with pg_connection(settings) as conn:
        row = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
    assert row is not None
    return int(row[0])


def _in_another_loop(settings: Settings) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def run() -> None:
        async def probe() -> None:
            out["pool"] = shared_pool(settings)
            out["pid"] = await _backend(settings)

        asyncio.run(probe())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    return out


def test_reads_use_the_pool_shared_on_their_loop_and_only_there(stack: Settings) -> None:
    async def scenario() -> None:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            stack.postgres_dsn, min_size=1, max_size=1, open=False)
        await pool.open()
        try:
            async with pool.connection() as conn:
                row = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
            assert row is not None
            pooled = int(row[0])
            alone = await _backend(stack)
            assert alone != pooled  # nothing shared yet: a connection of its own
            share_pool(stack.postgres_dsn, pool)
            assert shared_pool(stack) is pool
            assert [await _backend(stack) for _ in range(3)] == [pooled] * 3
            other = await asyncio.to_thread(_in_another_loop, stack)
            assert other["pool"] is None and other["pid"] != pooled
            unshare_pool(pool)
            assert shared_pool(stack) is None
            assert await _backend(stack) != pooled
        finally:
            unshare_pool(pool)
            await pool.close()

    asyncio.run(scenario())
