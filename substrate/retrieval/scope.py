"""What a read sees: tenant, clearance, jurisdictions and the snapshot version it is pinned to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from substrate.errors import BadRequest
from substrate.graph import snapshots
from substrate.settings import Settings

CLASSIFICATIONS = ("public", "internal", "confidential", "restricted")
DEFAULT_CLEARANCE = "internal"


@dataclass(frozen=True)
class ReadScope:
    tenant: str
    version: int
    clearance: tuple[str, ...]
    pinned: bool  # the caller asked for this version (or time); answers are immutable
    at: str | None = None
    # unpinned reads: the tenant's own newest snapshot (<= version); the query cache checks
    # it to tell whether the tenant changed since an entry was computed
    tenant_version: int | None = None
    # None: no jurisdiction restriction; else only elements whose ``jurisdiction`` is unset
    # or one of these (cypher/_macros.j2 ``in_jurisdiction``)
    jurisdictions: tuple[str, ...] | None = None
    # unpinned reads: the Neo4j bookmarks of the tenant's newest snapshot when this process
    # knows them (its graph.updated event): a routed read waits until its member has them
    bookmarks: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "v": self.version, "clearance": list(self.clearance),
                "jurisdictions": None if self.jurisdictions is None
                else list(self.jurisdictions)}


def jurisdictions_for(values: Iterable[str] | None) -> tuple[str, ...] | None:
    """A principal's jurisdictions as a scope restriction: empty or None -> unrestricted."""
    found = tuple(sorted({v.strip() for v in values or () if v.strip()}))
    return found or None


def clearance_for(level: str | None) -> tuple[str, ...]:
    level = (level or DEFAULT_CLEARANCE).lower()
    if level not in CLASSIFICATIONS:
        raise BadRequest(f"unknown clearance {level!r}", {"allowed": list(CLASSIFICATIONS)})
    return CLASSIFICATIONS[: CLASSIFICATIONS.index(level) + 1]


def parse_at(value: str) -> datetime:
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        at = datetime.fromisoformat(text)
    except ValueError as exc:
        raise BadRequest(f"'at' is not an ISO-8601 timestamp: {value!r}",
                         {"at": value}) from exc
    return at if at.tzinfo else at.replace(tzinfo=UTC)


# the PostgreSQL pool of the long-lived service running on an event loop (the gateway's
# ReadService): reads that are not handed a pool use it instead of connecting anew
_SHARED: dict[tuple[asyncio.AbstractEventLoop, str], AsyncConnectionPool[Any]] = {}


def share_pool(dsn: str, pool: AsyncConnectionPool[Any]) -> None:
    """Offer ``pool`` to the reads running on this event loop against ``dsn``."""
    _SHARED[(asyncio.get_running_loop(), dsn)] = pool


def unshare_pool(pool: AsyncConnectionPool[Any]) -> None:
    for key in [k for k, v in _SHARED.items() if v is pool]:
        del _SHARED[key]


def shared_pool(settings: Settings) -> AsyncConnectionPool[Any] | None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return _SHARED.get((loop, settings.postgres_dsn))


