"""Point-in-time graph state and snapshot diffs (RSN-07): what ``GET /temporal`` answers.

* State (``at=``): the scope machinery maps the instant to the tenant's newest snapshot at or
  before it (:func:`~substrate.retrieval.scope.resolve_scope`); the nodes and relationships
  valid at that version come from ``cypher/temporal/state_*`` (``node_at``/``rel_at``). Node
  properties are updated in place in Neo4j, so a node's properties *as of* the version are
  rebuilt from the change log (every ``add``/``update`` up to it, folded in order — exactly
  what the writer's ``SET n += props`` did). Entities by default; ``label=Chunk`` lists chunks.
  ``service=`` narrows to the nodes within ``depth`` hops of a service (over ``types`` when
  given) and the relationships among them. Pages: nodes by ceid, then relationships by key.
* Diff (``from=&to=``): :mod:`substrate.retrieval.temporal_diff` over the change log of the
  tenant's snapshots in ``(from, to]``.

Both state the snapshot(s) they read. An instant in the future, before the tenant's first
snapshot, or not ISO-8601, and ``from`` after ``to``, are refused (400) with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from substrate.errors import BadRequest, NotFound
from substrate.graph.ontology import Ontology
from substrate.retrieval import direct
from substrate.retrieval import temporal_diff as td
from substrate.retrieval.evidence import direct_evidence
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import ReadScope, parse_at, pg_connection
from substrate.settings import Settings

MAX_LIMIT = 1000
PROPS_AT_SQL = """
SELECT element_id, after FROM change_log
WHERE tenant_id = %s AND element_kind = 'node' AND element_id = ANY(%s)
  AND snapshot_version <= %s AND op IN ('add', 'update') AND after ? 'props'
ORDER BY element_id, snapshot_version, id
"""
SNAPSHOT_AT_SQL = """
SELECT version, tenant_id, valid_at, source, note FROM snapshots
WHERE tenant_id = %s AND version <= %s ORDER BY version DESC LIMIT 1
"""


@dataclass(frozen=True)
class GraphFilter:
    service: str | None = None  # a service id or name: its neighbourhood only
    label: str | None = None
    types: tuple[str, ...] = ()
    depth: int = 1
    evidence: bool = False  # diffs: also list evidence-only changes (always counted)

    def validate(self, ontology: Ontology) -> GraphFilter:
        if self.label is not None and not ontology.has_label(self.label):
            raise BadRequest(f"unknown label {self.label!r}", {"allowed": sorted(ontology.labels)})
        bad = [t for t in self.types if not ontology.has_type(t)]
        if bad:
            raise BadRequest("unknown relation types", {"bad": bad})
        if not 0 <= self.depth <= 3:
            raise BadRequest("depth must be between 0 and 3", {"depth": self.depth})
        return self

    def context(self) -> dict[str, Any]:
        """The Jinja context of ``temporal/direct_state``."""
        return {"label": self.label or "Entity", "service": self.service is not None,
                "depth": self.depth, "types": list(self.types)}


@dataclass(frozen=True)
class Page:
    limit: int = 100
    cursor: str | None = None
    offset: int | None = None

    def validate(self) -> Page:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise BadRequest(f"limit must be 1..{MAX_LIMIT}", {"limit": self.limit})
        if self.cursor is not None and self.offset is not None:
            raise BadRequest("give either cursor or offset, not both")
        if self.offset is not None and self.offset < 0:
            raise BadRequest("offset must be >= 0", {"offset": self.offset})
        return self


def encode_cursor(position: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("malformed cursor", {"cursor": cursor[:80]}) from exc
    if not isinstance(data, dict):
        raise BadRequest("malformed cursor", {"cursor": cursor[:80]})
    return data


# --- state at a snapshot ------------------------------------------------------------------

async def snapshot_of(settings: Settings, tenant: str, version: int,
                      pool: AsyncConnectionPool[Any] | None = None) -> dict[str, Any] | None:
    """The tenant's snapshot a read at ``version`` reflects (its newest at or before it).
    ``pool``: a long-lived service's PostgreSQL pool (else one connection for this call)."""
    async with pg_connection(settings, pool) as conn:
        cur = await conn.execute(SNAPSHOT_AT_SQL, (tenant, version))
        row = await cur.fetchone()
    if row is None:
        return None
    return td.snapshot_ref(dict(zip(("version", "tenant_id", "valid_at", "source", "note"),
                                    row, strict=True)))


