"""Authentication and grants on the real stack: API keys (hashes in PostgreSQL), OIDC JWTs
signed by a test key served as a JWKS file and from a real local HTTP server, a trusted
upstream's signed identity, Host and Origin checks, JSON-only writes, roles, and the audit of
every refusal."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import psycopg
import pytest
import websockets
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.routing import Route

from gateway.app import routes
from gateway.authn import OPEN_PATHS
from substrate.graph import verification as vq
from substrate.graph.records import NodeRecord
from substrate.security import apikeys
from substrate.settings import Settings
from tests.support.gateway_client import admin_key, auth, base_url
from tests.support.local_procs import free_port, gateway

pytestmark = pytest.mark.integration

ISSUER = "https://idp.test.example"
UPSTREAM_SECRET = "upstream-test-secret-" + uuid.uuid4().hex
PROTECTED = [
    ("GET", "/dependencies/checkout", None), ("GET", "/ownership/checkout", None),
    ("GET", "/memory/payment", None), ("GET", "/temporal?at=2026-10-01T00:00:00Z", None),
    ("GET", "/impact/SHOP-10", None), ("GET", "/queue", None), ("GET", "/cache/stats", None),
    ("GET", "/timeline/checkout", None), ("GET", "/admin/audit", None),
    ("POST", "/search", {"query": "What does checkout depend on?"}),
    ("POST", "/cypher", {"query": "MATCH (n:Service) RETURN n.name LIMIT 1"}),
    ("POST", "/intent-check", {"pr": 447}), ("POST", "/queue/1/approve", {}),
    ("POST", "/queue/1/reject", {}), ("POST", "/counterfactual", {"bundle_hash": "ab" * 32}),
    ("GET", "/timeline-relate?a=checkout&b=payment", None), ("GET", "/admin/keys", None),
    ("GET", "/metrics", None),
]
BAD_KEYS = ("sk_nope", "sk_aaaaaaaaaaaa_" + "a" * 43, "not-a-token", "a.b.c")


def make_key(stack: Settings, tenants: tuple[str, ...], clearance: str,
             roles: tuple[str, ...] = ("reader",)) -> tuple[str, str]:
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        return apikeys.create(conn, "test", apikeys.Grant(tenants, clearance, roles))


@pytest.fixture(scope="module")
def keys(stack: Settings) -> dict[str, str]:
    return {
        "public": make_key(stack, ("acme",), "public")[1],
        "internal": make_key(stack, ("acme",), "internal")[1],
        "other": make_key(stack, ("t-other-tenant",), "restricted")[1],
        "reviewer": make_key(stack, ("acme",), "internal", ("reviewer",))[1],
    }


@pytest.fixture(scope="module")
def http(stack: Settings) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url(stack), timeout=60) as c:
        yield c


def call(http: httpx.Client, method: str, path: str, body: Any, key: str | None = None,
         **headers: str) -> httpx.Response:
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return http.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=[p for _, p, _ in PROTECTED])
def test_no_credentials_is_401_everywhere(http: httpx.Client, method: str, path: str,
                                          body: Any) -> None:
    r = call(http, method, path, body)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["code"] == "unauthorized"
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert r.headers["x-request-id"]


def test_every_route_is_in_the_protected_list() -> None:
    covered = [p.split("?")[0] for _, p, _ in PROTECTED]
    for route in routes():
        if isinstance(route, Route) and route.path not in OPEN_PATHS:
            assert any(route.path_regex.match(p) for p in covered), route.path


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=[p for _, p, _ in PROTECTED])
def test_a_bad_key_is_401_everywhere(http: httpx.Client, method: str, path: str,
                                     body: Any) -> None:
    for bad in BAD_KEYS:
        r = call(http, method, path, body, bad)
        assert r.status_code == 401, (bad, r.text)


def test_open_endpoints_need_no_credentials(http: httpx.Client) -> None:
    assert http.get("/healthz").status_code == 200
    assert http.get("/openapi.json").status_code == 200


def test_bad_and_revoked_keys_are_401(http: httpx.Client, stack: Settings) -> None:
    key_id, key = make_key(stack, ("acme",), "internal")
    assert call(http, "GET", "/ownership/checkout", None, key).status_code == 200
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        apikeys.revoke(conn, key_id)
    time.sleep(apikeys.CACHE_TTL_S + 0.5)  # a verified key is remembered this long
    assert call(http, "GET", "/ownership/checkout", None, key).status_code == 401


def test_another_tenants_key_sees_nothing_of_acme(http: httpx.Client,
                                                  keys: dict[str, str]) -> None:
    widened = call(http, "GET", "/dependencies/checkout", None, keys["other"], **{
        "X-Tenant": "acme"})
    assert widened.status_code == 403 and widened.json()["error"]["code"] == "forbidden"
    own = call(http, "POST", "/search", {"query": "What does checkout depend on?"},
               keys["other"])
    assert own.status_code == 200
    assert own.json()["citations"] == [] and "service:cart" not in own.text
    rows = call(http, "POST", "/cypher", {"query": "MATCH (n) RETURN count(n) AS c"},
                keys["other"]).json()["rows"]
    assert rows == [[0]]


def test_a_public_key_never_sees_internal(http: httpx.Client, keys: dict[str, str]) -> None:
    query = {"query": "MATCH (n:Entity) RETURN DISTINCT coalesce(n.classification, "
                      "'internal') AS c"}
    public = call(http, "POST", "/cypher", query, keys["public"]).json()["rows"]
    internal = call(http, "POST", "/cypher", query, keys["internal"]).json()["rows"]
    assert ["internal"] in internal and ["internal"] not in public
    higher = call(http, "GET", "/ownership/checkout", None, keys["public"],
                  **{"X-Clearance": "internal"})
    assert higher.status_code == 403  # a header can narrow a grant, never widen it
    narrowed = call(http, "POST", "/cypher", query, keys["internal"],
                    **{"X-Clearance": "public"}).json()["rows"]
    assert narrowed == public
    ids = {"query": "MATCH (n:Entity) WHERE coalesce(n.classification, 'internal') <> "
                    "'public' RETURN DISTINCT n.ceid AS id"}
    hidden = {row[0] for row in call(http, "POST", "/cypher", ids, keys["internal"]
                                       ).json()["rows"]}
    assert hidden  # the demo has entities above public
    assert call(http, "POST", "/cypher", ids, keys["public"]).json()["rows"] == []
    for question in ("What does checkout depend on?", "Who owns the checkout service?"):
        text = call(http, "POST", "/search", {"query": question}, keys["public"]).text
        leaked = {ceid for ceid in hidden if f'"{ceid}"' in text}
        assert not leaked, (question, sorted(leaked)[:5])


@pytest.fixture
def queued(stack: Settings) -> Iterator[tuple[str, int]]:
    """A pending verification item in a tenant of its own (no graph write needed)."""
    tenant = f"t-auth-{uuid.uuid4().hex[:8]}"
    item = vq.QueueItem(NodeRecord("service:maybe", "Service", {"name": "maybe"},
                                   confidence=0.3), "low confidence")
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        vq.enqueue(conn, tenant, "test", [item])
        item_id = vq.list_items(conn, tenant)[0]["id"]
    yield tenant, item_id
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM verification_queue WHERE tenant_id = %s", (tenant,))


def _status(stack: Settings, item_id: int) -> tuple[str, str | None]:
    with psycopg.connect(stack.postgres_dsn) as conn:
        row = conn.execute("SELECT status, decided_by FROM verification_queue WHERE id = %s",
                           (item_id,)).fetchone()
    assert row is not None
    return str(row[0]), row[1]


def test_a_reader_cannot_approve_and_writes_take_only_json(
        http: httpx.Client, stack: Settings, queued: tuple[str, int]) -> None:
    tenant, item_id = queued
    reader = make_key(stack, (tenant,), "internal")[1]
    reviewer_id, reviewer = make_key(stack, (tenant,), "internal", ("reviewer",))
    path = f"/queue/{item_id}/approve"
    r = call(http, "POST", path, {}, reader)
    assert r.status_code == 403 and "reviewer" in r.json()["error"]["message"]
    assert _status(stack, item_id) == ("pending", None)
    bearer = {"Authorization": f"Bearer {reviewer}"}
    assert http.post(path, data={"actor": "mallory"}, headers=bearer).status_code == 415
    assert http.post(path, headers=bearer).status_code == 415  # empty body, no JSON type
    assert http.post(path, content=b"{}", headers={**bearer, "Content-Type": "text/plain"}
                     ).status_code == 415
    assert _status(stack, item_id) == ("pending", None)
    self_declared = call(http, "POST", f"/queue/{item_id}/reject", {"actor": "mallory"},
                         reviewer)
    assert self_declared.status_code == 400  # the actor is never taken from the body
    write_id = f"write-{uuid.uuid4().hex[:12]}"
    done = call(http, "POST", f"/queue/{item_id}/reject", {"comment": "not a service"},
                reviewer, **{"X-Request-Id": write_id})
    assert done.status_code == 200, done.text
    assert _status(stack, item_id) == ("rejected", f"key:{reviewer_id}")
    time.sleep(1.0)  # audit rows are written right after the response
    rows = http.get("/admin/audit", params={"request_id": write_id},
                    headers=auth(stack)).json()["items"]
    assert [(r["decision"], r["principal"], r["action"], r["tenant"]) for r in rows] == [
        ("allowed", f"key:{reviewer_id}", "write:/queue/reject", tenant)]
    gone = call(http, "POST", "/queue/999999999/approve", {}, reviewer)
    assert gone.status_code == 404  # allowed to try; there is no such item


def test_host_allow_list_refuses_rebinding(http: httpx.Client, stack: Settings) -> None:
    r = http.get("/ownership/checkout", headers={**auth(stack), "Host": "evil.example:8080"})
    assert r.status_code == 400 and r.json()["error"]["detail"]["host"] == "evil.example"
    assert http.get("/ownership/checkout",
                    headers={**auth(stack), "Host": "localhost"}).status_code == 200


def test_websocket_needs_credentials_and_an_allowed_origin(stack: Settings) -> None:
    url = f"ws://127.0.0.1:{stack.gateway_port}/stream"

    async def attempt(headers: dict[str, str], query: str = "") -> str:
        try:
            async with websockets.connect(url + query, additional_headers=headers) as ws:
                await ws.send(json.dumps({"query": "Who owns checkout?"}))
                return str(json.loads(await asyncio.wait_for(ws.recv(), 60))["stage"])
        except websockets.exceptions.InvalidStatus as exc:
            return f"refused {exc.response.status_code}"
        except websockets.exceptions.ConnectionClosed as exc:
            return f"closed {exc.rcvd.code if exc.rcvd else None}"

    assert asyncio.run(attempt({})).startswith(("refused 403", "closed 1008"))
    assert asyncio.run(attempt({**auth(stack), "Origin": "http://evil.example"})).startswith(
        ("refused 403", "closed 1008"))
    for bad in ("sk_nope", "sk_aaaaaaaaaaaa_" + "a" * 43):
        assert asyncio.run(attempt({"Authorization": f"Bearer {bad}"})).startswith(
            ("refused 403", "closed 1008"))
        assert asyncio.run(attempt({}, f"?access_token={bad}")).startswith(
            ("refused 403", "closed 1008"))
    assert asyncio.run(attempt(auth(stack))) == "route"
    assert asyncio.run(attempt({"Origin": f"http://127.0.0.1:{stack.gateway_port}"},
                               f"?access_token={admin_key(stack)}")) == "route"


def test_refusals_and_writes_are_audited(http: httpx.Client, keys: dict[str, str],
                                         stack: Settings) -> None:
    request_id = f"audit-{uuid.uuid4().hex[:12]}"
    denied = http.get("/ownership/checkout", headers={"X-Request-Id": request_id})
    assert denied.status_code == 401 and denied.headers["x-request-id"] == request_id
    write_id = f"write-{uuid.uuid4().hex[:12]}"
    call(http, "POST", "/queue/1/approve", {}, keys["internal"], **{"X-Request-Id": write_id})
    time.sleep(1.0)  # audit rows are written right after the response
    admin = auth(stack)
    rows = http.get("/admin/audit", params={"request_id": request_id}, headers=admin).json()
    assert [r["decision"] for r in rows["items"]] == ["denied"]
    assert rows["items"][0]["principal"] == "anonymous"
    writes = http.get("/admin/audit", params={"request_id": write_id}, headers=admin).json()
    assert any(r["decision"] == "denied" and r["principal"].startswith("key:")
               for r in writes["items"]), writes
    assert call(http, "GET", "/admin/audit", None, keys["reviewer"]).status_code == 403


def test_admin_lists_keys_without_secrets(http: httpx.Client, keys: dict[str, str],
                                          stack: Settings) -> None:
    listed = http.get("/admin/keys", headers=auth(stack))
    assert listed.status_code == 200
    by_id = {k["id"]: k for k in listed.json()["items"]}
    public_id = keys["public"].split("_")[1]
    assert by_id[public_id]["tenants"] == ["acme"] and by_id[public_id]["clearance"] == "public"
    assert keys["public"].split("_", 2)[2] not in listed.text
    assert call(http, "GET", "/admin/keys", None, keys["reviewer"]).status_code == 403


# --- OIDC JWTs and the trusted upstream, on gateways of their own ---------------------------

class _Jwks(BaseHTTPRequestHandler):
    body = b"{}"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def signing() -> tuple[Any, dict[str, Any]]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    public_jwk.update({"kid": "test-1", "use": "sig", "alg": "RS256"})
    return private, {"keys": [public_jwk]}


def token(private: Any, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": "substrate", "sub": "alice", "iat": now, "exp": now + 300,
            "tenants": ["acme"], "clearance": "internal", "roles": ["reader"], **claims}
    return jwt.encode(body, private, algorithm="RS256", headers={"kid": "test-1"})


@pytest.fixture(scope="module")
def jwks_file(tmp_path_factory: pytest.TempPathFactory,
              signing: tuple[Any, dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps(signing[1]))
    return path


@pytest.fixture(scope="module")
def jwks_url(signing: tuple[Any, dict[str, Any]]) -> Iterator[str]:
    handler = type("Jwks", (_Jwks,), {"body": json.dumps(signing[1]).encode()})
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json"
    server.shutdown()


@pytest.mark.parametrize("source", ["file", "url"])
def test_oidc_tokens(stack: Settings, tmp_path: Path, signing: tuple[Any, dict[str, Any]],
                     jwks_file: Path, jwks_url: str, source: str) -> None:
    private = signing[0]
    env = {"OIDC_ISSUER": ISSUER, "UPSTREAM_IDENTITY_SECRET": UPSTREAM_SECRET}
    env["OIDC_JWKS_FILE" if source == "file" else "OIDC_JWKS_URL"] = \
        str(jwks_file) if source == "file" else jwks_url
    with gateway(tmp_path, "acme", **env) as gw:
        gw.headers.pop("Authorization")

        def status(tok: str, **headers: str) -> int:
            return gw.get("/ownership/checkout",
                          headers={"Authorization": f"Bearer {tok}", **headers}).status_code

        assert status(token(private)) == 200
        assert status(token(private, iss="https://other.example")) == 401
        assert status(token(private, aud="someone-else")) == 401
        assert status(token(private, exp=int(time.time()) - 3600)) == 401
        assert status(token(private, tenants=["t-other"])) == 403  # X-Tenant acme: not granted
        assert status(token(private, clearance="public"), **{"X-Clearance": "internal"}) == 403
        forged = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        assert status(token(forged)) == 401  # right kid, wrong signature
        # a reader token cannot approve
        r = gw.post("/queue/1/approve", json={},
                    headers={"Authorization": f"Bearer {token(private)}"})
        assert r.status_code == 403
        if source == "file":
            upstream = jwt.encode({"sub": "bob", "iat": int(time.time()),
                                   "exp": int(time.time()) + 60, "aud": "substrate",
                                   "tenants": ["acme"], "clearance": "internal"},
                                  UPSTREAM_SECRET, algorithm="HS256")
            ok = gw.get("/ownership/checkout", headers={"X-Substrate-Identity": upstream})
            assert ok.status_code == 200
            bare = gw.get("/ownership/checkout",
                          headers={"X-User": "bob", "X-Tenant": "acme",
                                   "X-Clearance": "restricted", "X-Roles": "admin"})
            assert bare.status_code == 401  # bare identity headers are never trusted
            wrong = jwt.encode({"sub": "eve", "iat": int(time.time()),
                                "exp": int(time.time()) + 60, "tenants": ["acme"]},
                               "not-the-secret-" + "x" * 32, algorithm="HS256")
            assert gw.get("/ownership/checkout",
                          headers={"X-Substrate-Identity": wrong}).status_code == 401
