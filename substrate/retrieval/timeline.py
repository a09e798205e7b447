"""Entity timelines and Allen relations between validity intervals (TemporalRetriever).

* :func:`timeline` — every change of one entity and of its relationships across snapshots, up
  to the read's pin: the entity's validity intervals (added / closed), its property changes
  (from the PostgreSQL change log, before → after per key) and each relationship that began
  or ended, with its evidence and the snapshot's time and commit.
* :func:`relate` — Allen's relation (:mod:`substrate.retrieval.allen`) between the intervals
  of two references, or between one reference and every entity of a label ("which ADRs were
  in force while checkout depended on payment?", "did the ownership change overlap the
  incident?"). A reference is an entity id — its validity; for an incident (FailurePattern)
  its date as an instant; for an ADR (DecisionNode) the time it was in force, i.e. until it
  was closed or superseded — or a relationship ``src-[TYPE]->dst`` — each interval in which
  it held.

Intervals are in real-world time: a version maps to its snapshot's ``valid_at`` (the commit
time on a git replay). Everything is read within the caller's scope (tenant, clearance, pin).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from substrate.errors import BadRequest, NotFound
from substrate.graph.neo4j_write import RESERVED
from substrate.retrieval import allen
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import ReadScope, parse_at, pg_connection
from substrate.settings import Settings

MAX_RELS = 2000
BOOKKEEPING = frozenset({"alias_text"})  # derived search text, not a property of the entity
EDGE_REF = re.compile(r"^(?P<src>[^\s\[\]]+)-\[(?P<type>[A-Z_]+)\]->(?P<dst>[^\s\[\]]+)$")
SHA = re.compile(r"^[0-9a-f]{7,40}$")

SNAPSHOTS_SQL = (
    "SELECT version, valid_at, source, note FROM snapshots "
    "WHERE tenant_id = %s AND version = ANY(%s)"
)
PROPERTY_CHANGES_SQL = (
    "SELECT snapshot_version, op, before, after FROM change_log "
    "WHERE tenant_id = %s AND element_kind = 'node' AND element_id = %s "
    "AND snapshot_version <= %s ORDER BY snapshot_version, id"
)


@dataclass(frozen=True)
class Span:
    """One interval of a reference, in versions and in time (``end`` None: still holds)."""

    ref: str
    start_v: int
    end_v: int | None
    start: datetime
    end: datetime | None
    evidence_ref: str | None = None

    def interval(self) -> allen.Interval[datetime]:
        return allen.Interval(self.start, self.end)

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "from_version": self.start_v, "to_version": self.end_v,
                "from": self.start.isoformat(), "to": self.end.isoformat() if self.end else None,
                "evidence_ref": self.evidence_ref}


class _Snapshots:
    """version -> (valid_at, source, commit, message) for the versions a timeline names."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = {int(r[0]): r for r in rows}

    def at(self, version: int) -> datetime:
        row = self.rows.get(version)
        if row is None:
            raise NotFound(f"snapshot {version} is not in the change history")
        valid_at: datetime = row[1]
        return valid_at if valid_at.tzinfo else valid_at.replace(tzinfo=UTC)

    def describe(self, version: int) -> dict[str, Any]:
        row = self.rows.get(version)
        if row is None:
            return {"version": version, "at": None, "source": None, "commit": None}
        note = (row[3] or "").split(" ", 1)
        commit = note[0] if SHA.match(note[0]) else None
        return {"version": version, "at": self.at(version).isoformat(), "source": row[2],
                "commit": commit, "message": note[1] if commit and len(note) > 1 else row[3]}


