"""Bearer JWTs (OIDC) and a trusted upstream's signed identity, verified with PyJWT.

* OIDC: the signature is checked against a JWKS (a URL through ``PyJWKClient``, or a file),
  with issuer, audience, expiry (and ``nbf``/``iat``) enforced; claims map to a grant through
  ``OIDC_CLAIMS`` (``tenants=…,clearance=…,roles=…,jurisdictions=…``: which claim holds what).
* Upstream: a gateway in front of this one may pass who the caller is only as a short-lived
  HS256 JWT in ``X-Substrate-Identity`` signed with ``UPSTREAM_IDENTITY_SECRET`` — never as
  bare headers, which are ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jwt

from substrate.retrieval.scope import CLASSIFICATIONS
from substrate.security.principal import ROLES, Principal
from substrate.settings import Settings

ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA"]
LEEWAY_S = 30
REQUIRED = ["exp", "iat", "sub"]
MIN_UPSTREAM_SECRET_BYTES = 32


class TokenInvalid(Exception):
    """The token was refused; the message says why (safe to show: no claim values)."""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v for v in value.replace(",", " ").split() if v]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def principal_from_claims(claims: dict[str, Any], mapping: dict[str, str], kind: str,
                          prefix: str) -> Principal:
    tenants = _strings(claims.get(mapping.get("tenants", "tenants")))
    clearance = str(claims.get(mapping.get("clearance", "clearance")) or "public").lower()
    roles = [r for r in _strings(claims.get(mapping.get("roles", "roles"))) if r in ROLES]
    if not tenants:
        raise TokenInvalid("the token grants no tenant")
    if clearance not in CLASSIFICATIONS:
        raise TokenInvalid("the token's clearance is not a known level")
    return Principal(
        id=f"{prefix}:{claims.get('iss', '')}|{claims['sub']}", kind=kind,
        tenants=frozenset(tenants), max_clearance=clearance,
        roles=frozenset(roles or ["reader"]),
        jurisdictions=frozenset(_strings(claims.get(mapping.get("jurisdictions",
                                                                 "jurisdictions")))),
        default_tenant=tenants[0] if len(tenants) == 1 else None)


class TokenVerifier:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client = (jwt.PyJWKClient(settings.oidc_jwks_url, cache_keys=True,
                                        lifespan=300, timeout=5)
                        if settings.oidc_jwks_url else None)
        self._file_keys: dict[str, Any] | None = None
        self._file_mtime = 0

    @property
    def fetches_keys(self) -> bool:
        """True when verifying may fetch the JWKS over the network (run it off the loop)."""
        return self._client is not None

    @property
    def enabled(self) -> bool:
        return bool(self.settings.oidc_jwks_url or self.settings.oidc_jwks_file)

    def _key(self, token: str) -> Any:
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token).key
        path = Path(self.settings.oidc_jwks_file)
        mtime = path.stat().st_mtime_ns
        if self._file_keys is None or mtime != self._file_mtime:  # rotated: read again
            jwks = jwt.PyJWKSet.from_dict(json.loads(path.read_text()))
            self._file_keys = {k.key_id or "": k.key for k in jwks.keys}
            self._file_mtime = mtime
        kid = jwt.get_unverified_header(token).get("kid") or ""
        if kid not in self._file_keys:
            if len(self._file_keys) == 1 and not kid:
                return next(iter(self._file_keys.values()))
            raise TokenInvalid("unknown signing key")
        return self._file_keys[kid]

    def verify(self, token: str) -> Principal:
        if not self.enabled:
            raise TokenInvalid("bearer JWTs are not accepted here (no OIDC JWKS configured)")
        try:
            claims = jwt.decode(
                token, self._key(token), algorithms=ALGORITHMS,
                audience=self.settings.oidc_audience or None,
                issuer=self.settings.oidc_issuer or None, leeway=LEEWAY_S,
                options={"require": REQUIRED + (["iss"] if self.settings.oidc_issuer else [])})
        except jwt.PyJWKClientError as e:
            raise TokenInvalid("the signing keys could not be fetched") from e
        except jwt.ExpiredSignatureError as e:
            raise TokenInvalid("the token has expired") from e
        except jwt.InvalidTokenError as e:
            raise TokenInvalid(f"invalid token: {type(e).__name__}") from e
        except (OSError, ValueError, jwt.PyJWKSetError) as e:
            raise TokenInvalid("the signing keys (OIDC_JWKS_FILE) could not be read") from e
        return principal_from_claims(claims, self.settings.oidc_claims, "jwt", "jwt")

    def verify_upstream(self, token: str) -> Principal:
        secret = self.settings.upstream_identity_secret
        if not secret:
            raise TokenInvalid("no trusted upstream is configured")
        if len(secret.encode()) < MIN_UPSTREAM_SECRET_BYTES:  # a guessable HS256 key: refuse
            raise TokenInvalid("UPSTREAM_IDENTITY_SECRET is too short (32 bytes at least)")
        try:
            claims = jwt.decode(token, secret, algorithms=["HS256"], leeway=LEEWAY_S,
                                audience=self.settings.oidc_audience or None,
                                options={"require": REQUIRED})
        except jwt.InvalidTokenError as e:
            raise TokenInvalid(f"invalid upstream identity: {type(e).__name__}") from e
        return principal_from_claims(claims, self.settings.oidc_claims, "upstream", "upstream")
