"""Snapshot diffs (RSN-07, RSN-UC-06): what the change log says changed between two instants.

The window ``(start, end]`` selects the tenant's snapshots whose real-world time
(``snapshots.valid_at``) lies in it. Every element (node ceid or edge key
``src-[TYPE]->dst@source``) those snapshots touched is collapsed to one entry: the state
before its first change in the window against the state after its last one.

* existed before = its first change is an ``update`` or ``close``; exists after = its last
  change is an ``add`` or ``update``. Both -> ``changed``, only after -> ``added``, only
  before -> ``removed``; neither (added and removed inside the window) or a change that was
  reverted by the end of the window -> ``transient``.
* Fact changes and evidence-only changes are apart: a node or edge that existed before and
  after whose only difference is its evidence (an edge's ``evidence_ref`` or the set/order of
  its ``evidence_refs``, a node's provenance) is ``evidence``, not ``changed``; diffs list
  those only on request (``evidence=true``) but always count them.
* A node's ``changed_keys`` compares the properties its last writer asserted with the same
  keys before the window (a source that stops asserting a node without closing it shows as
  ``sources``). An edge compares evidence, confidence, weight and its own properties.
* Each entry names the snapshot that gave it its final state (version, time, source, note —
  the commit for a replayed repository) and the evidence: the edge's ``evidence_ref`` or the
  node's provenance, after the change (before it, for a removal).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from substrate.graph.ontology import Ontology
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import ReadScope

INTERNAL_KEYS = frozenset({
    "ceid", "tenant_id", "iv_from", "iv_to", "sources", "valid_from_v", "valid_to_v",
    "valid_from_ts", "valid_to_ts", "embedding", "confidence", "provenance", "alias_text",
})
EDGE_FIELDS = ("evidence_ref", "confidence", "weight", "props")
EVIDENCE_KEYS = frozenset({"evidence_ref", "evidence_refs"})  # changes of these alone: evidence
NODE_EVIDENCE_KEYS = frozenset({"attribute_refs", "alias_evidence"})  # a node's evidence lists
CHANGE_KINDS = ("added", "removed", "changed", "evidence", "transient")
SOURCE_MARKER = {"sources": None}  # the ``before`` of a change that only drops a source
DISTANCE_TYPES = ("CALLS", "DEPENDS_ON", "IMPORTS", "HOSTS", "OWNS", "PRIMARY_OWNER",
                  "MENTIONS", "WHY", "EXCEPTS", "CHANGES", "HAS_CHUNK")

_ORDER = "s.valid_at{d}, c.snapshot_version{d}, c.id{d}"
_NOT_MARKER = ("NOT (c.element_kind = 'node' AND c.op = 'update' "
               "AND c.before = '{\"sources\": null}'::jsonb)")
HISTORY_SQL = f"""
SELECT c.element_kind, c.element_id,
  (array_agg(c.op ORDER BY {_ORDER.format(d='')}) FILTER (WHERE {_NOT_MARKER}))[1],
  (array_agg(c.op ORDER BY {_ORDER.format(d=' DESC')}) FILTER (WHERE {_NOT_MARKER}))[1],
  (array_agg(c.before ORDER BY {_ORDER.format(d='')}) FILTER (WHERE {_NOT_MARKER}))[1],
  (array_agg(c.after ORDER BY {_ORDER.format(d=' DESC')}) FILTER (WHERE {_NOT_MARKER}))[1],
  (array_agg(s.source ORDER BY {_ORDER.format(d=' DESC')}))[1],
  array_agg(DISTINCT c.snapshot_version),
  bool_or(NOT {_NOT_MARKER})
FROM change_log c JOIN snapshots s ON s.version = c.snapshot_version
WHERE s.tenant_id = %(tenant)s AND c.tenant_id = %(tenant)s
  AND s.valid_at > %(start)s AND s.valid_at <= %(end)s
GROUP BY c.element_kind, c.element_id
"""
# the same, only for the nodes of %(near)s and the edges with an end among them (an edge key
# is ``src-[TYPE]->dst@source``)
_NEAR_SET = "(SELECT unnest(%(near)s::text[]))"
HISTORY_NEAR_SQL = HISTORY_SQL.replace("\nGROUP BY", f"""
  AND CASE WHEN c.element_kind = 'node' THEN c.element_id IN {_NEAR_SET}
      ELSE split_part(c.element_id, '-[', 1) IN {_NEAR_SET}
        OR regexp_replace(split_part(c.element_id, ']->', 2), '@[^@]*$', '') IN {_NEAR_SET}
      END
