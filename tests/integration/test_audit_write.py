"""The policy audit's batch write (``record_many``: one JSON array per batch) keeps every
field of every decision as given, in order, whatever the text holds."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from substrate.security.audit import PolicyDecision, record_many
from substrate.settings import Settings


def _written(settings: Settings, request_ids: list[str]) -> list[tuple[Any, ...]]:
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT principal, request_id, tenant_id, action, decision, reason, detail "
            "FROM policy_audit WHERE request_id = ANY(%s) ORDER BY id",
            (request_ids,)).fetchall()


def test_a_batch_keeps_every_field_in_order(stack: Settings) -> None:
    run = uuid.uuid4().hex[:8]
    decisions = [
        PolicyDecision("key:a", f"audit-{run}-1", "read:/ownership/{service_id}", "allowed",
                       "role reader may read", "acme",
                       {"clearance": "internal", "resource": "/ownership/checkout",
                        "engine": "builtin"}),
        # no tenant, quotes, backslashes, a newline and non-ASCII text
        PolicyDecision("key:b \"quoted\"", f"audit-{run}-2", "authenticate", "denied",
                       "bad key: \\x00-ish 'text'\nsecond line, naïve café ✓", None, {}),
        # a redaction's detail: nested counts (keys that are not strings are written as text)
        PolicyDecision("jwt:c", f"audit-{run}-3", "read:/search", "redacted",
                       "PII redacted: email x2", "t-2",
                       {"redacted": {"email": 2, 7: "seven"}, "list": [1, None, True]}),
    ]

    async def write() -> None:
        async with AsyncConnectionPool(stack.postgres_dsn, min_size=1, max_size=1,
                                       open=False) as pool:
            await record_many(pool, decisions)
            await record_many(pool, [])  # nothing to write: no statement

    asyncio.run(write())
    rows = _written(stack, [d.request_id for d in decisions])
    assert rows == [
        ("key:a", f"audit-{run}-1", "acme", "read:/ownership/{service_id}", "allowed",
         "role reader may read",
         {"clearance": "internal", "resource": "/ownership/checkout", "engine": "builtin"}),
        ("key:b \"quoted\"", f"audit-{run}-2", None, "authenticate", "denied",
         "bad key: \\x00-ish 'text'\nsecond line, naïve café ✓", {}),
        ("jwt:c", f"audit-{run}-3", "t-2", "read:/search", "redacted",
         "PII redacted: email x2",
         {"redacted": {"email": 2, "7": "seven"}, "list": [1, None, True]}),
    ]
