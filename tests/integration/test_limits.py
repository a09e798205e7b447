"""Bounded work (issue 10, part 4): rate limit and concurrency cap per caller, request body
size, /search option bounds, and strategic risks answered from the GDS job's stored ranking.

The flood runs against a second gateway with small limits (its own Redis database, so its
counters never touch the stack's gateway); the body-size test watches the stack's gateway's
resident memory through /proc while a 200 MB body is offered.
"""

from __future__ import annotations

import os
import select
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from neo4j import Driver

from substrate.graph.records import slug
from substrate.security.apikeys import Grant, create
from substrate.settings import Settings
from tests.support.local_procs import gateway

RATE_PER_MINUTE = 120
BURST = 20
MAX_CONCURRENT = 4
FLOOD_REQUESTS = 300
FLOOD_CONCURRENCY = 16
PRIVATE_REDIS_DB = 13
HUGE = 200 * 1024 * 1024
QUERY = "Which services depend on the payments database?"


def _auth(stack: Settings) -> dict[str, str]:
    """The admin key once authentication is on (``up`` writes it), nothing before."""
    key = stack.secrets_dir / "admin_api_key"
    return {"Authorization": f"Bearer {key.read_text().strip()}"} if key.exists() else {}


@pytest.fixture(scope="module")
def limited(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    env = {"RATE_LIMIT_PER_MINUTE": str(RATE_PER_MINUTE), "RATE_LIMIT_BURST": str(BURST),
           "MAX_CONCURRENT_PER_PRINCIPAL": str(MAX_CONCURRENT),
           "REDIS_URL": f"redis://127.0.0.1:{stack.redis_port}/{PRIVATE_REDIS_DB}"}
    with gateway(tmp_path_factory.mktemp("limits"), stack.tenant, **env) as client:
        client.headers.update(_auth(stack))
        warm = _client_from(client, "127.0.0.9")
        try:
            assert _search(warm).status_code == 200  # load and cache before measuring
        finally:
            warm.close()
        yield client


def _client_from(base: httpx.Client, address: str, key: str | None = None) -> httpx.Client:
    """A client whose requests come from another loopback address; with ``key``, also as
    another principal (limits count per principal when the caller is authenticated)."""
    headers = dict(base.headers)
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=base.base_url, headers=headers, timeout=60,
                        transport=httpx.HTTPTransport(local_address=address))


def _reader_key(stack: Settings, name: str) -> str:
    """An API key of its own (another principal) reading the stack's tenant."""
    grant = Grant(tenants=(stack.tenant,), clearance="internal", roles=("reader",))
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        return create(conn, f"test-limits-{name}-{uuid.uuid4().hex[:6]}", grant)[1]


def _search(client: httpx.Client, query: str = QUERY, **options: Any) -> httpx.Response:
    body: dict[str, Any] = {"query": query}
    if options:
        body["options"] = options
    return client.post("/search", json=body)


# --- rate and concurrency ----------------------------------------------------------------------
def test_a_flood_gets_429s_while_another_caller_keeps_getting_answers(
        limited: httpx.Client, stack: Settings) -> None:
    other = _client_from(limited, "127.0.0.2", _reader_key(stack, "other"))
    stop = threading.Event()
    other_status: list[int] = []
    other_ms: list[float] = []

    def other_caller() -> None:
        while not stop.is_set() or len(other_status) < 5:
            started = time.perf_counter()
            other_status.append(_search(other).status_code)
            other_ms.append((time.perf_counter() - started) * 1000)
            time.sleep(0.4)  # well inside its own rate (2 per second)

    watcher = threading.Thread(target=other_caller)
    watcher.start()
    try:
        with ThreadPoolExecutor(FLOOD_CONCURRENCY) as pool:
            flood = list(pool.map(lambda _i: _search(limited), range(FLOOD_REQUESTS)))
    finally:
        stop.set()
        watcher.join()
        other.close()
    codes = [r.status_code for r in flood]
    refused = [r for r in flood if r.status_code == 429]
    assert set(codes) <= {200, 429}, sorted(set(codes))
    assert len(refused) >= FLOOD_REQUESTS // 2, codes.count(200)
    for r in refused:
        assert int(r.headers["Retry-After"]) >= 1
        error = r.json()["error"]
        assert error["code"] == "rate_limited" and error["detail"]["kind"] in {"rate",
                                                                                 "concurrency"}
    assert other_status and set(other_status) == {200}, other_status
    kinds = [r.json()["error"]["detail"]["kind"] for r in refused]
    print(f"\nflood: {len(refused)}/{FLOOD_REQUESTS} refused "
          f"({100 * len(refused) / FLOOD_REQUESTS:.0f}%; rate {kinds.count('rate')}, "
          f"concurrency {kinds.count('concurrency')}), other caller p50 "
          f"{statistics.median(other_ms):.0f} ms over {len(other_ms)} requests")


