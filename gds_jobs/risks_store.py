"""The risks job's results in PostgreSQL (``risk_rankings``), written by the job and read by
the request path, so a strategic question never projects a graph or runs PageRank.

One ranking per tenant, clearance level and snapshot version. A reader gets the newest ranking
at or below its snapshot version, computed at its own clearance level or a lower one (never a
higher one: a lower clearance sees less, which is safe), or nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from gds_jobs.guard import ProgressFn, no_progress
from gds_jobs.risks import RiskFactor, RiskItem, rank_risks
from gds_jobs.runtime import JobContext, job_scope
from substrate.errors import NotFound
from substrate.retrieval.scope import CLASSIFICATIONS, ReadScope
from substrate.settings import Settings

STORED_ITEMS = 50  # a request may show up to this many

UPSERT = """
INSERT INTO risk_rankings (tenant_id, clearance, snapshot_version, seconds, items)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (tenant_id, clearance, snapshot_version)
DO UPDATE SET items = EXCLUDED.items, seconds = EXCLUDED.seconds, computed_at = now()
"""
NEWEST = """
SELECT snapshot_version, clearance, computed_at, items FROM risk_rankings
WHERE tenant_id = %s AND snapshot_version <= %s AND clearance = ANY(%s)
ORDER BY snapshot_version DESC, array_position(%s, clearance) DESC
LIMIT 1
"""


@dataclass(frozen=True)
class StoredRanking:
    snapshot_version: int
    clearance: str
    computed_at: datetime
    items: list[RiskItem]


def item_from_dict(data: dict[str, Any]) -> RiskItem:
    factors = [RiskFactor(f["factor"], f["value"], f["contribution"], f["note"],
                          f.get("evidence", []), f.get("evidence_total", 0))
               for f in data["factors"]]
    return RiskItem(data["ceid"], data["name"], data["label"], data["score"], factors)


def level(scope: ReadScope) -> str:
    """The scope's clearance level (its highest classification)."""
    return scope.clearance[-1]


def compute_and_store(ctx: JobContext, scope: ReadScope,
                      progress: ProgressFn = no_progress) -> list[RiskItem]:
    """Rank at ``scope`` (GDS metrics, stored in ``gds_node_metrics`` on the way) and store
    the top STORED_ITEMS."""
    started = time.monotonic()
    try:
        items = rank_risks(ctx, scope, STORED_ITEMS, progress)
    except NotFound:  # nothing live at this clearance (e.g. all internal): an empty ranking
        items = []
    with psycopg.connect(ctx.settings.postgres_dsn) as conn:
        conn.execute(UPSERT, (scope.tenant, level(scope), scope.version,
                              round(time.monotonic() - started, 3),
                              Jsonb([i.to_dict() for i in items])))
    return items


def _newest_params(scope: ReadScope) -> tuple[Any, ...]:
    allowed = list(scope.clearance)
    return (scope.tenant, scope.version, allowed, list(CLASSIFICATIONS))


def _ranking(row: tuple[Any, ...] | None) -> StoredRanking | None:
    if row is None:
        return None
    return StoredRanking(int(row[0]), str(row[1]), row[2].astimezone(UTC),
                         [item_from_dict(d) for d in row[3]])


def newest(conn: psycopg.Connection[Any], scope: ReadScope) -> StoredRanking | None:
    return _ranking(conn.execute(NEWEST, _newest_params(scope)).fetchone())


async def newest_async(conn: psycopg.AsyncConnection[Any],
                       scope: ReadScope) -> StoredRanking | None:
    cur = await conn.execute(NEWEST, _newest_params(scope))
    return _ranking(await cur.fetchone())


# Read side: a stored ranking is immutable for its (tenant, snapshot, clearance) until the job
# runs again at that snapshot; requests keep the parsed ranking for READ_TTL_S seconds, so a
# strategic question costs one PostgreSQL round trip per key and minute, not one per request.
READ_TTL_S = 60.0
NONE_TTL_S = 5.0  # how long "no ranking stored" is remembered: the job may store one any time
_READ_CACHE: dict[tuple[Any, ...], tuple[float, StoredRanking | None]] = {}
_READ_CACHE_MAX = 512


async def newest_cached(settings: Settings, scope: ReadScope) -> StoredRanking | None:
    """:func:`newest_async` through a small per-process cache (``READ_TTL_S``; a tenant with
    no ranking yet for ``NONE_TTL_S``)."""
    key = (settings.postgres_dsn, scope.tenant, scope.version, tuple(scope.clearance))
    now = time.monotonic()
    hit = _READ_CACHE.get(key)
    if hit is not None and now - hit[0] < (READ_TTL_S if hit[1] is not None else NONE_TTL_S):
        return hit[1]
    async with await psycopg.AsyncConnection.connect(settings.postgres_dsn) as conn:
        ranking = await newest_async(conn, scope)
    if len(_READ_CACHE) >= _READ_CACHE_MAX:
        _READ_CACHE.clear()
    _READ_CACHE[key] = (now, ranking)
    return ranking


def has_ranking(settings: Settings, tenant: str, version: int | None = None) -> bool:
    """Is a ranking stored for ``tenant`` (at snapshot ``version`` when given)?"""
    with psycopg.connect(settings.postgres_dsn) as conn:
        row = conn.execute("SELECT 1 FROM risk_rankings WHERE tenant_id = %s AND "
                           "(%s::bigint IS NULL OR snapshot_version = %s) LIMIT 1",
                           (tenant, version, version)).fetchone()
    return row is not None


def store_every_level(ctx: JobContext, tenant: str) -> int:
    """Rank the tenant's newest snapshot for every clearance level (once per group of levels
    that see the same graph, copied to the others); returns how many levels stored."""
    from gds_jobs.levels import copy_level, level_groups

    scope = job_scope(ctx.settings, tenant)
    for first, *others in level_groups(ctx, scope):
        compute_and_store(ctx, job_scope(ctx.settings, tenant, scope.version, first))
        for level in others:
            copy_level(ctx.settings, ("risk_rankings", "gds_node_metrics"), tenant,
                       scope.version, first, level)
    return len(CLASSIFICATIONS)
