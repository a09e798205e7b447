"""The question's time, made concrete against the tenant's history.

* ``question_window``: the window a "what changed" question asks about — the parsed
  ``start``/``end`` (an open end is the scope's own time, an open start the first snapshot), a
  single day or period, or a release ("since v1.2") dated by the commit that announced it;
* ``pin_scope``: every other family reads the graph as it was at the time the question names
  ("who owned X in 2021?", "what did X depend on as of v0.4.1?"): the scope is pinned to the
  tenant's newest snapshot at or before that instant, unless the caller pinned one already;
* ``snapshots_by_version``: the snapshot (time, commit, subject) of each version, for answers
  that cite when something happened.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from substrate.retrieval.context import SearchContext
from substrate.retrieval.scope import ReadScope, pg_connection
from substrate.retrieval.temporal_diff import snapshot_ref
from substrate.retrieval.timeperiods import release_pattern
from substrate.settings import Settings

_SNAPSHOT_COLUMNS = ("version", "tenant_id", "valid_at", "source", "note")


async def _fetch(settings: Settings, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    async with pg_connection(settings) as conn:
        return list(await (await conn.execute(sql, args)).fetchall())


async def snapshots_by_version(settings: Settings, tenant: str,
                               versions: list[int]) -> dict[int, dict[str, Any]]:
    if not versions:
        return {}
    rows = await _fetch(settings, "SELECT version, tenant_id, valid_at, source, note FROM "
                        "snapshots WHERE tenant_id = %s AND version = ANY(%s)", (tenant, versions))
    return {int(r[0]): snapshot_ref(dict(zip(_SNAPSHOT_COLUMNS, r, strict=True))) for r in rows}


async def commit_at(settings: Settings, tenant: str, version: int,
                    source: str | None = None) -> str | None:
    """The git commit of the tenant's newest snapshot at or before ``version`` (of ``source``):
    the commit whose file contents the graph holds at that version."""
    rows = await _fetch(settings, "SELECT version, tenant_id, valid_at, source, note FROM "
                        "snapshots WHERE tenant_id = %s AND version <= %s AND (%s::text IS NULL "
                        "OR source = %s) AND note ~ '^[0-9a-f]{40} ' ORDER BY version DESC "
                        "LIMIT 1", (tenant, version, source, source))
    if not rows:
        return None
    commit = snapshot_ref(dict(zip(_SNAPSHOT_COLUMNS, rows[0], strict=True)))["commit"]
    return str(commit) if commit else None


async def release_instant(settings: Settings, tenant: str, tag: str) -> datetime | None:
    """When release ``tag`` happened: the first snapshot whose commit subject announces it."""
    rows = await _fetch(settings, "SELECT valid_at, note FROM snapshots WHERE tenant_id = %s "
                        "AND note ILIKE %s ORDER BY valid_at, version", (tenant, f"%{tag}%"))
    rx = release_pattern(tag)
    return next((r[0] for r in rows if rx.search(str(r[1] or ""))), None)


async def _first_snapshot(settings: Settings, tenant: str) -> datetime | None:
    rows = await _fetch(settings, "SELECT min(valid_at) FROM snapshots WHERE tenant_id = %s",
                        (tenant,))
    return rows[0][0] if rows and rows[0][0] else None


async def _scope_time(settings: Settings, scope: ReadScope) -> datetime:
    """Now for a live read; the pinned snapshot's time for a pinned one."""
    if not scope.pinned:
        return datetime.now(UTC)
    rows = await _fetch(settings, "SELECT max(valid_at) FROM snapshots WHERE tenant_id = %s "
                        "AND version <= %s", (scope.tenant, scope.version))
    return rows[0][0] if rows and rows[0][0] else datetime.now(UTC)


async def question_window(ctx: SearchContext) -> tuple[datetime, datetime, str] | None:
    """(start, end, phrase) of the window the question asks about, or None."""
    time = ctx.route.time
    phrase = ", ".join(time.phrases)
    start, end = time.start, time.end
    if time.release is not None:
        instant = await release_instant(ctx.settings, ctx.scope.tenant, time.release[1])
        if instant is None:
            return None
        relation = time.release[0]
        if relation in ("since", "after"):
            start = instant
        elif relation in ("before", "until"):
            end = instant
        else:
            start, end = instant - timedelta(seconds=1), instant
    elif start is None and end is None and time.as_of is not None:
        return None
    if start is None and end is None:
        return None
    if end is None:
        end = await _scope_time(ctx.settings, ctx.scope)
    if start is None:
        first = await _first_snapshot(ctx.settings, ctx.scope.tenant)
        start = (first - timedelta(seconds=1)) if first else end
    return start, end, phrase


async def _version_at(settings: Settings, tenant: str, at: datetime) -> int | None:
    rows = await _fetch(settings, "SELECT max(version) FROM snapshots WHERE tenant_id = %s "
                        "AND valid_at <= %s", (tenant, at))
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


async def pinned_instant(ctx: SearchContext) -> datetime | None:
    """The instant a non-temporal question is about, if it names one."""
    time = ctx.route.time
    if time.release is not None:
        instant = await release_instant(ctx.settings, ctx.scope.tenant, time.release[1])
        if instant is not None and time.release[0] in ("before", "until"):
            return instant - timedelta(microseconds=1)
        return instant
    if time.as_of is not None:
        return time.as_of
    return time.end - timedelta(microseconds=1) if time.end is not None else None


async def pin_scope(ctx: SearchContext) -> ReadScope | None:
    """The scope pinned at the question's time, or None when it names none (or the caller
    pinned the read already, or the time lies before the tenant's history)."""
    if ctx.scope.pinned:
        return None
    instant = await pinned_instant(ctx)
    if instant is None:
        return None
    version = await _version_at(ctx.settings, ctx.scope.tenant, instant)
    if version is None or version >= ctx.scope.version:
        return None
    return replace(ctx.scope, version=version, pinned=True, at=instant.isoformat())
