"""Every malformed input is a 4xx with the error body, on the running gateway, and the
keep-alive connection survives it: non-finite numbers, bad Unicode, JSON and parameter-map
depth, integer ranges, unknown and empty tenants; a WebSocket message nested too deep is an
error frame, not a dropped connection."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from substrate.settings import Settings
from tests.support.gateway_client import admin_key, gateway

pytestmark = pytest.mark.integration

BAD_QUERIES = [
    "/dependencies/checkout?min_weight=nan", "/dependencies/checkout?min_weight=inf",
    "/dependencies/checkout?min_weight=-inf", "/dependencies/checkout?min_weight=1e309",
    "/dependencies/checkout?depth=99999999999999999999999",
    "/temporal?at=2026-10-01T00:00:00Z&offset=9223372036854775807",
    "/temporal?at=2026-10-01T00:00:00Z&limit=-1",
    "/dependencies/checkout?types=%ED%A0%80", "/dependencies/checkout?q=%FF%FE",
    "/dependencies/checkout?direction=a%00b", "/queue?limit=1e3",
]
DEEP = "[" * 1000 + "]" * 1000


def deep_map(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(depth):
        out = {"k": out}
    return out


BAD_BODIES: list[tuple[str, bytes]] = [
    ("/search", b'{"query": "checkout", "options": {"min_weight": NaN}}'),
    ("/search", b'{"query": "checkout", "options": {"min_weight": Infinity}}'),
    ("/search", b'{"query": "checkout", "options": {"top_k": 1e309}}'),
    ("/search", b'{"query": "\\ud800 checkout"}'),
    ("/search", b'{"query": "a\\u0000b"}'),
    ("/search", ('{"query": "x", "options": ' + DEEP + "}").encode()),
    ("/search", b'{"query": "checkout", "options": {"top_k": 9223372036854775808}}'),
    ("/cypher", json.dumps({"query": "RETURN $p AS p", "params": {"p": deep_map(500)}}
                           ).encode()),
    ("/cypher", b'{"query": "RETURN $p AS p", "params": {"p": NaN}}'),
    ("/intent-check", b'{"pr": 447, "threshold": -Infinity}'),
    ("/counterfactual", b'{"bundle_hash": "\\udfff"}'),
]


@pytest.mark.parametrize("path", BAD_QUERIES)
def test_bad_query_parameters_are_400_and_the_connection_stays(
    stack: Settings, path: str
) -> None:
    with gateway(stack) as client:
        bad = client.get(path)
        assert bad.status_code == 400, (path, bad.text)
        assert bad.json()["error"]["code"] == "bad_request"
        assert client.get("/dependencies/checkout").status_code == 200  # same connection


@pytest.mark.parametrize(("path", "body"), BAD_BODIES)
def test_bad_json_bodies_are_400(stack: Settings, path: str, body: bytes) -> None:
    with gateway(stack, headers={"Content-Type": "application/json"}) as client:
        bad = client.post(path, content=body)
        assert bad.status_code == 400, (path, body[:80], bad.text[:300])
        assert set(bad.json()["error"]) == {"code", "message", "detail"}


def test_unknown_tenant_is_404_naming_it_and_empty_tenant_400(stack: Settings) -> None:
    with gateway(stack, headers={"X-Tenant": "no-such-tenant"}) as client:
        for response in (client.get("/dependencies/checkout"),
                         client.post("/search", json={"query": "who owns checkout?"})):
            assert response.status_code == 404, response.text
            assert "no-such-tenant" in response.json()["error"]["message"]
    with gateway(stack, headers={"X-Tenant": ""}) as client:
        assert client.get("/dependencies/checkout").status_code == 400
    with gateway(stack, headers={"X-Tenant": stack.tenant}) as client:
        assert client.get("/dependencies/checkout").status_code == 200


def test_a_too_deep_websocket_message_is_an_error_frame(stack: Settings) -> None:
    url = f"ws://127.0.0.1:{stack.gateway_port}/stream"
    headers = {"Authorization": f"Bearer {admin_key(stack)}",
               "Origin": f"http://127.0.0.1:{stack.gateway_port}"}
    with connect(url, additional_headers=headers, open_timeout=30) as ws:
        ws.send('{"query": "x", "options": ' + "[" * 1000 + "]" * 1000 + "}")
        frame = json.loads(ws.recv(timeout=30))
        assert frame["stage"] == "error" and "deeper" in frame["data"]["error"]["message"]
        ws.send(json.dumps({"query": "Who owns the checkout service?"}))
        stages: list[str] = []
        while not stages or stages[-1] not in ("done", "error"):
            stages.append(json.loads(ws.recv(timeout=60))["stage"])
        assert stages[-1] == "done"


def test_a_body_over_the_limit_is_413_while_streaming(stack: Settings) -> None:
    def chunks() -> Any:
        for _ in range(1000):
            yield b" " * 65536

    with gateway(stack, headers={"Content-Type": "application/json"}) as client:
        try:
            response = client.post("/search", content=chunks())
        except httpx.HTTPError:  # the server may close once it has answered
            return
        assert response.status_code == 413
