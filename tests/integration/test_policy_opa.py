"""OPA as the policy engine (OPA_URL), with a real OPA server built from its Go module
(``python -m substrate.stack.opa install``) running plugins/opa/substrate.rego on loopback:
it agrees with the built-in rules, the gateway obeys its allow/deny, and an unreachable OPA
denies with 503 + Retry-After; every decision has its audit row."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from substrate.security.apikeys import Grant, create
from substrate.security.policy import BuiltinPolicy, OpaPolicy, PolicyInput, PolicyUnavailable
from substrate.security.principal import Principal
from substrate.settings import Settings
from substrate.stack import opa
from tests.support.local_procs import free_port, gateway

QUERY = {"query": "What does checkout depend on?"}


@pytest.fixture(scope="module")
def opa_url(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = opa.install(stack)  # built once from the Go module, then reused
    port = free_port()
    log = tmp_path_factory.mktemp("opa") / "opa.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(opa.serve_command(binary, port), stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"opa exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health?bundles", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"opa not healthy in time: {log.read_text()[-2000:]}")


def principal(tenants: set[str], clearance: str, roles: set[str]) -> Principal:
    return Principal("key:matrix", "api_key", frozenset(tenants), clearance, frozenset(roles))


MATRIX = [
    PolicyInput(principal(tenants, max_clearance, roles), action, tenant, clearance, "/x")
    for tenants, max_clearance, roles, action, tenant, clearance in itertools.product(
        [{"acme"}, {"*"}], ["public", "confidential"], [{"reader"}, {"reviewer"}, {"admin"}],
        ["read:/search", "write:/queue/approve", "admin:/admin/audit"], ["acme", "globex"],
        ["public", "internal", "restricted", "top-secret"])
]


def test_opa_and_the_builtin_rules_agree(opa_url: str) -> None:
    async def decide_all() -> list[tuple[bool, bool, frozenset[str], frozenset[str]]]:
        engine = OpaPolicy(opa_url, timeout_s=5)
        try:
            builtin = BuiltinPolicy()
            out = []
            for request in MATRIX:
                theirs, ours = await engine.decide(request), await builtin.decide(request)
                out.append((theirs.allow, ours.allow, theirs.redact, ours.redact))
            return out
        finally:
            await engine.aclose()

    verdicts = asyncio.run(decide_all())
    assert len(verdicts) == len(MATRIX) == 288
    assert [v[0] for v in verdicts] == [v[1] for v in verdicts]
    assert {v[2] == v[3] for v in verdicts} == {True}
    assert 0 < sum(v[0] for v in verdicts) < len(verdicts)


def test_opa_explains_a_denial(opa_url: str) -> None:
    async def decide() -> Any:
        engine = OpaPolicy(opa_url, timeout_s=5)
        try:
            return await engine.decide(PolicyInput(principal({"acme"}, "public", {"reader"}),
                                                   "write:/queue/approve", "globex",
                                                   "internal", "/queue/q/approve"))
        finally:
            await engine.aclose()

    verdict = asyncio.run(decide())
    assert not verdict.allow and verdict.engine == "opa"
    for part in ("tenant \"globex\"", "clearance \"internal\"", "\"reviewer\" role"):
        assert part in verdict.reason


def audit(stack: Settings, request_id: str, expected: int) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 10
    while True:
        with psycopg.connect(stack.postgres_dsn) as conn:
            rows = conn.execute("SELECT decision, reason, detail FROM policy_audit "
                                "WHERE request_id = %s ORDER BY id", (request_id,)).fetchall()
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def reader_key(stack: Settings) -> str:
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        return create(conn, f"test-opa-{uuid.uuid4().hex[:6]}",
                      Grant((stack.tenant,), "public", ("reader",)))[1]


def test_the_gateway_obeys_opa(stack: Settings, opa_url: str,
                               tmp_path_factory: pytest.TempPathFactory) -> None:
    with gateway(tmp_path_factory.mktemp("gw-opa"), stack.tenant, OPA_URL=opa_url) as client:
        allowed = client.post("/search", json=QUERY)
        assert allowed.status_code == 200, allowed.text
        policy = allowed.json()["policy"]
        assert policy["engine"] == "opa"
        rows = audit(stack, policy["request_id"], 1)
        assert rows[0][0] == "allowed" and rows[0][2]["engine"] == "opa"

        key = {"Authorization": f"Bearer {reader_key(stack)}"}
        denied = client.post("/queue/q-none/approve", json={}, headers=key)
        assert denied.status_code == 403, denied.text
        error = denied.json()["error"]
        assert error["detail"]["engine"] == "opa" and "reviewer" in error["message"]
        rows = audit(stack, error["detail"]["request_id"], 1)
        assert rows[0][0] == "denied" and "reviewer" in rows[0][1]

        above = client.post("/search", json=QUERY, headers={**key, "X-Clearance": "internal"})
        assert above.status_code == 403, above.text


def test_opa_unreachable_denies_with_503(stack: Settings,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with gateway(tmp_path_factory.mktemp("gw-opa-dead"), stack.tenant, OPA_URL=dead,
                 OPA_TIMEOUT_SECONDS="1") as client:
        r = client.post("/search", json=QUERY)
        assert r.status_code == 503, r.text
        assert int(r.headers["retry-after"]) >= 1
        error = r.json()["error"]
        assert error["code"] == "unavailable" and "OPA" in error["message"]
        rows = audit(stack, r.headers["x-request-id"], 1)
        assert rows and rows[0][0] == "denied" and "OPA" in rows[0][1]
        assert client.get("/healthz").status_code == 200  # liveness needs no decision


def test_an_unreachable_engine_raises(stack: Settings) -> None:
    async def decide() -> None:
        engine = OpaPolicy(f"http://127.0.0.1:{free_port()}", timeout_s=1)
        try:
            await engine.decide(MATRIX[0])
        finally:
            await engine.aclose()

    with pytest.raises(PolicyUnavailable) as info:
        asyncio.run(decide())
    assert info.value.status == 503 and info.value.retry_after >= 1