GROUP BY""")
SNAPSHOTS_SQL = """
SELECT version, tenant_id, valid_at, source, note, changed_nodes, changed_edges FROM snapshots
WHERE tenant_id = %(tenant)s AND valid_at > %(start)s AND valid_at <= %(end)s
ORDER BY valid_at, version
"""


@dataclass(frozen=True)
class ElementHistory:
    """One element's changes inside the window, as the aggregate query returns them."""

    kind: str
    id: str
    first_op: str | None
    last_op: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    last_source: str | None
    versions: tuple[int, ...]
    source_change: bool


def snapshot_ref(row: dict[str, Any]) -> dict[str, Any]:
    """A snapshot as answers cite it; ``commit`` when the note starts with a git sha."""
    note = row.get("note")
    head = str(note).split(" ", 1)[0] if note else ""
    commit = head if len(head) == 40 and all(c in "0123456789abcdef" for c in head) else None
    valid_at = row["valid_at"]
    return {"version": int(row["version"]), "tenant": row.get("tenant_id"),
            "valid_at": valid_at.isoformat() if isinstance(valid_at, datetime) else valid_at,
            "source": row["source"], "note": note, "commit": commit}


async def window_snapshots(conn: psycopg.AsyncConnection[Any], tenant: str, start: datetime,
                           end: datetime) -> list[dict[str, Any]]:
    """The tenant's snapshots in ``(start, end]``, oldest first, with their change counts."""
    cur = await conn.execute(SNAPSHOTS_SQL, {"tenant": tenant, "start": start, "end": end})
    names = ("version", "tenant_id", "valid_at", "source", "note", "changed_nodes",
             "changed_edges")
    return [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]


async def window_elements(conn: psycopg.AsyncConnection[Any], tenant: str, start: datetime,
                          end: datetime, near: Collection[str] | None = None
                          ) -> list[ElementHistory]:
    """The history of each element the window's snapshots touched; ``near``: only these
    nodes and the edges with an end among them."""
    args: dict[str, Any] = {"tenant": tenant, "start": start, "end": end}
    if near is not None:
        args["near"] = sorted(near)
    cur = await conn.execute(HISTORY_SQL if near is None else HISTORY_NEAR_SQL, args)
    return [ElementHistory(r[0], r[1], r[2], r[3], _json(r[4]), _json(r[5]), r[6],
                           tuple(sorted(int(v) for v in r[7])), bool(r[8]))
            for r in await cur.fetchall()]


