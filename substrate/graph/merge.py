"""Merge two entities that are one thing (``checkout-svc`` is ``checkout``), with evidence.

One snapshot through :meth:`GraphWriter.commit`: the merged node is closed (its live edges
close with it), each of its live edges is re-created on the kept node with the same type,
evidence, confidence and source (``merged_from``/``merge_evidence`` in the edge's props),
an ``ALIAS_OF`` edge ``merged -> kept`` carries the merge's evidence, and the kept node lists
the merged name in ``aliases``. An ``entity.merge`` row in ``audit_log`` records who did it.
Nothing is deleted: the merged node and its old edges stay in history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

from substrate.errors import NotFound, ValidationFailed
from substrate.graph import diff as d
from substrate.graph.neo4j_write import RESERVED
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.review import audit
from substrate.graph.writer import CommitResult, GraphWriter, storage_label

MERGE_SOURCE = "merge"
DERIVED = {"alias_text", "name"}  # recomputed by the write path / set explicitly


def _refuse(target: str, reason: str) -> ValidationFailed:
    return ValidationFailed(f"merge refused: {reason}",
                            [{"record": target, "reason": reason, "position": None}])


def _read(writer: GraphWriter, name: str, ceid: str, tenant: str) -> list[dict[str, Any]]:
    query = writer.cypher.text(name, label=storage_label(ceid))
    records, _, _ = writer.driver.execute_query(
        query, {"tenant": tenant, "ceids": [ceid]}, routing_="r"
    )
    return [r.data() for r in records]


def _live_node(writer: GraphWriter, tenant: str, ceid: str) -> dict[str, Any]:
    rows = [r for r in _read(writer, "graph/live_nodes", ceid, tenant) if r["live"]]
    if not rows:
        raise NotFound(f"no live entity {ceid!r} in tenant {tenant!r}", {"ceid": ceid})
    return rows[0]


def _kept_node(kept: dict[str, Any], merged: dict[str, Any], evidence_ref: str) -> NodeRecord:
    """The kept node as it is, plus the merged name (and its aliases) as aliases."""
    props = {k: v for k, v in kept["props"].items() if k not in RESERVED | DERIVED}
    merged_props = merged["props"]
    names = [merged_props.get("name", merged["ceid"]), *merged_props.get("aliases", [])]
    aliases = dict.fromkeys([*props.get("aliases", []), *names])
    aliases.pop(kept["props"].get("name"), None)
    props["aliases"] = sorted(aliases)
    props["alias_evidence"] = sorted(
        {*props.get("alias_evidence", []), *(f"{n}={evidence_ref}" for n in names)}
    )
    props["name"] = kept["props"].get("name", kept["ceid"])
    provenance = tuple(dict.fromkeys([*kept["props"].get("provenance", []), evidence_ref]))
    confidence = float(kept["props"].get("confidence", 1.0))
    return NodeRecord(kept["ceid"], kept["label"], props, provenance, confidence)


def _moved_edges(writer: GraphWriter, tenant: str, keep: str, merge: str,
                 evidence_ref: str) -> list[EdgeRecord]:
    """The merged node's live edges, re-attached to the kept node (none it already has)."""
    have = {r["key"] for r in _read(writer, "graph/edges_touching", keep, tenant)}
    moved: list[EdgeRecord] = []
    for row in _read(writer, "graph/edges_touching", merge, tenant):
        src = keep if row["src"] == merge else row["src"]
        dst = keep if row["dst"] == merge else row["dst"]
        if src == dst or keep in (row["src"], row["dst"]):
            continue  # an edge between the two becomes nothing
        props = {**(row["props"] or {}), "merged_from": merge, "merge_evidence": evidence_ref}
        edge = EdgeRecord(row["type"], src, dst, row["evidence_ref"], row["confidence"],
                          row["weight"], row["source"], props)
        if d.edge_key(edge) not in have:
            moved.append(edge)
    return moved


def merge_entities(writer: GraphWriter, tenant: str, keep_ceid: str, merge_ceid: str,
                   evidence_ref: str, actor: str, valid_at: datetime | None = None,
                   alias_props: dict[str, Any] | None = None) -> CommitResult:
    """Merge ``merge_ceid`` into ``keep_ceid`` as one snapshot, audited (see module doc)."""
    target = f"{merge_ceid}->{keep_ceid}"
    if not evidence_ref or not evidence_ref.strip():
        raise _refuse(target, "a merge needs evidence: evidence_ref is empty")
    if keep_ceid == merge_ceid:
        raise _refuse(target, "an entity cannot be merged into itself")
    kept, merged = _live_node(writer, tenant, keep_ceid), _live_node(writer, tenant, merge_ceid)
    if kept["label"] != merged["label"]:
        raise _refuse(target, f"labels differ: {kept['label']} and {merged['label']}")
    moved = _moved_edges(writer, tenant, keep_ceid, merge_ceid, evidence_ref)
    alias = EdgeRecord("ALIAS_OF", merge_ceid, keep_ceid, evidence_ref, source=MERGE_SOURCE,
                       props={"merged_by": actor, **(alias_props or {})})
    batch = GraphBatch([_kept_node(kept, merged, evidence_ref)], [*moved, alias])
    result = writer.commit(
        batch, source=MERGE_SOURCE, tenant=tenant, deletes=[merge_ceid],
        note=f"merge {merge_ceid} into {keep_ceid} by {actor}: {evidence_ref}",
        keep_edge_sources=True, valid_at=valid_at,
    )
    detail = {"snapshot_version": result.snapshot_version, "kept": keep_ceid,
              "merged": merge_ceid, "evidence_ref": evidence_ref,
              "moved_edges": sorted(d.edge_key(e) for e in moved)}
    with psycopg.connect(writer.settings.postgres_dsn) as conn:
        audit(conn, tenant, actor, "entity.merge", target, detail)
    return result
