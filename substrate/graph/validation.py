"""Checks every record of a write batch against the ontology and the evidence rules.

A batch with any problem is rejected whole; the caller gets every problem with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from substrate.graph.ontology import Ontology
from substrate.graph.records import EdgeRecord, NodeRecord

_PRIMITIVES = (str, int, float, bool)


@dataclass(frozen=True)
class Problem:
    record: str  # ceid or eid
    reason: str
    position: int | None = None  # index in the batch or line number of the source

    def to_dict(self) -> dict[str, Any]:
        return {"record": self.record, "reason": self.reason, "position": self.position}


def _valid_confidence(value: float) -> bool:
    return isinstance(value, int | float) and not math.isnan(value) and 0 < value <= 1


def _valid_value(value: Any) -> bool:
    if value is None or isinstance(value, _PRIMITIVES):
        return True
    if isinstance(value, list | tuple):
        return all(isinstance(v, _PRIMITIVES) for v in value)
    return False


def check_node(node: NodeRecord, ontology: Ontology) -> list[str]:
    reasons = []
    spec = ontology.labels.get(node.label)
    if spec is None:
        return [f"unknown label {node.label!r} (ontology {ontology.version})"]
    prefix = spec.ceid_prefix + ":"
    if not node.ceid.startswith(prefix) or len(node.ceid) <= len(prefix):
        reasons.append(f"ceid must look like '{spec.ceid_prefix}:<id>'")
    for prop in spec.required:
        if node.props.get(prop) in (None, ""):
            reasons.append(f"{node.label} requires property {prop!r}")
    if not _valid_confidence(node.confidence):
        reasons.append("confidence must be in (0, 1]")
    bad = [k for k, v in node.props.items() if not _valid_value(v)]
    if bad:
        reasons.append(f"properties must be scalars or lists of scalars: {sorted(bad)}")
    return reasons


def check_edge(edge: EdgeRecord, ontology: Ontology) -> list[str]:
    reasons = []
    if not ontology.has_type(edge.type):
        reasons.append(f"unknown relationship type {edge.type!r} (ontology {ontology.version})")
    if not edge.evidence_ref or not edge.evidence_ref.strip():
        reasons.append("edge without evidence_ref")
    if not _valid_confidence(edge.confidence):
        reasons.append("confidence must be in (0, 1]")
    if not isinstance(edge.weight, int | float) or math.isnan(edge.weight) or edge.weight < 0:
        reasons.append("weight must be a number >= 0")
    for end in (edge.src, edge.dst):
        if ontology.label_for_ceid(end) is None:
            reasons.append(f"endpoint {end!r} has no known ceid prefix")
    bad = [k for k, v in edge.props.items() if not _valid_value(v)]
    if bad:
        reasons.append(f"properties must be scalars or lists of scalars: {sorted(bad)}")
    return reasons


def validate_batch(
    nodes: Iterable[NodeRecord],
    edges: Iterable[EdgeRecord],
    ontology: Ontology,
    known_ceids: set[str],
) -> list[Problem]:
    """All problems of a batch. ``known_ceids``: live ids in the graph plus the batch's nodes."""
    problems = []
    for i, node in enumerate(nodes):
        problems += [Problem(node.ceid, r, i) for r in check_node(node, ontology)]
    for i, edge in enumerate(edges):
        reasons = check_edge(edge, ontology)
        for end in (edge.src, edge.dst):
            if end not in known_ceids:
                reasons.append(f"endpoint {end!r} is neither in the batch nor in the graph")
        problems += [Problem(edge.eid, r, i) for r in reasons]
    return problems


def validate_queued(
    records: Iterable[NodeRecord | EdgeRecord], ontology: Ontology
) -> list[Problem]:
    """Problems of records bound for the verification queue (endpoints may not exist yet)."""
    problems = []
    for record in records:
        if isinstance(record, NodeRecord):
            problems += [Problem(record.ceid, r) for r in check_node(record, ontology)]
        else:
            problems += [Problem(record.eid, r) for r in check_edge(record, ontology)]
    return problems
