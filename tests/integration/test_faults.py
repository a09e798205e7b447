"""Each part of THIS stack frozen (SIGSTOP) under a small loopback load: the gateway answers
(correctly) or says 503 with Retry-After within its deadline (a frozen PostgreSQL sheds only
the reads that need it: unpinned reads take their snapshot from the in-process snapshot
clock), never 500, never hangs past the client's patience; readiness says "degraded" while
answers are still correct; after the part returns, answers come back within seconds and a
delayed ``graph.updated`` leaves with no later write. Only the parts named in this stack's
SUBSTRATE_HOME pid files are touched."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import httpx
import pytest
from neo4j import Driver

from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.freeze import frozen
from tests.support.gateway_client import gateway
from tests.support.graphstate import (
    create_consumer,
    delete_consumer,
    drain_events,
    new_tenant,
    versions_once,
)

pytestmark = pytest.mark.integration

CLIENT_PATIENCE_S = 30.0  # longer than the gateway's REQUEST_DEADLINE_SECONDS (20)


def _get(client: httpx.Client, path: str) -> tuple[int, float, httpx.Response | None]:
    start = time.monotonic()
    try:
        r = client.get(path)
    except httpx.TimeoutException:
        return -1, time.monotonic() - start, None
    return r.status_code, time.monotonic() - start, r


def load(settings: Settings, paths: list[str], workers: int = 8
         ) -> list[tuple[int, float, httpx.Response | None]]:
    with gateway(settings, timeout=CLIENT_PATIENCE_S) as client, \
            ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda p: _get(client, p), paths))


def uncached(n: int) -> list[str]:
    """Distinct /dependencies requests (the limit is part of the cache key)."""
    return [f"/dependencies/checkout?min_weight=0.{uuid.uuid4().int % 10**9:09d}"
            for _ in range(n)]


def recovery_s(settings: Settings) -> float:
    start = time.monotonic()
    with gateway(settings, timeout=CLIENT_PATIENCE_S) as client:
        while time.monotonic() - start < 60:
            if _get(client, uncached(1)[0])[0] == 200:
                return time.monotonic() - start
            time.sleep(0.2)
    raise AssertionError("/dependencies did not recover within 60 s")


def readyz(settings: Settings) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{settings.gateway_port}/readyz", timeout=15)


def assert_answered_or_shed(results: list[tuple[int, float, httpx.Response | None]]) -> None:
    codes = [c for c, _, _ in results]
    assert set(codes) <= {200, 503}, codes  # never 500, never past the client's patience
    for code, _, response in results:
        if code == 503:
            assert response is not None and response.headers.get("retry-after")
            assert response.json()["error"]["code"]


def test_redis_frozen_answers_stay_correct_and_readiness_is_degraded(stack: Settings) -> None:
    with gateway(stack) as client:
        before = client.get("/dependencies/checkout").json()["dependencies"]
    with frozen(stack, "redis"):
        results = load(stack, ["/dependencies/checkout"] * 16)
        ready = readyz(stack)
    assert {c for c, _, _ in results} == {200}
    assert all(r is not None and r.json()["dependencies"] == before for _, _, r in results)
    assert ready.status_code == 200 and ready.json()["status"] == "degraded"
    assert "redis" in ready.json()["missing"]
    print(f"redis frozen: p_max {max(t for _, t, _ in results):.2f} s; "
          f"recovery {recovery_s(stack):.2f} s")


def test_a_frozen_neo4j_gives_503_within_the_deadline_and_recovers(stack: Settings) -> None:
    with frozen(stack, "neo4j"):
        results = load(stack, uncached(12))
        ready = readyz(stack)
    assert_answered_or_shed(results)
    assert 503 in {c for c, _, _ in results}
    assert ready.status_code == 503 and "neo4j" in ready.json()["error"]["message"]
    took = recovery_s(stack)
    print(f"neo4j frozen: codes {sorted({c for c, _, _ in results})}, slowest answer "
          f"{max(t for _, t, _ in results):.1f} s, recovery {took:.2f} s")
    after = load(stack, uncached(4))
    assert {c for c, _, _ in after} == {200}


def test_a_frozen_postgres_leaves_unpinned_reads_answered_and_pinned_ones_shed(
    stack: Settings,
) -> None:
    """An unpinned read resolves its snapshot from the gateway's snapshot clock (no
    PostgreSQL per request): it is answered, correctly; a read pinned to a time needs
    PostgreSQL to find that snapshot: 503 with Retry-After within the deadline."""
    with gateway(stack) as client:
        before = client.get("/dependencies/checkout").json()["dependencies"]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # after the newest snapshot
    pinned = [f"{p}&at={now}" for p in uncached(6)]
    with frozen(stack, "postgres"):
        unpinned = load(stack, uncached(8))
        shed = load(stack, pinned)
        ready = readyz(stack)
    assert {c for c, _, _ in unpinned} == {200}
    assert all(r is not None and r.json()["dependencies"] == before for _, _, r in unpinned)
    assert_answered_or_shed(shed)
    assert 503 in {c for c, _, _ in shed}
    assert ready.status_code == 503 and "postgres" in ready.json()["error"]["message"]
    took = recovery_s(stack)
    print(f"postgres frozen: unpinned all 200, pinned {sorted({c for c, _, _ in shed})}, "
          f"slowest {max(t for _, t, _ in unpinned + shed):.1f} s, recovery {took:.2f} s")
    assert {c for c, _, _ in load(stack, pinned[:2])} == {200}


def test_an_event_leaves_when_nats_returns_without_a_later_write(
    stack: Settings, driver: Driver,
) -> None:
    tenant = new_tenant("outbox")
    durable = f"outbox-{tenant}"
    create_consumer(stack, durable)
    writer = GraphWriter(stack, driver)
    batch = GraphBatch([NodeRecord("service:o1", "Service", {"name": "o1"}),
                        NodeRecord("service:o2", "Service", {"name": "o2"})],
                       [EdgeRecord("CALLS", "service:o1", "service:o2", "apm:o1")])
    try:
        with frozen(stack, "nats"):
            version = writer.commit(batch, source="apm", tenant=tenant).snapshot_version
            assert version is not None
            time.sleep(3)  # at least one outbox round fails
            ready = readyz(stack)
            body = ready.json()
            assert ready.status_code == 200 and body["status"] == "degraded", body
            assert "nats" in body["missing"] and body["outbox"]["backlog"] >= 1
            thawed = time.monotonic()
        seen = drain_events(stack, durable, tenant, {version}, rounds=60)
        delay = time.monotonic() - thawed
        assert versions_once(seen) == {version: 1}
        print(f"graph.updated published {delay:.1f} s after NATS returned, no later write")
        status = readyz(stack).json()
        assert status["outbox"]["backlog"] == 0 and status["status"] == "ready", status
    finally:
        delete_consumer(stack, durable)
