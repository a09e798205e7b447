"""Several gateway replicas on a local NATS cluster and Redis Cluster: a bounded round-robin
load of the same questions with one write in the middle, and what every answer said.

Shared by tests/integration/test_replicas_cluster.py (zero stale answers) and
tests/bench/bench_replicas.py (invalidation lag figures). The write goes through the real
write path (:class:`GraphWriter` with the cluster's NATS_URL); its event is then made sure to
be in the cluster's stream (another publisher on the same PostgreSQL - the stack's own
gateway - may have sent it to the stack's NATS first), de-duplicated by its message id.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import nats
import psycopg
import redis
from neo4j import Driver

from substrate.cache import watermark_key
from substrate.graph import events, snapshots
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from substrate.stack.local_cluster import NatsCluster, RedisCluster
from tests.support.local_procs import gateway

CHANGED = "/dependencies/alpha"  # every write adds a callee of alpha
UNCHANGED = "/dependencies/gamma"  # no write touches it: stays cached through every write
QUESTIONS = (CHANGED, UNCHANGED)
START_TIMEOUT_S = 600.0  # three gateways loading their embedders at once on a busy machine
APPLY_TIMEOUT_S = 90.0  # a NATS node down: stream and consumer leaders are elected again


def cluster_env(nats_cluster: NatsCluster, redis_cluster: RedisCluster) -> dict[str, str]:
    """The replicas' settings: the clusters, and a rate limit the load and the polling of
    ``/cache/stats`` (one admin key, shared across replicas by Redis) stay under."""
    return {"NATS_URL": nats_cluster.url, "REDIS_URL": redis_cluster.url, "REDIS_CLUSTER": "1",
            "RATE_LIMIT_PER_MINUTE": "60000", "RATE_LIMIT_BURST": "1000"}


def _service(name: str) -> NodeRecord:
    return NodeRecord(f"service:{name}", "Service", {"name": name})


def _call(src: str, dst: str) -> EdgeRecord:
    return EdgeRecord("CALLS", f"service:{src}", f"service:{dst}",
                      f"test://replicas/{src}-{dst}#L1", source="test")


def add_calls(writer: GraphWriter, tenant: str, pairs: list[tuple[str, str]]) -> int:
    """Commit services and CALLS edges; returns the snapshot version."""
    names = sorted({n for pair in pairs for n in pair})
    result = writer.commit(GraphBatch([_service(n) for n in names],
                                      [_call(a, b) for a, b in pairs]),
                           source="test", tenant=tenant)
    assert result.snapshot_version is not None
    return result.snapshot_version


@contextmanager
def replicas(log_dir: Path, tenant: str, env: dict[str, str], n: int = 3
             ) -> Iterator[list[httpx.Client]]:
    """``n`` gateway processes with the same settings on their own ports, started at once
    (each loads its embedder: minutes on a busy machine)."""
    managers = [gateway(log_dir, tenant, START_TIMEOUT_S, **env) for _ in range(n)]
    with ExitStack() as stack, ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(m.__enter__) for m in managers]
        wait(futures)
        for manager, future in zip(managers, futures, strict=True):
            if future.exception() is None:
                stack.push(manager.__exit__)  # stopped at the end, or when another failed
        yield [f.result() for f in futures]


def deliver(cluster: Settings, stack: Settings, tenant: str, version: int) -> None:
    """The event of ``version`` in the cluster's stream (retried while the cluster elects
    leaders after a node went down)."""
    with psycopg.connect(stack.postgres_dsn) as conn:
        event = {"snapshot_version": version, "tenant_id": tenant,
                 "changed_ids": snapshots.changed_ids(conn, version),
                 "published_at": datetime.now(UTC).isoformat()}

    async def send() -> None:
        nc = await nats.connect(cluster.nats_servers, connect_timeout=2,
                                allow_reconnect=False, max_reconnect_attempts=1,
                                error_cb=_quiet)
        try:
            js = nc.jetstream()
            await events.ensure_stream(js, events.stream_replicas(nc))
            await js.publish(events.SUBJECT, json.dumps(event).encode(),
                             headers={"Nats-Msg-Id": f"snapshot-{version}"})
        finally:
            await nc.close()

    deadline = time.monotonic() + APPLY_TIMEOUT_S
    while True:
        try:
            asyncio.run(send())
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


async def _quiet(exc: Exception) -> None:
    """A server of the list is down: the next one is tried (no traceback on stderr)."""


def applied(rds: redis.RedisCluster, tenant: str) -> int:
    raw: Any = rds.hget(watermark_key(tenant), "applied")
    return int(raw or 0)


@dataclass
class Answer:
    replica: int
    path: str
    sent: float  # time.monotonic() when the request left
    received: float
    status: int
    targets: frozenset[str]
    hit: bool


@dataclass
class WriteRound:
    """One load with one write: when the commit returned, when the event was applied (the
    shared watermark reached its version), every answer, and who applied the event."""

    version: int
    new_target: str
    committed: float = 0.0
    applied: float = 0.0
    seen: dict[int, float] = field(default_factory=dict)  # replica -> when it had the event
    answers: list[Answer] = field(default_factory=list)
    appliers: list[tuple[int, float | None]] = field(default_factory=list)  # (replica, ms)

    def stale(self, since: float) -> list[Answer]:
        """Answers to the changed question, asked at or after ``since``, without the write."""
        return [a for a in self.answers if a.path == CHANGED and a.sent >= since
                and self.new_target not in a.targets]

    def after_event(self, answer: Answer) -> bool:
        """Asked once the event was applied (evicted and acked) and the replica had it."""
        return answer.sent >= max(self.applied, self.seen[answer.replica])

    def stale_after_event(self) -> list[Answer]:
        return [a for a in self.stale(self.applied) if self.after_event(a)]

    def first_fresh_hit_ms(self, replica: int) -> float | None:
        """From the commit to this replica's first cache hit that has the write in it: the
        replica serves from the cache again, with the entry computed after the write (may be
        negative: ``commit()`` returns after publishing its event)."""
        times = [a.received for a in self.answers if a.replica == replica and a.hit
                 and a.path == CHANGED and self.new_target in a.targets]
        return round((min(times) - self.committed) * 1000, 1) if times else None

    def summary(self, replicas: int) -> dict[str, Any]:
        return {
            "version": self.version, "answers": len(self.answers),
            "errors": sum(1 for a in self.answers if a.status != 200),
            "after_commit": sum(1 for a in self.answers if a.sent >= self.committed),
            "after_event": sum(1 for a in self.answers if self.after_event(a)),
            "stale_after_commit": len(self.stale(self.committed)),
            "stale_after_event": len(self.stale_after_event()),
            "commit_to_applied_ms": round((self.applied - self.committed) * 1000, 1),
            "commit_to_seen_ms": {r: round((t - self.committed) * 1000, 1)
                                  for r, t in sorted(self.seen.items())},
            "applied_by": [{"replica": r, "event_delay_ms": ms} for r, ms in self.appliers],
            "first_fresh_hit_ms": {r: self.first_fresh_hit_ms(r) for r in range(replicas)},
        }


def _ask(clients: list[httpx.Client], i: int) -> Answer:
    replica = i % len(clients)
    path = QUESTIONS[(i // len(clients)) % len(QUESTIONS)]
    sent = time.monotonic()
    response = clients[replica].get(path)
    received = time.monotonic()
    body = response.json() if response.status_code == 200 else {}
    targets = frozenset(d["target"]["ceid"] for d in body.get("dependencies", []))
    return Answer(replica, path, sent, received, response.status_code, targets,
                  bool(body.get("cache", {}).get("hit")))


def run_round(clients: list[httpx.Client], write: Callable[[], int],
              send_event: Callable[[int], None], rds: redis.RedisCluster, tenant: str,
              new_target: str, requests: int = 200, workers: int = 3) -> WriteRound:
    """``requests`` answers round-robin over the replicas and questions; ``write`` (returns
    the snapshot version) starts when half were sent, then ``send_event`` makes sure the
    event is on its way; the last quarter waits until the event is applied."""
    half, gate = requests // 2, requests * 3 // 4
    write_now, is_applied = threading.Event(), threading.Event()

    def one(i: int) -> Answer:
        if i == half:
            write_now.set()
        if i >= gate:
            is_applied.wait(APPLY_TIMEOUT_S + 30)
        return _ask(clients, i)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(one, i) for i in range(requests)]
        write_now.wait()
        round_ = WriteRound(version=write(), new_target=new_target)
        round_.committed = time.monotonic()
        send_event(round_.version)
        deadline = round_.committed + APPLY_TIMEOUT_S
        while applied(rds, tenant) < round_.version and time.monotonic() < deadline:
            time.sleep(0.01)
        round_.applied = time.monotonic()
        round_.seen = seen_by(clients, round_.version)
        is_applied.set()
        round_.answers = [f.result() for f in futures]
    if applied(rds, tenant) < round_.version:
        raise AssertionError(f"event {round_.version} not applied in {APPLY_TIMEOUT_S} s")
    round_.appliers = appliers(clients, round_.version)
    return round_


def has_event(stats: dict[str, Any], version: int) -> bool:
    """The replica reads at ``version`` or later: its in-process snapshot clock (when it
    keeps one and it is live) has seen the event; otherwise it resolves in PostgreSQL."""
    clock = stats.get("snapshot_clock")
    return not clock or not clock["live"] or int(clock["latest"]) >= version


def seen_by(clients: list[httpx.Client], version: int) -> dict[int, float]:
    """Replica -> when it was first seen reading at ``version`` (polled)."""
    seen: dict[int, float] = {}
    deadline = time.monotonic() + APPLY_TIMEOUT_S
    while len(seen) < len(clients) and time.monotonic() < deadline:
        for i, client in enumerate(clients):
            if i not in seen and has_event(cache_stats(client), version):
                seen[i] = time.monotonic()
        time.sleep(0.05)
    missing = set(range(len(clients))) - set(seen)
    if missing:
        raise AssertionError(f"replicas {sorted(missing)} never read at {version}")
    return seen


def appliers(clients: list[httpx.Client], version: int) -> list[tuple[int, float | None]]:
    """(replica, its publish-to-eviction delay) for every time a replica applied ``version``."""
    found: list[tuple[int, float | None]] = []
    for i, client in enumerate(clients):
        recent = cache_stats(client)["invalidation"]["recent_events"]
        found += [(i, e["delay_ms"]) for e in recent if e["version"] == version]
    return found


def cache_stats(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/cache/stats")
    if response.status_code != 200:
        raise AssertionError(f"/cache/stats: {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    return body


def all_connected(clients: list[httpx.Client]) -> bool:
    return all(cache_stats(c)["invalidation"]["connected"] for c in clients)


def poll(check: Callable[[], bool], seconds: float = APPLY_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def cluster_writer(stack: Settings, env: dict[str, str], driver: Driver) -> GraphWriter:
    return GraphWriter(Settings.from_env({**stack.env, **env}), driver)