async def props_at(settings: Settings, tenant: str, ceids: list[str], version: int,
                   pool: AsyncConnectionPool[Any] | None = None,
                   ) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Each node's properties and provenance as of ``version``, from the change log."""
    out: dict[str, tuple[dict[str, Any], list[str]]] = {}
    if not ceids:
        return out
    async with pg_connection(settings, pool) as conn:
        cur = await conn.execute(PROPS_AT_SQL, (tenant, ceids, version))
        for ceid, after in await cur.fetchall():
            props, _ = out.get(ceid, ({}, []))
            out[ceid] = ({**props, **after.get("props", {})},
                         [str(p) for p in after.get("provenance") or []])
    return out


def page_start(page: Page) -> dict[str, Any]:
    """Where the page starts, as ``temporal/direct_state`` parameters: the nodes after
    ``nodes_after`` (None: the page starts among the relationships), the relationships after
    ``rels_after``, ``offset`` rows skipped (nodes first, then relationships)."""
    if page.offset is not None:
        return {"nodes_after": "", "rels_after": "", "offset": page.offset}
    if page.cursor is None:
        return {"nodes_after": "", "rels_after": "", "offset": 0}
    pos = decode_cursor(page.cursor)
    if pos.get("p") not in ("n", "r") or not isinstance(pos.get("k"), str):
        raise BadRequest("malformed cursor", {"cursor": page.cursor[:80]})
    if pos["p"] == "n":
        return {"nodes_after": pos["k"], "rels_after": "", "offset": 0}
    return {"nodes_after": None, "rels_after": pos["k"], "offset": 0}


def state_page(found: dict[str, Any], limit: int) -> dict[str, Any]:
    """The page (nodes first, then relationships) and the cursor after it, from up to
    ``limit + 1`` nodes and relationships read."""
    nodes: list[dict[str, Any]] = list(found["nodes"])
    rels: list[dict[str, Any]] = []
    room, nxt = limit, None
    if len(nodes) > room:
        nodes, nxt = nodes[:room], {"p": "n", "k": nodes[room - 1]["ceid"]}
    room -= len(nodes)
    if nxt is None and room == 0 and found["rel_total"] > 0:
        nxt = {"p": "r", "k": ""}
    if nxt is None and room > 0:
        rels = list(found["rels"])
        if len(rels) > room:
            rels, nxt = rels[:room], {"p": "r", "k": rels[room - 1]["eid"]}
    return {"nodes": nodes, "relationships": rels,
            "next_cursor": encode_cursor(nxt) if nxt else None}


async def graph_state(settings: Settings, reader: GraphReader, scope: ReadScope,
                      flt: GraphFilter, page: Page,
                      pool: AsyncConnectionPool[Any] | None = None) -> dict[str, Any]:
    """Nodes and relationships valid at ``scope.version``, filtered and paged. One Neo4j
    round trip (``temporal/direct_state``: the service's resolution, both totals and the
    page) while PostgreSQL finds the snapshot row; then the nodes' properties as of then."""
    start = page_start(page)
    ceid, name = direct.split_id(flt.service, "service") if flt.service else (None, None)
    snapshot = asyncio.ensure_future(snapshot_of(settings, scope.tenant, scope.version, pool))
    try:
        found = await reader.plain_rows(
            "temporal/direct_state", scope, flt.context(), ceid=ceid, name=name, **start,
            limit=page.limit, page_cap=page.limit + 1,
            rels_cap=start["offset"] + page.limit + 1)
        if not found:
            raise direct.not_found(str(flt.service), "Service", scope)
        state = found[0]
        rows = state_page(state, page.limit)
        history = await props_at(settings, scope.tenant, [n["ceid"] for n in rows["nodes"]],
                                 scope.version, pool)
        snapshot_row = await snapshot
    finally:
        if not snapshot.done():  # a failed read: do not leave the lookup running unobserved
            snapshot.cancel()
    seeds = [dict(state["entity"])] if state["entity"] is not None else []
    totals = {"nodes": state["node_total"], "relationships": state["rel_total"]}
    nodes = []
    for n in rows["nodes"]:
        props, provenance = history.get(n["ceid"], ({"name": n["name"]}, []))
        nodes.append({**n, "props": props, "evidence": provenance})
    rels = [{"eid": r["eid"], **r["hop"], "valid_from_ts": r["valid_from_ts"], "props": r["props"]}
            for r in rows["relationships"]]
    hops = [{**r["hop"], "hop": 1} for r in rows["relationships"]]
    truncated = rows["next_cursor"] is not None
    return {
        "mode": "state", "at": scope.at, "snapshot_version": scope.version,
        "snapshot": snapshot_row,
        "filter": asdict(flt), "totals": totals, "nodes": nodes, "relationships": rels,
        "next_cursor": rows["next_cursor"], "truncated": truncated,
        **direct_evidence(scope.version, seeds, hops, truncated, "temporal"),
    }