def _json(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    data = json.loads(value) if isinstance(value, str) else value
    return data if type(data) is dict else dict(data)


def _change(h: ElementHistory) -> str:
    if h.first_op is None:  # only source drops: the node stayed
        return "changed"
    before = h.first_op in ("update", "close")
    after = h.last_op in ("add", "update")
    return {(True, True): "changed", (False, True): "added",
            (True, False): "removed"}.get((before, after), "transient")


def _node_props(raw: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (raw or {}).items() if k not in INTERNAL_KEYS}


def node_entry(h: ElementHistory, ontology: Ontology) -> dict[str, Any]:
    change = _change(h)
    after = (h.after or {}).get("props") if change != "removed" else None
    before = _node_props(h.before) if h.before is not None else None
    diff: dict[str, dict[str, Any]] = {}
    evidence: dict[str, dict[str, Any]] = {}  # the node's evidence lists, apart from its facts
    if change == "changed":
        old = h.before or {}
        diff = {k: {"before": old.get(k), "after": v} for k, v in (after or {}).items()
                if old.get(k) != v}
        old_sources = list(old.get("sources") or [])
        if h.source_change or (h.last_source and old_sources
                               and h.last_source not in old_sources):
            diff["sources"] = {"before": old_sources, "after": None}
        evidence = {k: diff.pop(k) for k in sorted(NODE_EVIDENCE_KEYS & set(diff))}
        if not diff:
            change = ("evidence" if evidence or (
                h.after is not None and "provenance" in old
                and h.after.get("provenance") != old.get("provenance")) else "transient")
    provenance = ((h.after or {}).get("provenance") if change != "removed"
                  else (h.before or {}).get("provenance"))
    label = (h.after or {}).get("label") or ontology.label_for_ceid(h.id)
    name = (after or {}).get("name") or (before or {}).get("name") or h.id
    return {"kind": "node", "id": h.id, "label": label, "name": name, "change": change,
            "before": before if change in ("removed", "changed") else None,
            "after": after if change in ("added", "changed") else None,
            "changed_keys": diff, "evidence_keys": evidence, "versions": list(h.versions),
            "evidence": [str(p) for p in provenance or []]}


def parse_key(key: str) -> tuple[str, str, str, str]:
    """``src-[TYPE]->dst@source`` -> (src, TYPE, dst, source)."""
    src, _, rest = key.partition("-[")
    rel_type, _, rest = rest.partition("]->")
    dst, _, source = rest.rpartition("@")
    return src, rel_type, dst, source


def edge_entry(h: ElementHistory) -> dict[str, Any]:
    change = _change(h)
    edge = (h.after if h.after is not None and change != "removed" else h.before) or {}
    src, rel_type, dst, source = parse_key(h.id)
    diff: dict[str, dict[str, Any]] = {}
    if change == "changed":
        diff, change = edge_diff(h.before or {}, h.after or {})
    refs = [str(edge.get("evidence_ref") or "")]
    refs += [str(r) for r in (edge.get("props") or {}).get("evidence_refs", [])]
    hop = None if not edge.get("evidence_ref") else {
        "type": rel_type, "from": src, "to": dst, "evidence_ref": edge["evidence_ref"],
        "confidence": edge.get("confidence"), "weight": edge.get("weight"), "source": source,
        "conflict": False}
    return {"kind": "edge", "id": h.id, "type": rel_type, "from": src, "to": dst,
            "connector": source, "change": change,
            "before": _edge_state(h.before) if change in ("removed", "changed") else None,
            "after": _edge_state(h.after) if change in ("added", "changed") else None,
            "changed_keys": diff, "versions": list(h.versions),
            "evidence": [r for r in dict.fromkeys(refs) if r], "hop": hop}


def edge_diff(old: dict[str, Any], new: dict[str, Any]
              ) -> tuple[dict[str, dict[str, Any]], str]:
    """(changed keys, change) of an edge that existed before and after: ``changed`` when a
    fact changed (confidence, weight or a property other than the evidence), ``evidence``
    when only its evidence did (``evidence_ref``, or the set or order of ``evidence_refs``),
    ``transient`` when nothing did."""
    diff: dict[str, dict[str, Any]] = {}
    for k in ("evidence_ref", "confidence", "weight"):
        if old.get(k) != new.get(k):
            diff[k] = {"before": old.get(k), "after": new.get(k)}
    old_props, new_props = dict(old.get("props") or {}), dict(new.get("props") or {})
    old_refs, new_refs = old_props.pop("evidence_refs", None), new_props.pop("evidence_refs", None)
    if old_refs != new_refs:
        diff["evidence_refs"] = {"before": old_refs, "after": new_refs}
    if old_props != new_props:
        diff["props"] = {"before": old_props, "after": new_props}
    if not diff:
        return diff, "transient"
    return diff, "changed" if set(diff) - EVIDENCE_KEYS else "evidence"


def _edge_state(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    if payload is None:
        return None
    return {k: payload.get(k) for k in EDGE_FIELDS}


def collapse(rows: Iterable[ElementHistory], snapshots: list[dict[str, Any]],
             ontology: Ontology) -> list[dict[str, Any]]:
    """One entry per element, nodes first, each with the snapshot of its final state."""
    refs = {int(s["version"]): snapshot_ref(s) for s in snapshots}
    out = []
    for h in rows:
        entry = node_entry(h, ontology) if h.kind == "node" else edge_entry(h)
        last = max(h.versions, key=lambda v: (refs[v]["valid_at"], v) if v in refs else ("", v))
        entry["snapshot"] = refs.get(last)
        out.append(entry)
    out.sort(key=lambda e: (e["kind"] != "node", e["id"]))
    return out


def touched(entry: dict[str, Any]) -> list[str]:
    """The nodes a change is about: the node itself, or both ends of the edge."""
    if entry["kind"] == "node":
        return [entry["id"]]
    return [x for x in (entry["from"], entry["to"]) if x]


def matches(entry: dict[str, Any], label: str | None, types: tuple[str, ...],
            ontology: Ontology) -> bool:
    """``types``: only relationship changes of those types. ``label``: node changes of that
    label and relationship changes with an end of that label."""
    if types and (entry["kind"] != "edge" or entry["type"] not in types):
        return False
    if label is None:
        return True
    if entry["kind"] == "node":
        return bool(entry["label"] == label)
    return any(ontology.label_for_ceid(x) == label for x in touched(entry))


async def distances(reader: GraphReader, scope: ReadScope, targets: list[str], v_from: int,
                    v_to: int, max_depth: int = 3, wanted: Iterable[str] | None = None,
                    reached: dict[str, int] | None = None, cap: int | None = None
                    ) -> dict[str, int]:
    """Hops from the nearest target to every node within ``max_depth``, over the structural
    relationships that existed at some snapshot of ``[v_from, v_to]`` (0 = a target).

    ``wanted``: only these nodes' distances are needed (the ends of the changes ranked by
    it); the result may or may not hold the others. The search then stops once each has
    one, and its last level only looks for them (a hub within reach multiplies the nodes one
    level further, the changes do not): from their side when they are fewer than the nodes
    that level would expand. ``reached``: this search's result to ``max_depth - 1`` (done
    beforehand, while the changes were read): only the last level is left. ``cap``: stop
    at the first level that brings the nodes found beyond this many (a hub within
    reach); the result then holds every node up to the level before it (the first level is
    always kept)."""
    first = 1 if reached is None else max(1, max_depth)
    dist = {t: 0 for t in targets} if reached is None else dict(reached)
    need = None if wanted is None else set(wanted) - dist.keys()
    frontier = [c for c, d in dist.items() if d == first - 1 and not c.startswith("chunk:")]
    for depth in range(first, max_depth + 1):
        if not frontier or need == set():
            break
        if need is not None and depth == max_depth:
            found = (await linked_to(reader, scope, need, frontier, v_from, v_to)
                     if len(need) <= len(frontier) else
                     {r["ceid"] for r in await reader.plain_rows(
                         "temporal/window_neighbours", scope,
                         {"types": list(DISTANCE_TYPES), "within": True, "limit": False},
                         ceids=frontier,
                         within=sorted(need), v_from=v_from, v_to=v_to)})
            dist.update(dict.fromkeys(found, depth))
            break
        limit = None if cap is None or depth == 1 else cap + len(dist) + 1  # level 1: whole
        rows = await reader.plain_rows("temporal/window_neighbours", scope,
                                       {"types": list(DISTANCE_TYPES), "within": False,
                                        "limit": limit is not None},
                                       ceids=frontier, v_from=v_from, v_to=v_to, limit=limit)
        if limit is not None and len(rows) >= limit:
            break  # that level would bring more than ``cap`` nodes: it is left out
        frontier = []
        for r in rows:
            if r["ceid"] not in dist:
                dist[r["ceid"]] = depth
                if not str(r["ceid"]).startswith("chunk:"):
                    frontier.append(r["ceid"])
        if need is not None:
            need -= dist.keys()
        if cap is not None and len(dist) > cap:
            break
    return dist


async def linked_to(reader: GraphReader, scope: ReadScope, ceids: Iterable[str],
                    within: list[str], v_from: int, v_to: int) -> set[str]:
    """Which of ``ceids`` neighbour a node of ``within`` over the structural relationships
    that existed at some snapshot of ``[v_from, v_to]``."""
    found: set[str] = set()
    for label, chunks in (("Entity", False), ("Chunk", True)):
        group = sorted(c for c in ceids if c.startswith("chunk:") == chunks)
        if group:
            rows = await reader.plain_rows("temporal/window_links", scope,
                                     {"label": label, "types": list(DISTANCE_TYPES)},
                                     ceids=group, within=within, v_from=v_from, v_to=v_to)
            found |= {r["ceid"] for r in rows}
    return found


def distance_of(entry: dict[str, Any], dist: dict[str, int]) -> int | None:
    found = [dist[x] for x in touched(entry) if x in dist]
    return min(found) if found else None
