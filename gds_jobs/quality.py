"""How good a partition is: modularity (the quantity Leiden maximises) and normalised mutual
information against a known partition (planted-partition tests and benchmarks).

Both are a few lines of numpy: scikit-learn's ``normalized_mutual_info_score`` would pull in
scikit-learn and its compiled dependencies for one formula. NMI here is the arithmetic-mean
normalisation (scikit-learn's default): ``I(U; V) / ((H(U) + H(V)) / 2)``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping

import numpy as np

Edge = tuple[str, str, float]


def _codes(labels: Iterable[Hashable]) -> np.ndarray:
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(x, len(index)) for x in labels], dtype=np.int64)


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def nmi(truth: Mapping[str, Hashable], found: Mapping[str, Hashable]) -> float:
    """NMI over the nodes of ``truth``; a node ``found`` lacks is a singleton of its own."""
    nodes = sorted(truth)
    if not nodes:
        return 1.0
    u = _codes(truth[n] for n in nodes)
    v = _codes(found.get(n, ("singleton", n)) for n in nodes)
    table = np.zeros((u.max() + 1, v.max() + 1))
    np.add.at(table, (u, v), 1)
    hu, hv = _entropy(table.sum(axis=1)), _entropy(table.sum(axis=0))
    if hu == 0 and hv == 0:
        return 1.0
    p = table / table.sum()
    outer = np.outer(p.sum(axis=1), p.sum(axis=0))
    mask = p > 0
    mutual = float((p[mask] * np.log(p[mask] / outer[mask])).sum())
    return mutual / ((hu + hv) / 2) if hu + hv > 0 else 0.0


def modularity(edges: Iterable[Edge], community: Mapping[str, Hashable]) -> float:
    """Newman modularity of an undirected weighted graph (each edge listed once); a node
    ``community`` lacks is a singleton."""
    inside: dict[Hashable, float] = defaultdict(float)
    degree: dict[Hashable, float] = defaultdict(float)
    total = 0.0
    for a, b, w in edges:
        ca, cb = community.get(a, ("singleton", a)), community.get(b, ("singleton", b))
        total += w
        degree[ca] += w
        degree[cb] += w
        if ca == cb:
            inside[ca] += w
    if total == 0:
        return 0.0
    return sum(inside[c] / total - (degree[c] / (2 * total)) ** 2 for c in degree)