# --- diff between two instants ------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    v_from: int  # the tenant's state at ``start`` (0: before its first snapshot)
    v_to: int
    last_at: datetime | None = None  # when ``v_to`` was made (None: no snapshot by ``end``)


VERSIONS_AT_SQL = """
SELECT coalesce(max(version) FILTER (WHERE valid_at <= %(start)s), 0),
       coalesce(max(version) FILTER (WHERE valid_at <= %(end)s), 0),
       max(valid_at) FILTER (WHERE valid_at <= %(end)s)
FROM snapshots WHERE tenant_id = %(tenant)s AND valid_at <= greatest(%(start)s, %(end)s)
"""


async def _versions_at(conn: psycopg.AsyncConnection[Any], tenant: str, start: datetime,
                       end: datetime) -> tuple[int, int, datetime | None]:
    """The tenant's newest snapshot at ``start`` and at ``end`` (0: none), and the time of
    the one at ``end``; one round trip."""
    cur = await conn.execute(VERSIONS_AT_SQL, {"tenant": tenant, "start": start, "end": end})
    row = await cur.fetchone()
    return (int(row[0]), int(row[1]), row[2]) if row else (0, 0, None)


async def resolve_window(conn: psycopg.AsyncConnection[Any], tenant: str, start: datetime,
                         end: datetime, strict: bool = True) -> Window:
    """``strict`` (the API): refuse a window that starts before the first snapshot, ends in
    the future or runs backwards. The UC-06 strategy asks for a window relative to an
    incident and accepts a start before the history (the diff then starts empty)."""
    if strict:
        now = datetime.now(UTC)
        for name, t in (("from", start), ("to", end)):
            if t > now:
                raise BadRequest(f"'{name}' {t.isoformat()} is in the future",
                                 {name: t.isoformat(), "now": now.isoformat()})
        if start > end:
            raise BadRequest("'from' is after 'to'",
                             {"from": start.isoformat(), "to": end.isoformat()})
        cur = await conn.execute("SELECT min(valid_at) FROM snapshots WHERE tenant_id = %s",
                                 (tenant,))
        row = await cur.fetchone()
        first = row[0] if row else None
        if first is None or start < first:
            raise BadRequest(
                f"'from' {start.isoformat()} is before the first snapshot of tenant {tenant!r}",
                {"from": start.isoformat(),
                 "first_snapshot_at": first.isoformat() if first else None})
    return Window(start, end, *await _versions_at(conn, tenant, start, end))


# the nodes a caller reads a window's changes of (None: all), given the window and its snapshots
Narrow = Callable[[Window, list[dict[str, Any]]], Awaitable[Collection[str] | None]]


async def changes(settings: Settings, reader: GraphReader, scope: ReadScope, start: datetime,
                  end: datetime, ontology: Ontology, strict: bool = True,
                  evidence: bool = False, pool: AsyncConnectionPool[Any] | None = None,
                  alongside: Callable[[Window], Awaitable[None]] | None = None,
                  narrow: Narrow | None = None,
                  ) -> tuple[Window, list[dict[str, Any]], list[dict[str, Any]]]:
    """(window, snapshots in it, collapsed changes the caller's clearance may see);
    evidence-only changes only when ``evidence``. ``pool``: a long-lived service's
    PostgreSQL pool (else one connection for this call). ``alongside``: work on the window
    (its versions known) run while the change log is read, finished before this returns.
    ``narrow``: given the window and its snapshots (with their change counts), the nodes to
    read the changes of (and of the edges with an end among them), or None for all; when it
    narrows, ``alongside`` is not run."""
    side: asyncio.Future[None] | None = None
    try:
        async with pg_connection(settings, pool) as conn:
            window = await resolve_window(conn, scope.tenant, start, end, strict)
            snaps = await td.window_snapshots(conn, scope.tenant, start, end)
            near = await narrow(window, snaps) if narrow is not None else None
            if alongside is not None and near is None:
                side = asyncio.ensure_future(alongside(window))
            history = await td.window_elements(conn, scope.tenant, start, end, near)
        entries = td.collapse(history, snaps, ontology)
        hidden = await _hidden(reader, scope, {x for e in entries for x in td.touched(e)})
        if side is not None:
            await side
    finally:
        if side is not None and not side.done():  # this failed: so does the side work
            side.cancel()
    entries = [e for e in entries if not hidden.intersection(td.touched(e))
               and (evidence or e["change"] != "evidence")]
    return window, [td.snapshot_ref(s) | {"changed_nodes": s["changed_nodes"],
                                          "changed_edges": s["changed_edges"]}
                    for s in snaps], entries


