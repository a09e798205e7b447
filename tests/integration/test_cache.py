"""RSN-13: the Redis query cache and its JetStream invalidator, against the real stack.

A throw-away tenant gets small service chains through the real write path; reads go through
the running gateway (``X-Tenant``). Each test uses its own chain, so writes of one test
touch nothing another test cached. Outages are produced without touching the shared Redis
or NATS: a second gateway whose REDIS_URL / NATS_URL point at dead ports, and a private
``nats-server`` that the test stops and restarts. Waits are bounded polls, then asserts.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import nats
import psycopg
import pytest
import redis
from neo4j import Driver

from substrate.cache import (
    BREAKER_THRESHOLD,
    CacheUnavailable,
    QueryCache,
    index_key,
    watermark_key,
)
from substrate.graph import events, snapshots
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.retrieval.scope import ReadScope, resolve_scope
from substrate.settings import Settings
from tests.support.gateway_client import gateway as stack_gateway
from tests.support.graphstate import drop_tenant_graph, new_tenant
from tests.support.local_procs import PrivateNats, free_port, gateway

pytestmark = pytest.mark.integration

CHAINS = [("alpha", "beta"), ("gamma", "delta"), ("omega", "sigma"), ("kappa", "lambda"),
          ("north", "south")]
PRIVATE_REDIS_DB = 11  # the private-NATS gateway's cache, apart from the shared one (db 0)


def _redis_url(stack: Settings, db: int) -> str:
    return urlsplit(stack.redis_url)._replace(path=f"/{db}").geturl()


def _service(name: str) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name,
                                                     "description": f"The {name} service"})


def _calls(src: str, dst: str) -> EdgeRecord:
    return EdgeRecord("CALLS", f"service:{src}", f"service:{dst}",
                      f"test://cache/{src}-{dst}#L1", source="test")


def _setup_batch() -> GraphBatch:
    nodes = [_service(n) for pair in CHAINS for n in pair]
    nodes += [NodeRecord("infra:alpha-db", "Infrastructure", {"name": "alpha-db",
                                                              "kind": "database"}),
              NodeRecord("team:core", "Team", {"name": "Core"})]
    edges = [_calls(a, b) for a, b in CHAINS]
    edges += [EdgeRecord("DEPENDS_ON", "service:alpha", "infra:alpha-db",
                         "test://cache/alpha-db#L1", source="test"),
              EdgeRecord("OWNS", "team:core", "service:gamma", "test://cache/owners#L1",
                         source="test")]
    return GraphBatch(nodes, edges)


def _add_callee(writer: GraphWriter, tenant: str, src: str, dst: str) -> int:
    result = writer.commit(GraphBatch([_service(dst)], [_calls(src, dst)]), source="test",
                           tenant=tenant)
    assert result.snapshot_version is not None
    return result.snapshot_version


def _poll(check: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _applied(rds: redis.Redis, tenant: str) -> int:
    raw: Any = rds.hget(watermark_key(tenant), "applied")
    return int(raw or 0)


def _targets(body: dict[str, Any]) -> set[str]:
    return {row["target"]["ceid"] for row in body["dependencies"]}


def _cached(client: httpx.Client, path: str) -> dict[str, Any]:
    """GET ``path`` until it is a cache hit (the first call fills the cache)."""
    body: dict[str, Any] = {}
    for _ in range(3):
        response = client.get(path)
        assert response.status_code == 200, response.text
        body = response.json()
        if body["cache"]["hit"]:
            return body
    raise AssertionError(f"{path} never became a cache hit: {body.get('cache')}")


@pytest.fixture(scope="module")
def tenant(stack: Settings, driver: Driver) -> Iterator[tuple[str, int]]:
    """(tenant, version of the setup snapshot)."""
    name = new_tenant("cache")
    result = GraphWriter(stack, driver).commit(_setup_batch(), source="test", tenant=name)
    assert result.snapshot_version is not None
    try:
        yield name, result.snapshot_version
    finally:
        drop_tenant_graph(driver, name)
        for db in (0, PRIVATE_REDIS_DB):
            rds = redis.Redis.from_url(_redis_url(stack, db))
            keys = list(rds.scan_iter(match=f"sr:{{{name}*", count=1000))  # + "-guards"
            if keys:
                rds.delete(*keys)
            rds.close()


@pytest.fixture(scope="module")
def writer(stack: Settings, driver: Driver) -> GraphWriter:
    return GraphWriter(stack, driver)


@pytest.fixture(scope="module")
def rds(stack: Settings) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(stack.redis_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def client(stack: Settings, tenant: tuple[str, int]) -> Iterator[httpx.Client]:
    with stack_gateway(stack, headers={"X-Tenant": tenant[0]}) as c:
        yield c


def test_second_identical_query_is_a_hit(client: httpx.Client, rds: redis.Redis,
                                         stack: Settings) -> None:
    first = client.get("/dependencies/alpha").json()
    second = client.get("/dependencies/alpha").json()
    # the gateway stores a miss after answering it; asked again at once, it is a hit
    assert first["cache"]["hit"] is False and first["cache"]["status"] == "storing"
    assert second["cache"] == {"hit": True, "key": first["cache"]["key"], "status": "hit"}
    assert second["dependencies"] == first["dependencies"]
    assert _targets(second) == {"service:beta", "infra:alpha-db"}
    ttl: Any = rds.ttl(first["cache"]["key"])
    assert 0 < ttl <= stack.cache_ttl_seconds

    # the entry is indexed by every node its answer touched
    tenant = client.headers["X-Tenant"]
    for ceid in ("service:alpha", "service:beta", "infra:alpha-db"):
        assert rds.sismember(index_key(tenant, ceid), first["cache"]["key"])

    # normalised query text: case and whitespace do not make a new entry
    a = client.post("/search", json={"query": "What does alpha depend on?"}).json()
    b = client.post("/search", json={"query": "  what DOES alpha   depend on? "}).json()
    assert a["cache"]["hit"] is False and b["cache"]["hit"] is True
    assert b["cache"]["key"] == a["cache"]["key"] and b["results"] == a["results"]

    # clearance is part of the key; an unknown service is an error, never cached
    other = client.get("/dependencies/alpha", headers={"X-Clearance": "confidential"}).json()
    assert other["cache"]["hit"] is False and other["cache"]["key"] != first["cache"]["key"]
    assert client.get("/dependencies/no-such-service").status_code == 404
    assert client.get("/dependencies/no-such-service").status_code == 404


def test_write_evicts_what_it_touched_and_keeps_the_rest(
    client: httpx.Client, rds: redis.Redis, writer: GraphWriter, tenant: tuple[str, int]
) -> None:
    touched = _cached(client, "/dependencies/omega")
    unrelated = _cached(client, "/dependencies/gamma")
    unrelated_owners = _cached(client, "/ownership/gamma")

    version = _add_callee(writer, tenant[0], "omega", "omega-new")
    assert _poll(lambda: _applied(rds, tenant[0]) >= version), "invalidator never applied it"

    assert rds.exists(touched["cache"]["key"]) == 0
    assert rds.exists(unrelated["cache"]["key"]) == 1
    fresh = client.get("/dependencies/omega").json()
    assert fresh["cache"]["hit"] is False
    assert _targets(fresh) == {"service:sigma", "service:omega-new"}
    again = client.get("/dependencies/gamma").json()
    assert again["cache"] == unrelated["cache"]  # served from the entry made before the write
    assert again["dependencies"] == unrelated["dependencies"]
    assert client.get("/ownership/gamma").json()["cache"] == unrelated_owners["cache"]


def test_store_and_read_guards_against_events_in_flight(
    stack: Settings, tenant: tuple[str, int]
) -> None:
    """Directly on a QueryCache (real Redis), with the tenant's versions made up: an entry
    whose read overlapped an applied event is not stored; an entry older than the tenant's
    newest snapshot is served only once that snapshot's event was applied (it survived)."""
    name = f"{tenant[0]}-guards"
    computed: list[str] = []

    def at(tv: int) -> ReadScope:
        return ReadScope(name, 1000 + tv, ("public", "internal"), False, tenant_version=tv)

    async def scenario(cache: QueryCache) -> list[str]:
        async def answer() -> dict[str, Any]:
            computed.append("x")
            return {"service": {"ceid": "service:x"}}

        async def racing() -> dict[str, Any]:  # event 6 touching x lands mid-read
            await cache.invalidate(name, 6, ["service:x"])
            return await answer()

        steps = [("raced", 5, None), ("a", 6, None), ("a", 7, None), ("a", 8, "service:y"),
                 ("a", 9, "service:x"), ("a", 9, None)]
        statuses = []
        for param, tv, event in steps:
            if event is not None:  # the invalidator applied event ``tv``
                await cache.invalidate(name, tv, [event])
            compute = racing if param == "raced" else answer
            body, _ = await cache.get_or_compute("k", {"id": param}, at(tv), compute)
            statuses.append(body["cache"]["status"])
        return statuses

    async def run() -> tuple[list[str], int]:
        cache = QueryCache.from_settings(stack)
        try:
            return await scenario(cache), cache.stats.stale
        finally:
            await cache.aclose()

    statuses, stale = asyncio.run(run())
    assert statuses == [
        "not_stored",  # read at 5, event 6 evicted before the store: never cached
        "stored",  # read at 6
        "stored",  # tenant at 7, event 7 not applied: the entry from 6 is not trusted
        "hit",  # event 8 touched only y: the entry from 7 survived it
        "stored",  # event 9 touched x: evicted, computed again
        "hit",
    ]
    assert stale == 1 and len(computed) == 4


