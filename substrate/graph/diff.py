"""Pure change computation: what a batch changes against the live graph.

Nodes are updated in place (their before/after goes to the change log) and keep a list of
validity intervals, so a removed-then-restored service has a gap in its history. Edges are
versioned: a changed edge closes its old version and opens a new one. An edge's identity is
``(src, type, dst, source)``, so the same fact stated by two connectors is two edges, each with
its own evidence (ownership from CODEOWNERS and from an HR export can then disagree openly).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from substrate.graph.records import EdgeRecord, NodeRecord

LIVE_NODE = dict[str, Any]  # {"label", "props", "sources"}
LIVE_EDGE = dict[str, Any]  # {"type", "src", "dst", "source", "evidence_ref", ...}


def edge_key(edge: EdgeRecord) -> str:
    return f"{edge.src}-[{edge.type}]->{edge.dst}@{edge.source}"


def edge_payload(edge: EdgeRecord) -> dict[str, Any]:
    return {
        "type": edge.type, "src": edge.src, "dst": edge.dst, "source": edge.source,
        "evidence_ref": edge.evidence_ref, "confidence": float(edge.confidence),
        "weight": float(edge.weight),
        "props": dict(sorted(edge.props.items())) if edge.props else {},
    }


def node_payload(node: NodeRecord) -> dict[str, Any]:
    return {
        "label": node.label, "props": dict(sorted(node.props.items())),
        "confidence": float(node.confidence), "provenance": sorted(node.provenance),
    }


@dataclass
class ChangeSet:
    node_adds: list[NodeRecord] = field(default_factory=list)  # new or re-opened
    node_updates: list[tuple[NodeRecord, LIVE_NODE]] = field(default_factory=list)
    node_source_drops: list[tuple[str, list[str]]] = field(default_factory=list)
    node_closes: list[tuple[str, LIVE_NODE]] = field(default_factory=list)
    edge_adds: list[tuple[str, EdgeRecord]] = field(default_factory=list)
    edge_closes: list[tuple[str, LIVE_EDGE]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.node_adds or self.node_updates or self.node_closes
            or self.node_source_drops or self.edge_adds or self.edge_closes
        )

    def changed_ids(self) -> list[str]:
        ids = {n.ceid for n in self.node_adds} | {n.ceid for n, _ in self.node_updates}
        ids |= {c for c, _ in self.node_closes} | {c for c, _ in self.node_source_drops}
        ids |= {k for k, _ in self.edge_adds} | {k for k, _ in self.edge_closes}
        for _, added in self.edge_adds:
            ids |= {added.src, added.dst}
        for _, closed in self.edge_closes:
            ids |= {closed["src"], closed["dst"]}
        return sorted(ids)


def _node_changed(node: NodeRecord, live: LIVE_NODE, source: str) -> bool:
    current = live["props"]
    if any(current.get(k) != v for k, v in node.props.items()):
        return True
    return source not in live.get("sources", [])


def diff_nodes(
    nodes: list[NodeRecord], live: dict[str, LIVE_NODE], closed: set[str], source: str,
    changes: ChangeSet,
) -> None:
    for node in nodes:
        current = live.get(node.ceid)
        if current is None:
            changes.node_adds.append(node)  # new, or re-opened when in ``closed``
        elif _node_changed(node, current, source):
            changes.node_updates.append((node, current))


def diff_edges(
    edges: list[EdgeRecord], live: dict[str, LIVE_EDGE], changes: ChangeSet
) -> set[str]:
    seen = set()
    for edge in edges:
        key = edge_key(edge)
        seen.add(key)
        current = live.get(key)
        if current is None:
            changes.edge_adds.append((key, edge))
        elif _comparable(current) != _comparable(edge_payload(edge)):
            changes.edge_closes.append((key, current))
            changes.edge_adds.append((key, edge))
    return seen


_COMPARED = ("type", "src", "dst", "source", "evidence_ref", "confidence", "weight", "props")


def _comparable(payload: LIVE_EDGE) -> bytes:
    """An edge as JSON with sorted keys (1 and 1.0 differ; values JSON does not know as
    their string form): a stored edge and a stated one are the same edge when these match."""
    return orjson.dumps({k: payload.get(k) for k in _COMPARED}, option=orjson.OPT_SORT_KEYS,
                        default=str)


def sync_removals(
    source: str,
    batch_ceids: set[str],
    seen_edges: set[str],
    source_nodes: dict[str, LIVE_NODE],
    source_edges: dict[str, LIVE_EDGE],
    changes: ChangeSet,
) -> None:
    """In sync mode, whatever ``source`` said before and no longer says is withdrawn."""
    for key, edge in source_edges.items():
        if key not in seen_edges:
            changes.edge_closes.append((key, edge))
    for ceid, node in source_nodes.items():
        if ceid in batch_ceids:
            continue
        remaining = [s for s in node.get("sources", []) if s != source]
        if remaining:
            changes.node_source_drops.append((ceid, remaining))
        else:
            changes.node_closes.append((ceid, node))


def content_hash(nodes: list[NodeRecord], edges: list[EdgeRecord], source: str, mode: str) -> str:
    """SHA-256 of the batch, independent of the order of its records: each record as JSON
    with sorted keys (values JSON does not know as their string form), the lines sorted."""
    def line(value: Any) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)

    digest = hashlib.sha256(line({"source": source, "mode": mode}))
    for part in (
        sorted(line([n.ceid, n.label, n.props, float(n.confidence), sorted(n.provenance)])
               for n in nodes),
        sorted(line([e.type, e.src, e.dst, e.source, e.evidence_ref, float(e.confidence),
                     float(e.weight), e.props]) for e in edges),
    ):
        digest.update(b"\n#")  # JSON text holds no raw newline: the parts cannot run together
        for text in part:
            digest.update(b"\n" + text)
    return digest.hexdigest()
