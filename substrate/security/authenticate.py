"""From presented credentials to a :class:`Principal`, or :class:`Unauthorized`.

Three kinds of credentials, tried in this order:

* ``X-Substrate-Identity: <JWT>`` — a trusted upstream gateway's signed identity
  (:meth:`TokenVerifier.verify_upstream`); bare identity headers are never read;
* ``Bearer sk_<id>_<secret>`` — an API key (:class:`KeyVerifier`, hashes in PostgreSQL);
* ``Bearer <JWT>`` — an OIDC token checked against the configured JWKS
  (:meth:`TokenVerifier.verify`).

The HTTP shell (``gateway/authn.py``) only extracts the strings; this module decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psycopg_pool import AsyncConnectionPool

from substrate.errors import Unauthorized, Unavailable
from substrate.security.apikeys import CACHE_TTL_S, KeyVerifier
from substrate.security.principal import Principal
from substrate.security.tokens import TokenInvalid, TokenVerifier
from substrate.settings import Settings

PoolSource = Callable[[], "AsyncConnectionPool[Any] | None"]


@dataclass(frozen=True)
class Credentials:
    """What a request presented: the bearer token (from ``Authorization`` or, for a
    WebSocket, ``?access_token=``) and an upstream identity token."""

    bearer: str = ""
    upstream: str = ""

    @classmethod
    def from_authorization(cls, header: str, upstream: str = "",
                           access_token: str = "") -> Credentials:
        scheme, _, token = header.strip().partition(" ")
        bearer = token.strip() if scheme.lower() == "bearer" else ""
        return cls(bearer=bearer or access_token.strip(), upstream=upstream.strip())


class Authenticator:
    """Verifies credentials; API keys need PostgreSQL, reached through ``pool`` (called
    lazily: the gateway's pool opens in its lifespan, after the middleware is built)."""

    def __init__(self, settings: Settings, pool: PoolSource,
                 key_cache_s: float = CACHE_TTL_S) -> None:
        self.tokens = TokenVerifier(settings)
        self.key_cache_s = key_cache_s  # how long a verified API key is remembered
        self._pool = pool
        self._keys: KeyVerifier | None = None

    async def authenticate(self, credentials: Credentials) -> Principal:
        if credentials.upstream:
            return self._token(self.tokens.verify_upstream, credentials.upstream)
        token = credentials.bearer
        if not token:
            raise Unauthorized("credentials required: Authorization: Bearer <API key or token>")
        if token.startswith("sk_"):
            principal = await self.keys().verify(token)
            if principal is None:
                raise Unauthorized("unknown or revoked API key")
            return principal
        if self.tokens.fetches_keys:  # a JWKS fetch must not block the event loop
            return await asyncio.to_thread(self._token, self.tokens.verify, token)
        return self._token(self.tokens.verify, token)

    def keys(self) -> KeyVerifier:
        if self._keys is None:
            pool = self._pool()
            if pool is None:
                raise Unavailable("the service is starting; try again")
            self._keys = KeyVerifier(pool, self.key_cache_s)
        return self._keys

    @staticmethod
    def _token(verify: Callable[[str], Principal], token: str) -> Principal:
        try:
            return verify(token)
        except TokenInvalid as exc:
            raise Unauthorized(str(exc)) from exc