def test_pinned_queries_are_cached_and_never_invalidated(
    client: httpx.Client, rds: redis.Redis, writer: GraphWriter, tenant: tuple[str, int]
) -> None:
    name, setup_version = tenant
    at = datetime.now(UTC).isoformat()
    pinned_paths = [f"/dependencies/kappa?snapshot_version={setup_version}",
                    f"/dependencies/kappa?at={at.replace('+', '%2B')}"]
    before = [_cached(client, p) for p in pinned_paths]
    for body in before:
        assert not rds.sismember(index_key(name, "service:kappa"), body["cache"]["key"])

    version = _add_callee(writer, name, "kappa", "kappa-new")
    assert _poll(lambda: _applied(rds, name) >= version)

    for path, old in zip(pinned_paths, before, strict=True):
        body = client.get(path).json()
        assert body["cache"] == old["cache"]
        assert _targets(body) == {"service:lambda"} == _targets(old)
    latest = client.get("/dependencies/kappa").json()
    assert _targets(latest) == {"service:lambda", "service:kappa-new"}


def test_temporal_state_is_cached_per_snapshot_and_page(
    client: httpx.Client, rds: redis.Redis, writer: GraphWriter, tenant: tuple[str, int]
) -> None:
    """GET /temporal?at= is always pinned: its entry is kept for the TTL, indexed under no
    id, and a later write leaves it right; another page is another entry."""
    name, setup_version = tenant
    path = f"/temporal?snapshot_version={setup_version}&service=north&depth=1"
    first = client.get(path).json()
    assert first["cache"]["hit"] is False
    hit = _cached(client, path)
    assert hit["cache"]["key"] == first["cache"]["key"]
    per_request = ("cache", "policy")  # the policy block names the request
    assert {k: v for k, v in hit.items() if k not in per_request} == {
        k: v for k, v in first.items() if k not in per_request}
    assert not rds.sismember(index_key(name, "service:north"), hit["cache"]["key"])
    page = client.get(path + "&limit=1").json()
    assert page["cache"]["key"] != hit["cache"]["key"] and len(page["nodes"]) == 1

    version = _add_callee(writer, name, "north", "north-new")
    assert _poll(lambda: _applied(rds, name) >= version)
    after = client.get(path).json()
    assert after["cache"] == hit["cache"]
    assert {n["ceid"] for n in after["nodes"]} == {"service:north", "service:south"}
    now = client.get(f"/temporal?snapshot_version={version}&service=north&depth=1").json()
    assert {n["ceid"] for n in now["nodes"]} == {"service:north", "service:south",
                                                 "service:north-new"}


