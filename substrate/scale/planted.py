"""Planted-partition graphs: ``k`` groups of ``size`` services, each pair inside a group
linked with probability ``p_in`` and each pair across groups with ``p_out`` (seeded), as
write-path records. Community detection tests and benchmarks know the right answer.

``change`` makes a local edit of a given number of edges: half of them removed from inside
the first ``groups`` groups, half added inside them (pairs not linked before), as happens
when a pull request rewires one part of a system.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from substrate.graph.records import EdgeRecord, NodeRecord

SOURCE = "planted"


def ceid(group: int, index: int) -> str:
    return f"service:g{group:03d}-n{index:03d}"


def edge_id(src: str, dst: str) -> str:
    return f"{src}-[DEPENDS_ON]->{dst}@{SOURCE}"


@dataclass
class Planted:
    groups: int
    size: int
    truth: dict[str, int] = field(default_factory=dict)  # ceid -> group
    edges: set[tuple[str, str]] = field(default_factory=set)  # (src, dst), src < dst

    def nodes(self) -> list[NodeRecord]:
        return [NodeRecord(c, "Service", {"name": c.split(":", 1)[1],
                                          "description": f"service {i} of group {g}"})
                for c, g in sorted(self.truth.items())
                for i in [int(c.rsplit("-n", 1)[1])]]

    def records(self, pairs: set[tuple[str, str]] | None = None) -> list[EdgeRecord]:
        return [EdgeRecord("DEPENDS_ON", a, b, f"planted://{a}/{b}#L1", source=SOURCE)
                for a, b in sorted(self.edges if pairs is None else pairs)]

    def weighted(self) -> list[tuple[str, str, float]]:
        return [(a, b, 1.0) for a, b in sorted(self.edges)]


def planted(groups: int, size: int, p_in: float, p_out: float, seed: int = 7) -> Planted:
    rng = random.Random(seed)
    graph = Planted(groups, size)
    nodes = [ceid(g, i) for g in range(groups) for i in range(size)]
    graph.truth = {n: int(n.split(":g")[1][:3]) for n in nodes}
    for g in range(groups):  # inside: every pair tried
        members = nodes[g * size:(g + 1) * size]
        graph.edges |= {(a, b) for a, b in itertools.combinations(members, 2)
                        if rng.random() < p_in}
    across = round(p_out * (len(nodes) * (len(nodes) - size) / 2))
    while across > 0:  # across: drawn, not tried pair by pair (fast at 200k edges)
        a, b = sorted(rng.sample(nodes, 2))
        if graph.truth[a] != graph.truth[b] and (a, b) not in graph.edges:
            graph.edges.add((a, b))
            across -= 1
    return graph


def change(graph: Planted, edges: int, groups: int = 2, seed: int = 11
           ) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(removed, added) pairs, half each, inside the first ``groups`` groups; ``graph`` is
    updated in place."""
    rng = random.Random(seed)
    inside = [p for p in sorted(graph.edges)
              if graph.truth[p[0]] == graph.truth[p[1]] < groups]
    removed = set(rng.sample(inside, edges // 2))
    added: set[tuple[str, str]] = set()
    while len(added) < edges - edges // 2:
        g = rng.randrange(groups)
        a, b = sorted(rng.sample(range(graph.size), 2))
        pair = (ceid(g, a), ceid(g, b))
        if pair not in graph.edges and pair not in removed:
            added.add(pair)
    graph.edges = (graph.edges - removed) | added
    return removed, added
