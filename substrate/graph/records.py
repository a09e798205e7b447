"""Plain records every connector produces and the write path consumes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    """Lower-case, dash-separated form of a name: ``Checkout Service`` -> ``checkout-service``."""
    return _SLUG.sub("-", name.strip().lower()).strip("-")


def ceid(kind: str, name: str) -> str:
    """Canonical entity id, e.g. ``ceid("service", "Checkout")`` -> ``service:checkout``."""
    return f"{kind}:{slug(name)}"


@dataclass(frozen=True)
class NodeRecord:
    """A node to be present in the graph. ``props`` must hold ``name``."""

    ceid: str
    label: str
    props: dict[str, Any] = field(default_factory=dict)
    provenance: tuple[str, ...] = ()
    confidence: float = 1.0

    @property
    def name(self) -> str:
        return str(self.props.get("name", self.ceid))


@dataclass(frozen=True)
class EdgeRecord:
    """A relationship ``src -[type]-> dst`` between canonical ids, with its evidence.

    ``evidence_ref`` points at what proves the edge, e.g. ``docker-compose.yml#L12@3f2a9c1``.
    """

    type: str
    src: str
    dst: str
    evidence_ref: str
    confidence: float = 1.0
    weight: float = 1.0
    source: str = ""
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def eid(self) -> str:
        return f"{self.src}-[{self.type}]->{self.dst}"


@dataclass
class GraphBatch:
    """What one connector run (or one commit of a replayed history) says is true."""

    nodes: list[NodeRecord] = field(default_factory=list)
    edges: list[EdgeRecord] = field(default_factory=list)
    # items below the verification threshold or ambiguous: they go to the queue, not the graph
    pending: list[NodeRecord | EdgeRecord] = field(default_factory=list)

    def extend(self, other: GraphBatch) -> None:
        self.nodes.extend(other.nodes)
        self.edges.extend(other.edges)
        self.pending.extend(other.pending)
