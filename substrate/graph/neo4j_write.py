"""The statements of one snapshot's Neo4j write transaction, batched with UNWIND."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from neo4j import ManagedTransaction, Result

from substrate.cypher import CypherLibrary
from substrate.graph import diff as d
from substrate.graph.ontology import Ontology
from substrate.graph.records import EdgeRecord, NodeRecord

ROWS = 10_000
T = TypeVar("T")
RESERVED = {"eid", "tenant_id", "valid_from_v", "valid_to_v", "valid_from_ts", "valid_to_ts",
            "evidence_ref", "confidence", "weight", "source", "prop_keys", "conflict",
            "conflict_with", "iv_from", "iv_to", "sources", "ceid", "embedding", "provenance"}


class BoltRows(list[Any]):
    """A statement's rows as given to the driver, with a short ``repr``. neo4j's Bolt
    ``run`` formats every RUN's parameters for its debug log before it knows whether that log
    is on (``" ".join(map(repr, fields))`` in ``Bolt5x5.run``), which cost as much as packing
    them: ~0.3 s per 200k edge rows, on the thread that feeds the write transaction."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{len(self)} rows>"


def storage(ceid: str) -> str:
    return "Chunk" if ceid.startswith("chunk:") else "Entity"


def node_row(node: NodeRecord, embedding: list[float] | None) -> dict[str, Any]:
    props = {k: v for k, v in node.props.items() if k not in RESERVED}
    if isinstance(props.get("aliases"), list):
        props["alias_text"] = " ".join(str(a) for a in props["aliases"])
    return {"ceid": node.ceid, "props": props, "confidence": float(node.confidence),
            "provenance": list(node.provenance), "embedding": embedding}


def new_node_props(node: NodeRecord, embedding: list[float] | None, tenant: str,
                   version: int, maxv: int, source: str) -> dict[str, Any]:
    """Every property of a node created at ``version`` (graph/create_nodes): what
    graph/upsert_nodes leaves on a node it creates."""
    row = node_row(node, embedding)
    props = {**row["props"], "tenant_id": tenant, "ceid": node.ceid, "valid_from_v": version,
             "iv_from": [version], "iv_to": [maxv], "sources": [source],
             "confidence": row["confidence"], "provenance": row["provenance"]}
    if embedding is not None:
        props["embedding"] = embedding
    return props


def edge_row(key: str, edge: EdgeRecord, ends: Mapping[str, str]) -> dict[str, Any]:
    """graph/create_edges' row: its ends by element id (``ends``: ceid -> element id),
    fixed properties as fields, user properties (when there are any) under ``user`` with
    their names in ``prop_keys``."""
    missing = [c for c in (edge.src, edge.dst) if c not in ends]
    if missing:  # the checks before the write found every end: a bug, never a partial write
        raise RuntimeError(f"edge {key}: no node read or created for {missing}")
    return _edge_row(key, edge, ends[edge.src], ends[edge.dst])


def _edge_row(key: str, edge: EdgeRecord, a: str | None, b: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "key": key, "a": a, "b": b, "evidence_ref": edge.evidence_ref,
        "confidence": float(edge.confidence), "weight": float(edge.weight),
        "source": edge.source}
    user = {k: v for k, v in edge.props.items() if k not in RESERVED}
    if user:
        row["user"], row["prop_keys"] = user, sorted(user)
    return row


@dataclass
class Rows:
    """A snapshot's statement rows, built before its transaction (:func:`rows_for`, while
    the snapshot before it commits): only the element ids of the nodes the transaction
    creates are filled in during it (:meth:`fill_ends`)."""

    created: dict[str, list[dict[str, Any]]]  # label -> graph/create_nodes rows
    merged: dict[str, list[dict[str, Any]]]  # label -> graph/upsert_nodes rows
    edges: dict[tuple[str, bool], list[dict[str, Any]]]  # (type, user props) -> create_edges
    open_ends: list[tuple[dict[str, Any], str, str]]  # (edge row, "a" or "b", ceid)

    def fill_ends(self, created: Mapping[str, str]) -> None:
        """The ends created in this run of the transaction (again when it runs again)."""
        for row, side, ceid in self.open_ends:
            element_id = created.get(ceid)
            if element_id is None:  # the checks found every end: a bug, never a partial write
                raise RuntimeError(f"edge {row['key']}: no node read or created for {[ceid]}")
            row[side] = element_id


def rows_for(changes: d.ChangeSet, embeddings: Mapping[str, list[float]],
             existing: Mapping[str, str], tenant: str, version: int, maxv: int,
             source: str) -> Rows:
    """The rows of ``changes``' node and edge statements (``existing``: element ids of the
    nodes that exist; the others are created, their ends left open)."""
    created: dict[str, list[dict[str, Any]]] = defaultdict(list)
    merged: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node in [*changes.node_adds, *(n for n, _ in changes.node_updates)]:
        vector = embeddings.get(node.ceid)
        if node.ceid in existing:
            merged[node.label].append(node_row(node, vector))
        else:
            created[node.label].append({"props": new_node_props(
                node, vector, tenant, version, maxv, source)})
    edges: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
    open_ends: list[tuple[dict[str, Any], str, str]] = []
    for key, edge in changes.edge_adds:
        row = _edge_row(key, edge, existing.get(edge.src), existing.get(edge.dst))
        if row["a"] is None:
            open_ends.append((row, "a", edge.src))
        if row["b"] is None:
            open_ends.append((row, "b", edge.dst))
        edges[(edge.type, "user" in row)].append(row)
    return Rows(dict(created), dict(merged), dict(edges), open_ends)