def test_the_rate_limit_names_its_limits(limited: httpx.Client, stack: Settings) -> None:
    caller = _client_from(limited, "127.0.0.3", _reader_key(stack, "burst"))
    try:
        responses = [_search(caller) for _ in range(BURST + 5)]
    finally:
        caller.close()
    refused = [r for r in responses if r.status_code == 429]
    assert refused, [r.status_code for r in responses]
    detail = refused[0].json()["error"]["detail"]
    assert detail == {"limit_per_minute": RATE_PER_MINUTE, "burst": BURST, "kind": "rate",
                      "retry_after_s": int(refused[0].headers["Retry-After"])}


def test_health_stays_reachable_during_a_flood(limited: httpx.Client) -> None:
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _i: _search(limited).status_code, range(60)))
    assert 429 in codes
    assert limited.get("/healthz").status_code == 200


# --- request body size -------------------------------------------------------------------------
def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _raw_request(port: int, head: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(head.encode())
    return sock


def _status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def _head(stack: Settings, extra: str) -> str:
    auth = "".join(f"{k}: {v}\r\n" for k, v in _auth(stack).items())
    return (f"POST /search HTTP/1.1\r\nHost: 127.0.0.1:{stack.gateway_port}\r\n{auth}"
            f"Content-Type: application/json\r\n{extra}\r\n")


def test_a_declared_oversize_body_is_refused_before_it_is_sent(stack: Settings) -> None:
    sock = _raw_request(stack.gateway_port, _head(stack, f"Content-Length: {HUGE}\r\n"))
    try:
        sock.sendall(b'{"query": "')  # a few bytes of the 200 MB: the answer comes now
        assert _status(sock) == 413
    finally:
        sock.close()


def test_a_streamed_oversize_body_is_cut_off_without_being_buffered(stack: Settings) -> None:
    pid = int((stack.run_dir / "gateway.pid").read_text())
    before = _rss_kb(pid)
    sock = _raw_request(stack.gateway_port, _head(stack, "Transfer-Encoding: chunked\r\n"))
    chunk = os.urandom(1024 * 1024).hex()[: 1024 * 1024].encode()
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent, peak = 0, before
    try:
        while sent < HUGE:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            sock.sendall(framed)
            sent += len(chunk)
            peak = max(peak, _rss_kb(pid))
        assert _status(sock) == 413
    finally:
        sock.close()
    assert sent < HUGE, "the gateway read the whole body before answering"
    grown_mb = (peak - before) / 1024
    assert grown_mb < 32, f"gateway RSS grew {grown_mb:.0f} MB while {sent >> 20} MB were sent"


# --- /search option bounds ---------------------------------------------------------------------
@pytest.mark.parametrize(("options", "option", "allowed"), [
    ({"max_hops": 50}, "max_hops", [1, 3]),
    ({"max_hops": True}, "max_hops", [1, 3]),
    ({"token_budget": 10_000_000}, "token_budget", [100, 20000]),
    ({"top_k": 0}, "top_k", [1, 50]),
    ({"top_k": 100000}, "top_k", [1, 50]),
    ({"strategies": [f"s{i}" for i in range(40)]}, "strategies", [1, 6]),
    ({"strategies": []}, "strategies", [1, 6]),
    ({"chunk": {"hop_decay": [0.5] * 100}}, "chunk.hop_decay", [0, 4]),
])
def test_heavy_options_outside_their_range_are_400(
        stack: Settings, options: dict[str, Any], option: str, allowed: list[int]) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.gateway_port}", timeout=60,
                      headers=_auth(stack)) as api:
        response = api.post("/search", json={"query": "risks", "options": options})
    assert response.status_code == 400, response.text
    detail = response.json()["error"]["detail"]
    assert (detail["option"], detail["allowed"]) == (option, allowed)