def test_query_cache_with_redis_down_computes_uncached(
    stack: Settings, tenant: tuple[str, int]
) -> None:
    dead = Settings.from_env({**os.environ, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    calls: list[int] = []

    async def compute() -> dict[str, Any]:
        calls.append(1)
        return {"service": {"ceid": "service:alpha"}, "n": len(calls)}

    async def scenario() -> list[tuple[dict[str, Any], bool]]:
        cache = QueryCache.from_settings(dead)
        scope = await resolve_scope(stack, tenant[0])
        try:
            out = [await cache.get_or_compute("dependencies", {"service_id": "alpha"}, scope,
                                              compute) for _ in range(3)]
            with pytest.raises(CacheUnavailable):
                await cache.invalidate(tenant[0], 1, ["service:alpha"])
            # three consecutive failures open the breaker, which then skips Redis
            assert cache.stats.errors == BREAKER_THRESHOLD == 3
            assert not cache.available
            return out
        finally:
            await cache.aclose()

    results = asyncio.run(scenario())
    assert [r["n"] for r, _ in results] == [1, 2, 3]
    assert all(cached is False and r["cache"]["status"] == "unavailable"
               for r, cached in results)


def test_gateway_with_redis_and_nats_down_answers_correctly(
    client: httpx.Client, tenant: tuple[str, int], tmp_path: Path
) -> None:
    expected = client.get("/dependencies/alpha").json()
    expected_search = client.post("/search", json={"query": "What does alpha depend on?"})
    expected_facts = {(c["from"], c["edge"], c["to"]) for c in expected_search.json()["citations"]}
    assert expected_facts == {("service:alpha", "CALLS", "service:beta"),
                              ("service:alpha", "DEPENDS_ON", "infra:alpha-db")}
    with gateway(tmp_path, tenant[0],
                 REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
                 NATS_URL=f"nats://127.0.0.1:{free_port()}") as down:
        for _ in range(2):
            body = down.get("/dependencies/alpha").json()
            assert body["cache"]["hit"] is False and body["cache"]["status"] == "unavailable"
            assert body["dependencies"] == expected["dependencies"]
            search = down.post("/search", json={"query": "What does alpha depend on?"})
            assert search.status_code == 200
            assert search.json()["cache"]["status"] == "unavailable"
            assert {(c["from"], c["edge"], c["to"])
                    for c in search.json()["citations"]} == expected_facts
        stats = down.get("/cache/stats").json()
    assert stats["cache"]["redis_available"] is False and stats["cache"]["hits"] == 0
    assert stats["invalidation"]["connected"] is False and stats["invalidation"]["events"] == 0


def _deliver_to(private: PrivateNats, stack: Settings, tenant: str, version: int) -> None:
    """Send the outbox's pending event of ``tenant`` to the private NATS. Another writer on
    the machine (publishing every pending snapshot to the shared NATS) may have sent and
    marked it first; then the same event is sent here as the outbox would have."""
    writer_settings = Settings.from_env({**os.environ, "NATS_URL": private.url})
    if events.publish_pending(writer_settings, tenant=tenant) >= 1:
        return
    with psycopg.connect(stack.postgres_dsn) as conn:
        event = {"snapshot_version": version, "tenant_id": tenant,
                 "changed_ids": snapshots.changed_ids(conn, version)}

    async def send() -> None:
        nc = await nats.connect(private.url, connect_timeout=2)
        js = nc.jetstream()
        await events.ensure_stream(js)
        await js.publish(events.SUBJECT, json.dumps(event).encode(),
                         headers={"Nats-Msg-Id": f"snapshot-{version}"})
        await nc.close()

    asyncio.run(send())


def test_nats_outage_then_catch_up_from_the_durable_position(
    stack: Settings, driver: Driver, tenant: tuple[str, int], tmp_path: Path
) -> None:
    name = tenant[0]
    private = PrivateNats(tmp_path / "nats-store")
    private.start()
    redis_url = _redis_url(stack, PRIVATE_REDIS_DB)
    rds = redis.Redis.from_url(redis_url)
    try:
        with gateway(tmp_path, name, NATS_URL=private.url, REDIS_URL=redis_url) as gw:
            def stats() -> dict[str, Any]:
                return dict(gw.get("/cache/stats").json()["invalidation"])

            assert _poll(lambda: stats()["connected"]), stats()
            touched = _cached(gw, "/dependencies/alpha")
            unrelated = _cached(gw, "/dependencies/gamma")

            private.stop()
            assert _poll(lambda: not stats()["connected"])
            dead_nats = Settings.from_env({**os.environ, "NATS_URL": private.url})
            version = _add_callee(GraphWriter(dead_nats, driver), name, "alpha", "alpha-new")
            # NATS down: the old entry is still in Redis, but the answer is the current one
            assert rds.exists(touched["cache"]["key"]) == 1
            during = gw.get("/dependencies/alpha").json()
            assert during["cache"]["hit"] is False
            assert "service:alpha-new" in _targets(during)
            assert gw.get("/cache/stats").json()["cache"]["stale"] == 1

            private.start()
            _deliver_to(private, stack, name, version)
            assert _poll(lambda: _applied(rds, name) >= version), stats()
            after = stats()
            assert after["connected"] and after["last_version"] == version
            assert after["reconnects"] >= 1
            assert rds.exists(touched["cache"]["key"]) == 0
            kept = gw.get("/dependencies/gamma").json()
            assert kept["cache"] == unrelated["cache"]
            assert "service:alpha-new" in _targets(gw.get("/dependencies/alpha").json())
    finally:
        private.stop()
        rds.close()