def edge_rows(keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(key, start node) pairs as graph/live_edges' and graph/close_edges' rows, by
    (relationship type, start node's storage label): one row per start node with its keys."""
    grouped: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for key, src in keys:
        rel_type = key.split("-[", 1)[1].split("]->", 1)[0]
        grouped[(rel_type, storage(src))][src].append(key)
    return {group: [{"src": src, "keys": ks} for src, ks in by_src.items()]
            for group, by_src in grouped.items()}


@dataclass
class WritePlan:
    cypher: CypherLibrary
    ontology: Ontology
    tenant: str
    source: str
    version: int
    valid_at: datetime
    maxv: int
    # ceid -> element id of every node the batch names that exists: the batch's nodes live or
    # closed (MERGE them, never CREATE) and its edges' other, live ends
    existing: Mapping[str, str] = field(default_factory=dict)
    # ceid -> element id of the nodes the last run created (its transaction's, when it ran
    # again after a transient error)
    created: dict[str, str] = field(default_factory=dict)

    def _run(self, tx: ManagedTransaction, name: str, ctx: dict[str, Any],
             rows_key: str, rows: list[Any], **extra: Any) -> None:
        self._chunks(tx, name, ctx, rows_key, rows, extra, lambda result: result.consume())

    def _values(self, tx: ManagedTransaction, name: str, ctx: dict[str, Any],
                rows_key: str, rows: list[Any], **extra: Any) -> list[Any]:
        """A template answering one record per run: its value for each chunk, in order."""
        return self._chunks(tx, name, ctx, rows_key, rows, extra,
                            lambda result: result.single(strict=True)[0])

    def _chunks(self, tx: ManagedTransaction, name: str, ctx: dict[str, Any], rows_key: str,
                rows: list[Any], extra: dict[str, Any], take: Callable[[Result], T]
                ) -> list[T]:
        """Run the template over ``rows`` in chunks of ``ROWS``."""
        query = self.cypher.text(name, **ctx)
        return [take(tx.run(query, {"tenant": self.tenant, rows_key: BoltRows(rows[i : i + ROWS]),
                                    **extra}))
                for i in range(0, len(rows), ROWS)]

    def run(self, tx: ManagedTransaction, changes: d.ChangeSet, rows: Rows) -> None:
        """``rows``: the statements' rows, built beforehand (:func:`rows_for` with this
        plan's ``existing``)."""
        ts = self.valid_at.isoformat()
        stamp = {"version": self.version, "ts": ts}
        closing = edge_rows((key, edge["src"]) for key, edge in changes.edge_closes)
        for (rel_type, src_label), keys in closing.items():
            ctx = {"rel_type": rel_type, "src_label": src_label}
            self._run(tx, "graph/close_edges", ctx, "rows", keys, **stamp)
        self.created = self._upsert_nodes(tx, rows, ts)
        rows.fill_ends(self.created)
        drops: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for ceid, remaining in changes.node_source_drops:
            drops[storage(ceid)].append({"ceid": ceid, "sources": remaining})
        for label, sources in drops.items():
            self._run(tx, "graph/set_node_sources", {"label": label}, "rows", sources)
        closes: dict[str, list[str]] = defaultdict(list)
        for ceid, _ in changes.node_closes:
            closes[storage(ceid)].append(ceid)
        for label, ceids in closes.items():
            self._run(tx, "graph/close_nodes", {"label": label}, "ceids", ceids, **stamp)
        self._create_edges(tx, rows, stamp)
        self._mark_conflicts(tx, changes)

    def _upsert_nodes(self, tx: ManagedTransaction, rows: Rows, ts: str) -> dict[str, str]:
        """Create the new nodes, MERGE the others; the created nodes' element ids."""
        ids: dict[str, str] = {}
        for label, created in rows.created.items():
            ctx = {"label": label, "entity": label != "Chunk"}
            for pairs in self._values(tx, "graph/create_nodes", ctx, "rows", created, ts=ts):
                ids.update(pairs)
        for label, merged in rows.merged.items():
            ctx = {"label": label, "entity": label != "Chunk"}
            self._run(tx, "graph/upsert_nodes", ctx, "rows", merged, version=self.version,
                      ts=ts, maxv=self.maxv, source=self.source)
        return ids

    def _create_edges(self, tx: ManagedTransaction, rows: Rows, stamp: dict[str, Any]
                      ) -> None:
        for (rel_type, user_props), group in rows.edges.items():
            ctx = {"rel_type": rel_type, "user_props": user_props}
            made = sum(self._values(tx, "graph/create_edges", ctx, "rows", group, **stamp))
            if made != len(group):  # an end vanished since it was read: roll the snapshot back
                raise RuntimeError(f"{rel_type}: {made} of {len(group)} relationships created "
                                   "(an end was not found by its element id)")

    def _mark_conflicts(self, tx: ManagedTransaction, changes: d.ChangeSet) -> None:
        subjects: dict[tuple[str, str], set[str]] = defaultdict(set)
        touched = [(e.type, e.src, e.dst) for _, e in changes.edge_adds]
        touched += [(e["type"], e["src"], e["dst"]) for _, e in changes.edge_closes]
        for rel_type, src, dst in touched:
            side = self.ontology.single_valued_side(rel_type)
            if side is not None:
                subjects[(rel_type, side)].add(dst if side == "target" else src)
        for (rel_type, side), subs in subjects.items():
            self._run(tx, "graph/mark_conflicts", {"rel_type": rel_type, "side": side},
                      "subjects", sorted(subs))