def test_a_query_too_long_is_400_with_the_allowed_length(stack: Settings) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.gateway_port}", timeout=60,
                      headers=_auth(stack)) as api:
        response = api.post("/search", json={"query": "x" * 2001})
    assert response.status_code == 400
    assert response.json()["error"]["detail"] == {"option": "query", "allowed": [1, 2000],
                                                  "got": 2001}


def test_repeated_strategies_run_once(stack: Settings) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.gateway_port}", timeout=60,
                      headers=_auth(stack)) as api:
        response = api.post("/search", json={"query": "top risks",
                                             "options": {"strategies": ["risks"] * 1000}})
    assert response.status_code == 200, response.text
    assert list(response.json()["strategies"]) == ["risks"]


# --- strategic risks from stored results -------------------------------------------------------
def _projections(driver: Driver, tenant: str) -> list[str]:
    """The GDS projections of ``tenant`` (the stack's community consumer may project others)."""
    records, _, _ = driver.execute_query("CALL gds.graph.list() YIELD graphName "
                                         "RETURN graphName")
    return [r["graphName"] for r in records if f"-{slug(tenant)}-v" in r["graphName"]]


def test_a_risks_flood_answers_from_the_stored_ranking_without_projecting(
        stack: Settings, limited: httpx.Client, driver: Driver) -> None:
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.extend(_projections(driver, stack.tenant))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    caller = _client_from(limited, "127.0.0.4", _reader_key(stack, "risks-flood"))
    try:
        with ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(
                lambda i: _search(caller, f"What are our top {1 + i % 5} architectural risks "
                                          f"(variant {i})?", strategies=["risks"]), range(60)))
    finally:
        stop.set()
        watcher.join()
        caller.close()
    answered = [r for r in responses if r.status_code == 200]
    assert {r.status_code for r in responses} <= {200, 429}
    assert answered and any(r.status_code == 429 for r in responses)
    for r in answered:
        note = r.json()["strategies"]["risks"]["note"]
        assert "stored ranking of the GDS risks job" in note, note
    assert seen == [] and _projections(driver, stack.tenant) == []


def test_the_risks_job_stores_its_ranking(stack: Settings) -> None:
    import psycopg

    from gds_jobs.__main__ import main

    assert main(["risks", "--clearance", "confidential", "--limit", "2"]) == 0
    with psycopg.connect(stack.postgres_dsn) as conn:
        row = conn.execute(
            "SELECT jsonb_array_length(items), now() - computed_at < interval '1 minute' "
            "FROM risk_rankings WHERE tenant_id = %s AND clearance = 'confidential' "
            "ORDER BY snapshot_version DESC LIMIT 1", (stack.tenant,)).fetchone()
    assert row is not None and row[0] > 2 and row[1] is True


def test_without_a_stored_ranking_risks_say_so_instead_of_projecting(
        stack: Settings, driver: Driver) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{stack.gateway_port}", timeout=60,
                      headers=_auth(stack)) as api:
        response = api.post("/search", json={"query": "What are our top 3 risks?",
                                             "snapshot_version": 2,
                                             "options": {"strategies": ["risks"]}})
    assert response.status_code == 200, response.text
    risks = response.json()["strategies"]["risks"]
    assert risks["hits"] == 0 and "No stored risk ranking" in risks["note"]
    assert _projections(driver, stack.tenant) == []
