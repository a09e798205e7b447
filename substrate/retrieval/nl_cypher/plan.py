"""The query IR of the embedded translator: what to match, how to answer (list, count, rank).

A :class:`Node` is a pattern variable with labels and conditions; a :class:`Cond` is a
property equality, an id, a time window on the node's date, or a relationship to another
:class:`Node` (possibly negated, possibly counted against a number). ``cypher/nl/select.cypher.j2``
renders a :class:`Plan`; every user value is a ``$param`` in ``Plan.params``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Cond:
    kind: str  # prop | ceid | date | rel | count
    key: str = ""
    param: str = ""
    types: tuple[str, ...] = ()
    direction: str = "out"  # out: (node)-[]->(other); in: (node)<-[]-(other)
    other: Node | None = None
    negated: bool = False
    op: str = ""  # count comparator; "IN" for a prop matching any of a list
    since: str = ""  # time window parameters (on the relationship for rel, the node for date)
    until: str = ""


@dataclass
class Node:
    var: str
    labels: tuple[str, ...]
    conds: list[Cond] = field(default_factory=list)


@dataclass
class Plan:
    mode: str  # list | count | rank
    subject: Node
    rank: Cond | None = None
    order: str = "DESC"
    limit_param: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    reading: str = ""
    shape: str = ""  # the question shape (for the benchmark's per-shape accuracy)
    assumptions: list[str] = field(default_factory=list)  # what the reading took for granted

    def lacking(self) -> dict[str, Any] | None:
        """A listing of what lacks one relationship and nothing else ("which services have
        no owner?"): its subject's label and the relationship it lacks (None otherwise). Its
        empty answer means every such node has the relationship."""
        conds = self.subject.conds
        if self.mode != "list" or len(conds) != 1 or conds[0].kind != "rel" \
                or not conds[0].negated or conds[0].since or conds[0].until:
            return None
        c, other = conds[0], conds[0].other
        if other is not None and other.conds:
            return None
        return {"label": self.subject.labels[0] if self.subject.labels else "node",
                "types": list(c.types), "direction": c.direction,
                "other": list(other.labels) if other is not None else []}

    def context(self) -> dict[str, Any]:
        """The Jinja context of ``cypher/nl/select.cypher.j2``."""
        return {"mode": self.mode, "subject": asdict(self.subject),
                "rank": asdict(self.rank) if self.rank else None, "order": self.order,
                "limit_param": self.limit_param}