async def _hidden(reader: GraphReader, scope: ReadScope, ceids: set[str]) -> set[str]:
    found: set[str] = set()
    for label, prefix in (("Entity", False), ("Chunk", True)):
        group = sorted(c for c in ceids if c.startswith("chunk:") == prefix)
        if group:
            rows = await reader.plain_rows("temporal/hidden", scope, {"label": label},
                                           ceids=group)
            found |= {r["ceid"] for r in rows}
    return found


def parse_instant(name: str, value: str) -> datetime:
    try:
        return parse_at(value)
    except BadRequest as exc:
        raise BadRequest(f"'{name}' is not an ISO-8601 timestamp: {value!r}",
                         {name: value}) from exc


async def _service_in_window(reader: GraphReader, scope: ReadScope, window: Window,
                             value: str) -> dict[str, Any]:
    """The service as it was at the end of the window, else at its start."""
    for version in (window.v_to, window.v_from):
        if version > 0:
            at = replace(scope, version=version, pinned=True, at=None, tenant_version=None,
                         bookmarks=())  # the reader's clearance and jurisdictions kept
            try:
                return await direct.resolve(reader, at, value)
            except NotFound:
                continue
    raise NotFound(f"no Service {value!r} in tenant {scope.tenant!r} during the window",
                   {"id": value, "from_version": window.v_from, "to_version": window.v_to})


def _diff_offset(page: Page) -> int:
    if page.cursor is None:
        return page.offset or 0
    offset = decode_cursor(page.cursor).get("o")
    if not isinstance(offset, int) or offset < 0:
        raise BadRequest("malformed cursor", {"cursor": page.cursor[:80]})
    return offset


async def graph_diff(settings: Settings, reader: GraphReader, scope: ReadScope,
                     ontology: Ontology, start: datetime, end: datetime, flt: GraphFilter,
                     page: Page, pool: AsyncConnectionPool[Any] | None = None
                     ) -> dict[str, Any]:
    """Added, removed and changed nodes and relationships between two instants."""
    window, snaps, entries = await changes(settings, reader, scope, start, end, ontology,
                                           evidence=True, pool=pool)
    entries = [e for e in entries if td.matches(e, flt.label, flt.types, ontology)]
    seeds: list[dict[str, Any]] = []
    if flt.service is not None:
        service = await _service_in_window(reader, scope, window, flt.service)
        seeds = [service]
        dist = await td.distances(reader, scope, [service["ceid"]], window.v_from,
                                  window.v_to, flt.depth, {x for e in entries
                                                           for x in td.touched(e)})
        entries = [{**e, "distance": d} for e in entries
                   if (d := td.distance_of(e, dist)) is not None]
    counts = {k: sum(1 for e in entries if e["change"] == k) for k in td.CHANGE_KINDS}
    if not flt.evidence:
        entries = [e for e in entries if e["change"] != "evidence"]
    start_at = _diff_offset(page)
    shown = entries[start_at:start_at + page.limit]
    more = start_at + page.limit < len(entries)
    groups: dict[str, list[dict[str, Any]]] = {k: [] for k in td.CHANGE_KINDS}
    for e in shown:
        groups[e["change"]].append(e)
    hops = [{**e["hop"], "hop": 1} for e in shown if e["kind"] == "edge" and e["hop"]]
    from_snapshot, to_snapshot = await asyncio.gather(
        snapshot_of(settings, scope.tenant, window.v_from, pool),
        snapshot_of(settings, scope.tenant, window.v_to, pool))
    return {
        "mode": "diff", "from": start.isoformat(), "to": end.isoformat(),
        "from_snapshot": from_snapshot, "to_snapshot": to_snapshot,
        "snapshot_version": window.v_to, "snapshots": snaps, "filter": asdict(flt),
        "counts": counts, "evidence_listed": flt.evidence,
        "fact_changes": counts["added"] + counts["removed"] + counts["changed"],
        "evidence_only_changes": counts["evidence"],
        **groups, "next_cursor": encode_cursor({"o": start_at + page.limit}) if more else None,
        "truncated": more,
        **direct_evidence(window.v_to, seeds, hops, more, "temporal"),
    }