@asynccontextmanager
async def pg_connection(settings: Settings, pool: AsyncConnectionPool[Any] | None = None,
                        ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A connection of ``pool``, else of the pool shared on this event loop (a long-lived
    service's: no connection per request), else a new one (a CLI run, a test)."""
    pool = pool or shared_pool(settings)
    if pool is not None:
        async with pool.connection() as conn:
            yield conn
    else:
        async with await psycopg.AsyncConnection.connect(settings.postgres_dsn) as conn:
            yield conn


async def resolve_scope(
    settings: Settings, tenant: str, snapshot_version: Any = None, at: Any = None,
    clearance: str | None = None, pool: AsyncConnectionPool[Any] | None = None,
    jurisdictions: Iterable[str] | None = None,
) -> ReadScope:
    """The scope of one read. ``pool``: a long-lived service passes its connection pool
    (every request resolves a scope, so connecting each time is on the hot path).
    ``jurisdictions``: the principal's (empty or None: unrestricted)."""
    if snapshot_version is not None and at is not None:
        raise BadRequest("give either snapshot_version or at, not both")
    return replace(await _resolve(settings, tenant, snapshot_version, at,
                                  clearance_for(clearance), pool),
                   jurisdictions=jurisdictions_for(jurisdictions))


def latest_scope(tenant: str, latest: int, tenant_latest: int, clearance: str | None = None,
                 jurisdictions: Iterable[str] | None = None) -> ReadScope:
    """An unpinned scope from known versions (the in-process snapshot clock's)."""
    return ReadScope(tenant, latest, clearance_for(clearance), False,
                     tenant_version=tenant_latest,
                     jurisdictions=jurisdictions_for(jurisdictions))


LATEST_SQL = (
    "SELECT NULL::text, coalesce(max(version), 0) FROM snapshots UNION ALL "
    "SELECT t, (SELECT coalesce(max(version), 0) FROM snapshots WHERE tenant_id = t) "
    "FROM unnest(%s::text[]) AS t"
)


async def latest_versions(pool: AsyncConnectionPool[Any], tenants: list[str]
                          ) -> tuple[int, dict[str, int]]:
    """(latest snapshot, each of ``tenants``' latest) in one statement."""
    async with pool.connection() as conn:
        cur = await conn.execute(LATEST_SQL, (tenants,))
        rows = await cur.fetchall()
    latest = next((int(v) for t, v in rows if t is None), 0)
    return latest, {str(t): int(v) for t, v in rows if t is not None}


async def _resolve(settings: Settings, tenant: str, snapshot_version: Any, at: Any,
                   levels: tuple[str, ...], pool: AsyncConnectionPool[Any] | None,
                   ) -> ReadScope:
    async with pg_connection(settings, pool) as conn:
        if snapshot_version is None and at is None:  # the common read: one round trip
            latest, tenant_latest = await _latest_both(conn, tenant)
            return ReadScope(tenant, latest, levels, False, tenant_version=tenant_latest)
        latest = await _latest(conn)
        if snapshot_version is not None:
            if isinstance(snapshot_version, bool) or not isinstance(snapshot_version, int):
                raise BadRequest("snapshot_version must be an integer",
                                 {"snapshot_version": snapshot_version})
            if not 1 <= snapshot_version <= latest:
                raise BadRequest(f"snapshot_version {snapshot_version} does not exist",
                                 {"latest": latest})
            return ReadScope(tenant, snapshot_version, levels, True)
        return await _scope_at(conn, tenant, str(at), levels, latest)


async def _latest(conn: psycopg.AsyncConnection[Any]) -> int:
    cur = await conn.execute("SELECT coalesce(max(version), 0) FROM snapshots")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _latest_both(conn: psycopg.AsyncConnection[Any], tenant: str) -> tuple[int, int]:
    """(latest snapshot, the tenant's latest) in one statement: both max() are index probes."""
    cur = await conn.execute(
        "SELECT (SELECT coalesce(max(version), 0) FROM snapshots), "
        "(SELECT coalesce(max(version), 0) FROM snapshots WHERE tenant_id = %s)", (tenant,),
    )
    row = await cur.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


async def _scope_at(conn: psycopg.AsyncConnection[Any], tenant: str, at_text: str,
                    levels: tuple[str, ...], latest: int) -> ReadScope:
    at = parse_at(at_text)
    if at > datetime.now(UTC):
        raise BadRequest(f"'at' {at.isoformat()} is in the future", {"at": at_text})
    cur = await conn.execute(
        "SELECT max(version), min(valid_at) FROM snapshots WHERE tenant_id = %s "
        "AND valid_at <= %s", (tenant, at),
    )
    row = await cur.fetchone()
    if row is None or row[0] is None:
        first = await (await conn.execute(
            "SELECT min(valid_at) FROM snapshots WHERE tenant_id = %s", (tenant,))).fetchone()
        raise BadRequest(
            f"'at' {at.isoformat()} is before the first snapshot of tenant {tenant!r}",
            {"at": at_text, "first_snapshot_at": str(first[0]) if first and first[0] else None},
        )
    _ = snapshots  # versions are global; the tenant's newest at-or-before ``at`` is the pin
    return ReadScope(tenant, int(row[0]), levels, True, at.isoformat())
