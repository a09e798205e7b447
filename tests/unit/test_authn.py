"""Authentication without a database: host names, credentials, grants, JWTs against a JWKS
file, the upstream identity, and the middleware in process (401/400/403/415, request ids)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.authn import AuthMiddleware, host_name
from gateway.errors import EXCEPTION_HANDLERS
from substrate.errors import BadRequest, Forbidden, Unauthorized, Unavailable
from substrate.security import apikeys
from substrate.security.authenticate import Authenticator, Credentials
from substrate.security.principal import Principal
from substrate.security.tokens import TokenInvalid, TokenVerifier, principal_from_claims
from substrate.settings import Settings

ISSUER = "https://idp.unit.example"
SECRET = "unit-upstream-secret-0123456789abcdef"
PRIVATE = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks(private: Any = PRIVATE, kid: str = "k1") -> dict[str, Any]:
    jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    return {"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]}


def token(private: Any = PRIVATE, kid: str = "k1", **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": "substrate", "sub": "alice", "iat": now, "exp": now + 300,
            "tenants": ["acme"], "clearance": "internal", "roles": ["reviewer"], **claims}
    return jwt.encode(body, private, algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks()))
    return Settings.from_env({"SUBSTRATE_HOME": str(tmp_path), "OIDC_JWKS_FILE": str(path),
                              "OIDC_ISSUER": ISSUER, "UPSTREAM_IDENTITY_SECRET": SECRET})


@pytest.mark.parametrize(("header", "name"), [
    ("127.0.0.1:8080", "127.0.0.1"), ("LocalHost", "localhost"), ("[::1]:8080", "::1"),
    ("::1", "::1"), ("evil.example:80", "evil.example"), ("", ""),
])
def test_host_names_compare_without_the_port(header: str, name: str) -> None:
    assert host_name(header) == name


def test_credentials_from_headers() -> None:
    assert Credentials.from_authorization("Bearer  abc ").bearer == "abc"
    assert Credentials.from_authorization("bearer abc").bearer == "abc"
    assert Credentials.from_authorization("Basic abc").bearer == ""
    assert Credentials.from_authorization("", access_token="q").bearer == "q"
    assert Credentials.from_authorization("Bearer h", access_token="q").bearer == "h"
    assert Credentials.from_authorization("", upstream=" u ").upstream == "u"


def test_headers_only_narrow_a_grant() -> None:
    p = Principal("key:x", "api_key", frozenset({"acme"}), "internal", frozenset({"reader"}),
                  default_tenant="acme")
    assert p.tenant_for(None, "other") == "acme"
    assert p.clearance_for(None) == "internal" and p.clearance_for("PUBLIC") == "public"
    with pytest.raises(Forbidden):
        p.tenant_for("globex", "acme")
    with pytest.raises(Forbidden):
        p.clearance_for("restricted")
    assert not p.has_role("reviewer")
    admin = Principal("key:a", "api_key", frozenset({"*"}), "restricted", frozenset({"admin"}))
    assert admin.tenant_for("globex", "acme") == "globex" and admin.has_role("reviewer")


def test_claims_map_to_a_grant_with_a_configurable_mapping() -> None:
    mapping = {"tenants": "org", "clearance": "lvl", "roles": "groups",
               "jurisdictions": "regions"}
    p = principal_from_claims({"sub": "bob", "iss": "i", "org": "acme globex", "lvl": "Public",
                               "groups": ["reviewer", "sudo"], "regions": ["EU"]},
                              mapping, "jwt", "jwt")
    assert p.tenants == {"acme", "globex"} and p.max_clearance == "public"
    assert p.roles == {"reviewer"} and p.jurisdictions == {"EU"} and p.id == "jwt:i|bob"
    with pytest.raises(TokenInvalid):
        principal_from_claims({"sub": "bob"}, mapping, "jwt", "jwt")  # no tenant
    with pytest.raises(TokenInvalid):
        principal_from_claims({"sub": "b", "org": "a", "lvl": "top"}, mapping, "jwt", "jwt")


def test_jwts_from_a_jwks_file(settings: Settings) -> None:
    tokens = TokenVerifier(settings)
    p = tokens.verify(token())
    assert (p.kind, p.tenants, p.max_clearance, p.roles) == (
        "jwt", frozenset({"acme"}), "internal", frozenset({"reviewer"}))
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    refused = {
        "issuer": token(iss="https://other.example"), "audience": token(aud="else"),
        "expired": token(exp=int(time.time()) - 3600), "signature": token(other),
        "kid": token(kid="k2"), "garbage": "a.b.c", "no sub": token(sub=None),
    }
    for why, bad in refused.items():
        with pytest.raises(TokenInvalid):
            tokens.verify(bad)
            pytest.fail(why)
    # a rotated key file is read again
    Path(settings.oidc_jwks_file).write_text(json.dumps(jwks(other, "k2")))
    os.utime(settings.oidc_jwks_file, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert tokens.verify(token(other, "k2")).id == f"jwt:{ISSUER}|alice"
    Path(settings.oidc_jwks_file).unlink()
    with pytest.raises(TokenInvalid, match="could not be read"):
        tokens.verify(token())


def test_jwts_are_refused_when_no_jwks_is_configured(tmp_path: Path) -> None:
    bare = Settings.from_env({"SUBSTRATE_HOME": str(tmp_path)})
    with pytest.raises(TokenInvalid, match="no OIDC JWKS"):
        TokenVerifier(bare).verify(token())
    with pytest.raises(TokenInvalid, match="no trusted upstream"):
        TokenVerifier(bare).verify_upstream(jwt.encode({"sub": "x"}, SECRET, "HS256"))


def test_upstream_identity_needs_the_shared_secret(settings: Settings) -> None:
    now = int(time.time())
    claims = {"sub": "bob", "iat": now, "exp": now + 60, "aud": "substrate",
              "tenants": ["acme"], "clearance": "public"}
    p = TokenVerifier(settings).verify_upstream(jwt.encode(claims, SECRET, "HS256"))
    assert (p.id, p.kind, p.roles) == ("upstream:|bob", "upstream", frozenset({"reader"}))
    for bad in (jwt.encode(claims, "another-secret-0123456789abcdef0123", "HS256"),
                jwt.encode({**claims, "exp": now - 3600}, SECRET, "HS256"),
                token()):  # an RS256 token is not an upstream identity
        with pytest.raises(TokenInvalid):
            TokenVerifier(settings).verify_upstream(bad)
    short = Settings.from_env({"SUBSTRATE_HOME": str(settings.home),
                               "UPSTREAM_IDENTITY_SECRET": "short"})
    with pytest.raises(TokenInvalid, match="too short"):
        TokenVerifier(short).verify_upstream(jwt.encode(claims, SECRET, "HS256"))


def test_grants_are_validated() -> None:
    assert apikeys.Grant(("*",), "restricted", ("admin",)).validate()
    for grant in (apikeys.Grant((), "public", ("reader",)),
                  apikeys.Grant(("acme",), "secret", ("reader",)),
                  apikeys.Grant(("acme",), "public", ("root",)),
                  apikeys.Grant(("acme",), "public", ())):
        with pytest.raises(BadRequest):
            grant.validate()


def test_key_format() -> None:
    assert apikeys.KEY.match("sk_0123456789ab_" + "A" * 43)
    assert not apikeys.KEY.match("sk_0123456789ab_" + "A" * 42)
    assert not apikeys.KEY.match("sk_0123456789a!_" + "A" * 43)


def test_an_api_key_before_the_database_pool_is_open_is_503(settings: Settings) -> None:
    auth = Authenticator(settings, lambda: None)
    with pytest.raises(Unavailable):
        asyncio.run(auth.authenticate(Credentials(bearer="sk_0123456789ab_" + "A" * 43)))
    with pytest.raises(Unauthorized):
        asyncio.run(auth.authenticate(Credentials()))


# --- the middleware in process ---------------------------------------------------------------

def _app(settings: Settings) -> Starlette:
    async def whoami(request: Request) -> JSONResponse:
        p: Principal = request.state.principal
        return JSONResponse({"id": p.id, "request_id": request.state.request_id})

    async def open_route(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    return Starlette(routes=[Route("/whoami", whoami, methods=["GET", "POST"]),
                             Route("/healthz", open_route)],
                     middleware=[Middleware(AuthMiddleware, settings=settings)],
                     exception_handlers=EXCEPTION_HANDLERS)


def _run(settings: Settings, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=_app(settings))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as c:
            return await c.request(method, path, **kwargs)

    return asyncio.run(go())


def test_middleware_authenticates_and_echoes_the_request_id(settings: Settings) -> None:
    bearer = {"Authorization": f"Bearer {token()}"}
    ok = _run(settings, "GET", "/whoami", headers={**bearer, "X-Request-Id": "req-1"})
    assert ok.status_code == 200 and ok.json() == {"id": f"jwt:{ISSUER}|alice",
                                                   "request_id": "req-1"}
    assert ok.headers["x-request-id"] == "req-1"
    odd = _run(settings, "GET", "/whoami", headers={**bearer, "X-Request-Id": "a b<" * 30})
    assert len(odd.headers["x-request-id"]) == 32  # not echoed: a fresh id instead
    missing = _run(settings, "GET", "/whoami")
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["error"]["code"] == "unauthorized" and missing.headers["x-request-id"]
    assert _run(settings, "GET", "/healthz").status_code == 200
    bad = _run(settings, "GET", "/whoami", headers={"Authorization": "Bearer " + token(
        exp=int(time.time()) - 3600)})
    assert bad.status_code == 401 and "expired" in bad.json()["error"]["message"]


def test_middleware_refuses_foreign_hosts_and_non_json_bodies(settings: Settings) -> None:
    bearer = {"Authorization": f"Bearer {token()}"}
    evil = _run(settings, "GET", "/healthz", headers={"Host": "evil.example"})
    assert evil.status_code == 400 and evil.json()["error"]["detail"] == {"host": "evil.example"}
    assert _run(settings, "GET", "/whoami", headers={**bearer, "Host": "[::1]:9"}).status_code \
        == 200
    form = _run(settings, "POST", "/whoami", headers=bearer, data={"actor": "x"})
    assert form.status_code == 415
    assert _run(settings, "POST", "/whoami", headers=bearer).status_code == 415
    assert _run(settings, "POST", "/whoami", headers=bearer, json={}).status_code == 200
    plain = _run(settings, "POST", "/whoami", headers={**bearer, "Content-Type": "text/plain"},
                 content=b"{}")
    assert plain.status_code == 415
