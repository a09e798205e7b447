"""Scale-out (issue 14.2): three gateway replicas with the same settings on a 3-node NATS
cluster (JetStream, NATS_URL lists every server) and a 3-master Redis Cluster
(REDIS_CLUSTER=1), over the stack's Neo4j and PostgreSQL.

A bounded round-robin load (200 requests over 3 workers) asks the same questions of every
replica; half-way a write through the real write path adds a callee to one of them. Then:

- zero stale answers once the event is applied: its version reached the shared ``applied``
  watermark (the consuming replica evicted and acked it) and the replica asked reads at that
  version (its in-process snapshot clock saw the event; a replica that reads the tenant's
  version from PostgreSQL has it at commit). Answers between the commit and then are counted
  (``stale_after_commit``), not asserted: a replica may answer at the snapshot it has;
- the event was applied once across the replicas (one durable consumer shared by them);
- the question the write did not touch stays cached on every replica.

The same again with one NATS node killed. Lag figures are printed (``-s``), not asserted;
tests/bench/bench_replicas.py reports them over more writes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import nats
import pytest
import redis
from neo4j import Driver
from redis.crc import key_slot

from substrate.cache import asked_key, index_key, watermark_key
from substrate.graph import events
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from substrate.stack.local_cluster import NatsCluster, RedisCluster
from tests.support.graphstate import drop_tenant_graph, new_tenant
from tests.support.local_procs import PrivateNats
from tests.support.replicas import (
    UNCHANGED,
    WriteRound,
    add_calls,
    all_connected,
    cache_stats,
    cluster_env,
    deliver,
    poll,
    replicas,
    run_round,
)

pytestmark = pytest.mark.integration

REPLICAS = 3
REQUESTS = 200


@pytest.fixture(scope="module")
def clusters(stack: Settings) -> Iterator[tuple[NatsCluster, RedisCluster]]:
    with NatsCluster(stack) as nats_cluster, RedisCluster(stack) as redis_cluster:
        yield nats_cluster, redis_cluster


@pytest.fixture(scope="module")
def cluster(stack: Settings, clusters: tuple[NatsCluster, RedisCluster]) -> Settings:
    return Settings.from_env({**stack.env, **cluster_env(*clusters)})


@pytest.fixture(scope="module")
def tenant(cluster: Settings, driver: Driver) -> Iterator[str]:
    name = new_tenant("replicas")
    add_calls(GraphWriter(cluster, driver), name, [("alpha", "beta"), ("gamma", "delta")])
    try:
        yield name
    finally:
        drop_tenant_graph(driver, name)


@pytest.fixture(scope="module")
def rds(cluster: Settings) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster.from_url(cluster.redis_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def clients(clusters: tuple[NatsCluster, RedisCluster], tenant: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[httpx.Client]]:
    with replicas(tmp_path_factory.mktemp("replicas"), tenant, cluster_env(*clusters),
                  REPLICAS) as started:
        assert poll(lambda: all_connected(started)), "an invalidator never connected"
        yield started


def _round(stack: Settings, cluster: Settings, driver: Driver, tenant: str,
           clients: list[httpx.Client], rds: redis.RedisCluster, callee: str) -> WriteRound:
    writer = GraphWriter(cluster, driver)
    done = run_round(clients, lambda: add_calls(writer, tenant, [("alpha", callee)]),
                     lambda version: deliver(cluster, stack, tenant, version), rds, tenant,
                     f"service:{callee}", requests=REQUESTS, workers=3)
    print(f"\n[{callee}] {json.dumps(done.summary(REPLICAS))}")
    return done


def _assert_fresh_and_once(done: WriteRound) -> None:
    summary = done.summary(REPLICAS)
    assert summary["answers"] == REQUESTS and summary["errors"] == 0, summary
    assert summary["after_event"] >= REQUESTS // 4, summary
    assert done.stale_after_event() == [], summary
    assert len(done.appliers) == 1, f"applied more than once: {done.appliers}"
    after = [a for a in done.answers if done.after_event(a)]
    for replica in range(REPLICAS):  # every replica answered with the write after the event
        assert any(a.replica == replica and done.new_target in a.targets
                   for a in after), (replica, summary)
    unchanged = [a for a in after if a.path == UNCHANGED]
    assert unchanged and all(a.hit for a in unchanged), "an untouched entry was evicted"


def test_every_tenant_key_is_in_one_slot(rds: redis.RedisCluster, tenant: str) -> None:
    """Scripts and pipelines of the cache name keys of one tenant: one slot (as the
    cluster client routes them), so one node runs each script and pipeline."""
    keys = [watermark_key(tenant), index_key(tenant, "service:alpha"),
            asked_key(tenant, "0" * 64), f"sr:{{{tenant}}}:e:{'1' * 64}"]
    slots = {key_slot(key.encode()) for key in keys}
    assert len(slots) == 1, slots


def test_the_stream_has_three_copies_on_the_cluster_and_one_on_a_single_server(
    cluster: Settings, tmp_path: Path,
) -> None:
    """ensure_stream asks for a copy per known server (at most 3); a single server refuses
    more than one, and the stream is made with one instead of not at all."""
    async def copies(servers: list[str], wanted: int) -> int:
        nc = await nats.connect(servers, connect_timeout=2, allow_reconnect=False)
        try:
            js = nc.jetstream()
            await events.ensure_stream(js, wanted)
            return int((await js.stream_info(events.STREAM)).config.num_replicas or 1)
        finally:
            await nc.close()

    assert asyncio.run(copies(cluster.nats_servers, 3)) == 3
    single = PrivateNats(tmp_path / "nats-store")
    single.start()
    try:
        assert asyncio.run(copies([single.url], 3)) == 1
    finally:
        single.stop()


def test_three_replicas_serve_no_stale_answer_after_a_write(
    stack: Settings, cluster: Settings, driver: Driver, tenant: str,
    clients: list[httpx.Client], rds: redis.RedisCluster,
) -> None:
    _assert_fresh_and_once(_round(stack, cluster, driver, tenant, clients, rds, "alpha-r1"))


def test_the_same_with_a_nats_node_killed(
    stack: Settings, cluster: Settings, driver: Driver, tenant: str,
    clients: list[httpx.Client], rds: redis.RedisCluster,
    clusters: tuple[NatsCluster, RedisCluster],
) -> None:
    nats_cluster = clusters[0]
    nats_cluster.kill(0)
    assert not nats_cluster.nodes[0].running
    assert poll(lambda: all_connected(clients)), "an invalidator did not fail over"
    done = _round(stack, cluster, driver, tenant, clients, rds, "alpha-r2")
    _assert_fresh_and_once(done)
    reconnects = [cache_stats(c)["invalidation"]["reconnects"] for c in clients]
    print(f"[n0 down] invalidator reconnects per replica: {reconnects}")