async def _pg_rows(settings: Settings, pool: AsyncConnectionPool[Any] | None, sql: str,
                   params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    async with pg_connection(settings, pool) as conn:
        rows: list[tuple[Any, ...]] = await (await conn.execute(sql, params)).fetchall()
    return rows


async def _entity(reader: GraphReader, scope: ReadScope, ceid: str) -> dict[str, Any]:
    rows = await reader.rows("temporal/timeline", scope, ceid=ceid, limit=MAX_RELS + 1)
    if not rows:
        raise NotFound(f"no entity {ceid!r} in tenant {scope.tenant!r} up to snapshot "
                       f"{scope.version}", {"id": ceid, "snapshot_version": scope.version})
    return rows[0]


def _closed(end_v: Any, pin: int) -> int | None:
    """A closing version that lies within the pin, else None (still open as of the pin)."""
    return int(end_v) if end_v is not None and int(end_v) <= pin else None


def _entity_intervals(row: dict[str, Any], pin: int) -> list[tuple[int, int | None]]:
    return [(int(f), _closed(t, pin)) for f, t in zip(row["iv_from"], row["iv_to"], strict=False)
            if int(f) <= pin]


def _prop_changes(before: dict[str, Any] | None, after: dict[str, Any] | None
                  ) -> dict[str, list[Any]]:
    """Properties an update set to a new value (the writer's ``SET n += props``): the change
    log keeps the node's properties before and the properties written; bookkeeping keys
    (validity, provenance, ids) are not facts."""
    old = before or {}
    new = (after or {}).get("props", {})
    return {k: [old.get(k), new[k]] for k in sorted(new)
            if k not in RESERVED and k not in BOOKKEEPING and old.get(k) != new[k]}


async def timeline(settings: Settings, reader: GraphReader, scope: ReadScope, ceid: str,
                   pool: AsyncConnectionPool[Any] | None = None) -> dict[str, Any]:
    """Every change of ``ceid`` and its relationships up to the scope's snapshot, oldest first."""
    row = await _entity(reader, scope, ceid)
    pin = scope.version
    events: list[dict[str, Any]] = []
    for start, end in _entity_intervals(row, pin):
        events.append({"version": start, "kind": "entity_added"})
        if end is not None:
            events.append({"version": end, "kind": "entity_closed"})
    changes = await _pg_rows(settings, pool, PROPERTY_CHANGES_SQL, (scope.tenant, ceid, pin))
    for version, op, before, after in changes:
        if op == "update":
            diff = _prop_changes(before, after)
            if diff:
                events.append({"version": int(version), "kind": "properties_changed",
                               "changes": diff})
    rels = row["rels"][:MAX_RELS]
    for rel in rels:
        hop = rel["hop"]
        fact = {"type": hop["type"], "from": hop["from"], "to": hop["to"],
                "evidence_ref": hop["evidence_ref"], "confidence": hop["confidence"]}
        events.append({"version": int(hop["valid_from_v"]), "kind": "relationship_added",
                       "relationship": fact})
        end = _closed(rel["valid_to_v"], pin)
        if end is not None:
            events.append({"version": end, "kind": "relationship_closed", "relationship": fact})
    versions = sorted({e["version"] for e in events})
    snaps = _Snapshots(await _pg_rows(settings, pool, SNAPSHOTS_SQL, (scope.tenant, versions)))
    order = {"entity_added": 0, "properties_changed": 1, "relationship_added": 2,
             "relationship_closed": 3, "entity_closed": 4}
    events.sort(key=lambda e: (e["version"], order[e["kind"]],
                               str(e.get("relationship", {}).get("to", ""))))
    for e in events:
        e["snapshot"] = snaps.describe(e["version"])
    intervals = [Span(ceid, s, t, snaps.at(s), snaps.at(t) if t else None).to_dict()
                 for s, t in _entity_intervals(row, pin) if s in snaps.rows]
    return {"entity": row["entity"], "snapshot_version": pin, "intervals": intervals,
            "events": events, "truncated": len(row["rels"]) > MAX_RELS}


# --- Allen relations between references ---------------------------------------------------


def _date(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return parse_at(str(value))
    except BadRequest:
        return None


async def spans(settings: Settings, reader: GraphReader, scope: ReadScope, ref: str,
                pool: AsyncConnectionPool[Any] | None = None) -> list[Span]:
    """The intervals of a reference (see the module docstring), in time."""
    edge = EDGE_REF.match(ref.strip())
    ceid = edge["src"] if edge else ref.strip()
    row = await _entity(reader, scope, ceid)
    pin = scope.version
    raw: list[tuple[int, int | None, str | None]] = []
    instant: datetime | None = None
    if edge:
        for rel in row["rels"]:
            hop = rel["hop"]
            if (hop["type"], hop["from"], hop["to"]) == (edge["type"], edge["src"], edge["dst"]):
                raw.append((int(hop["valid_from_v"]), _closed(rel["valid_to_v"], pin),
                            hop["evidence_ref"]))
        if not raw:
            raise NotFound(f"no relationship {ref!r} up to snapshot {pin}", {"ref": ref})
    else:
        label = row["entity"]["label"]
        intervals = _entity_intervals(row, pin)
        if label == "FailurePattern":
            instant = _date(row["props"].get("date"))
        if label == "DecisionNode":
            superseded = [int(r["hop"]["valid_from_v"]) for r in row["rels"]
                          if r["hop"]["type"] == "SUPERSEDES" and r["hop"]["to"] == ceid]
            if superseded:
                first = min(superseded)
                intervals = [(s, min(t, first) if t is not None else first)
                             for s, t in intervals if s < first]
        raw = [(s, t, None) for s, t in intervals]
    versions = sorted({v for s, t, _ in raw for v in (s, t) if v is not None})
    snaps = _Snapshots(await _pg_rows(settings, pool, SNAPSHOTS_SQL, (scope.tenant, versions)))
    if instant is not None:
        first_v = raw[0][0] if raw else pin
        return [Span(ref, first_v, first_v, instant, instant)]
    return [Span(ref, s, t, snaps.at(s), snaps.at(t) if t is not None else None, ev)
            for s, t, ev in raw]


def _relations(a: list[Span], b: list[Span]) -> list[dict[str, Any]]:
    return [{"a": x.to_dict(), "b": y.to_dict(), "relation": allen.relation(x.interval(),
                                                                         y.interval())}
            for x in a for y in b]


async def relate(settings: Settings, reader: GraphReader, scope: ReadScope, a: str,
                 b: str | None = None, candidates: list[str] | None = None,
                 wanted: tuple[str, ...] = ("intersects",),
                 pool: AsyncConnectionPool[Any] | None = None) -> dict[str, Any]:
    """Allen relations from ``a`` to ``b``, or to each of ``candidates`` (matches only)."""
    if (b is None) == (candidates is None):
        raise BadRequest("give either b or a label to compare against")
    for name in wanted:
        if name != "intersects" and name not in allen.RELATIONS:
            raise BadRequest(f"unknown Allen relation {name!r}",
                             {"allowed": [*allen.RELATIONS, "intersects"]})
    left = await spans(settings, reader, scope, a, pool)
    if b is not None:
        pairs = _relations(left, await spans(settings, reader, scope, b, pool))
        return {"a": a, "b": b, "snapshot_version": scope.version, "pairs": pairs,
                "holds": sorted({p["relation"] for p in pairs})}
    accepted = set(wanted) | (allen.INTERSECTING if "intersects" in wanted else set())
    matches = []
    for ceid in candidates or []:
        pairs = [p for p in _relations(left, await spans(settings, reader, scope, ceid, pool))
                 if p["relation"] in accepted]
        if pairs:
            matches.append({"ceid": ceid, "pairs": pairs})
    return {"a": a, "relation": list(wanted), "snapshot_version": scope.version,
            "matches": matches}


async def label_members(reader: GraphReader, scope: ReadScope, label: str,
                        limit: int = 200) -> list[str]:
    """Entities of ``label`` the reader may see that existed at or before the pin."""
    rows = await reader.rows("temporal/label_members", scope, {"label": label}, limit=limit)
    return [r["ceid"] for r in rows]
