"""API keys: ``sk_<id>_<secret>``, only a salted hash of the secret stored in PostgreSQL.

The secret is 32 random bytes (256 bits), so a keyed hash (HMAC-SHA256 with a per-key salt)
is the right storage, as for other high-entropy tokens; comparison is constant-time. A
verified key is remembered in-process for ``CACHE_TTL_S`` seconds so the hot path makes no
database round trip; revocation takes effect within that time.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from substrate.errors import BadRequest, NotFound, Unavailable
from substrate.retrieval.scope import CLASSIFICATIONS
from substrate.security.principal import ALL_TENANTS, ROLES, Principal

KEY = re.compile(r"^sk_(?P<id>[A-Za-z0-9]{12})_(?P<secret>[A-Za-z0-9_-]{43})$")
CACHE_TTL_S = 5.0

INSERT_SQL = (
    "INSERT INTO api_keys (id, name, salt, secret_hash, tenants, max_clearance, roles, "
    "jurisdictions) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
LOOKUP_SQL = (
    "SELECT salt, secret_hash, tenants, max_clearance, roles, jurisdictions, revoked_at "
    "FROM api_keys WHERE id = %s"
)
LIST_SQL = (
    "SELECT id, name, tenants, max_clearance, roles, jurisdictions, created_at, revoked_at "
    "FROM api_keys ORDER BY created_at, id"
)
REVOKE_SQL = "UPDATE api_keys SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL"


@dataclass(frozen=True)
class Grant:
    tenants: tuple[str, ...]
    clearance: str
    roles: tuple[str, ...]
    jurisdictions: tuple[str, ...] = ()

    def validate(self) -> Grant:
        if not self.tenants or any(not t.strip() for t in self.tenants):
            raise BadRequest("a key needs at least one tenant (or '*')")
        if self.clearance not in CLASSIFICATIONS:
            raise BadRequest(f"unknown clearance {self.clearance!r}",
                             {"allowed": list(CLASSIFICATIONS)})
        unknown = set(self.roles) - set(ROLES)
        if not self.roles or unknown:
            raise BadRequest("roles must be some of reader, reviewer, admin",
                             {"unknown": sorted(unknown)})
        return self


def _digest(salt: bytes, secret: str) -> bytes:
    return hmac.new(salt, secret.encode(), hashlib.sha256).digest()


def create(conn: psycopg.Connection[Any], name: str, grant: Grant) -> tuple[str, str]:
    """(key id, the full key) — the key is shown once and never stored."""
    grant.validate()
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    conn.execute(INSERT_SQL, (key_id, name, salt, _digest(salt, secret), list(grant.tenants),
                              grant.clearance, list(grant.roles), list(grant.jurisdictions)))
    return key_id, f"sk_{key_id}_{secret}"


def standing(conn: psycopg.Connection[Any], key: str) -> str:
    """``valid``, ``revoked``, or ``unknown`` (malformed, no such key in this database, or a
    secret that does not match it) — a key file kept across a reset of the data directory
    names a key the new database never had."""
    m = KEY.match(key)
    row = conn.execute(LOOKUP_SQL, (m["id"],)).fetchone() if m else None
    if m is None or row is None \
            or not hmac.compare_digest(bytes(row[1]), _digest(bytes(row[0]), m["secret"])):
        return "unknown"
    return "revoked" if row[6] is not None else "valid"


def _listed(r: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": r[0], "name": r[1], "tenants": r[2], "clearance": r[3], "roles": r[4],
            "jurisdictions": r[5], "created_at": r[6].isoformat(),
            "revoked_at": r[7].isoformat() if r[7] else None}


def list_keys(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every key's id, name and grant (never a secret or its hash)."""
    return [_listed(r) for r in conn.execute(LIST_SQL).fetchall()]


async def list_keys_async(pool: AsyncConnectionPool[Any]) -> list[dict[str, Any]]:
    async with pool.connection() as conn:
        return [_listed(r) for r in await (await conn.execute(LIST_SQL)).fetchall()]


def revoke(conn: psycopg.Connection[Any], key_id: str) -> None:
    if conn.execute(REVOKE_SQL, (key_id,)).rowcount == 0:
        raise NotFound(f"no active key {key_id!r}", {"id": key_id})


def _principal(key_id: str, row: tuple[Any, ...]) -> Principal:
    tenants = frozenset(row[2])
    return Principal(id=f"key:{key_id}", kind="api_key", tenants=tenants,
                     max_clearance=row[3], roles=frozenset(row[4]),
                     jurisdictions=frozenset(row[5] or ()),
                     default_tenant=None if ALL_TENANTS in tenants or len(tenants) != 1
                     else next(iter(tenants)))


LOOKUP_DEADLINE_S = 5.0


class KeyVerifier:
    """Verifies presented keys against PostgreSQL, remembering good ones briefly."""

    def __init__(self, pool: AsyncConnectionPool[Any], ttl_s: float = CACHE_TTL_S) -> None:
        self.pool = pool
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, Principal]] = {}

    async def verify(self, token: str) -> Principal | None:
        m = KEY.match(token)
        if m is None:
            return None
        fingerprint = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._seen.get(fingerprint)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        try:  # a frozen PostgreSQL: 503 within the deadline, not a hung request
            async with asyncio.timeout(LOOKUP_DEADLINE_S), self.pool.connection() as conn:
                row = await (await conn.execute(LOOKUP_SQL, (m["id"],))).fetchone()
        except (TimeoutError, psycopg.OperationalError) as exc:
            raise Unavailable("the key store (PostgreSQL) is unavailable; retry later",
                              {"cause": type(exc).__name__}) from exc
        if row is None or row[6] is not None:
            return None
        if not hmac.compare_digest(bytes(row[1]), _digest(bytes(row[0]), m["secret"])):
            return None
        principal = _principal(m["id"], row)
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen.clear()
            self._seen[fingerprint] = (now, principal)
        return principal
