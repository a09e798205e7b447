"""The policy step's audit batch: a full queue drops (and counts) rather than grows; the
rows themselves are written to PostgreSQL in tests/integration/test_policy.py."""

from __future__ import annotations

import asyncio
from typing import Any

from substrate.security.audit import AuditBatch, PolicyDecision


def _decision(n: int) -> PolicyDecision:
    return PolicyDecision(principal="key:x", request_id=f"r{n}", action="read:/search",
                          decision="allowed", reason="ok")


def test_a_full_queue_drops_and_counts() -> None:
    async def scenario() -> AuditBatch:
        batch = AuditBatch(every_s=60.0, limit=3)
        pool: Any = object()  # never reached: nothing is flushed within the test
        batch.add(pool, [_decision(1), _decision(2)])
        batch.add(pool, [_decision(3), _decision(4)])  # 4 > 3: dropped whole
        batch.add(pool, [_decision(5)])
        assert batch._task is not None
        batch._task.cancel()
        return batch

    batch = asyncio.run(scenario())
    assert batch.dropped == 2
    assert [d.request_id for d in batch._rows] == ["r1", "r2", "r5"]
