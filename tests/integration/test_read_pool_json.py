"""The gateway's PostgreSQL pool reads json/jsonb through orjson where that gives the
standard library's value, and through json where it would not (an integer beyond 64 bits)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from psycopg import pq

from substrate.jsonwire import exact_loads
from substrate.retrieval.service import ReadService
from substrate.services import open_services
from substrate.settings import Settings

pytestmark = pytest.mark.integration

DOCUMENTS = [
    '{"name": "checkout", "tier": 1, "w": 0.25, "tags": ["a", "é"], "owner": null}',
    '{"id": 123456789012345678901234567890, "n": -9223372036854775808}',
]


def test_pooled_connections_read_json_with_the_standard_librarys_values(
        stack: Settings) -> None:
    async def run() -> list[Any]:
        services = open_services(stack, check_templates=False)
        read = ReadService(services)
        try:
            await read.open()
            assert read.pool is not None
            async with read.pool.connection() as conn:
                for fmt in (pq.Format.TEXT, pq.Format.BINARY):
                    loader = conn.adapters.get_loader(conn.adapters.types["jsonb"].oid, fmt)
                    assert loader is not None and loader._loads is exact_loads
                out = []
                for text in DOCUMENTS:
                    cur = await conn.execute("SELECT %s::jsonb, %s::json", (text, text))
                    out.append(await cur.fetchone())
                return out
        finally:
            await read.aclose()
            await services.aclose()

    rows = asyncio.run(run())
    assert rows[0] == ({"name": "checkout", "tier": 1, "w": 0.25, "tags": ["a", "é"],
                        "owner": None},) * 2
    big = {"id": 123456789012345678901234567890, "n": -9223372036854775808}
    assert rows[1] == (big, big) and isinstance(rows[1][0]["id"], int)
