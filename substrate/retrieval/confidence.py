"""The RSN-11 confidence block carried by every response.

The spec fixes the shape and two rules, and gives no formula for ``confidence``::

    {"confidence": 0.84, "evidence_nodes": ["ServiceNode:PaymentService", ...],
     "source_density": 3, "retrieval_strategies_used": ["local_graphrag", "hyDE", ...],
     "low_confidence_warning": false}

* "source_density is the count of independent source documents (graph nodes from different
  connectors) that support the answer" — independence is decided per piece of evidence by the
  connector that produced it; evidence without a connector is keyed by its source document
  (``evidence_document``), and failing that by its node. Two edges from the same connector
  are one source.
* "source_density >= 3 is considered well-supported. Responses with source_density = 1 carry
  a visible low-confidence warning." A response with no support at all (0) warns as well;
  so does one the caller marks ``degraded`` (e.g. the NL→Cypher fallback of RSN-01/02).

Confidence (our formula, since the spec has none): a path's confidence is the product of its
edge confidences (``path_confidence``); within one independent source the best path counts
(repeats from one source do not corroborate); across sources evidence combines by noisy-or,
``1 - Π_s (1 - c_s)``, so independent agreement raises confidence and a single source gives
exactly its own. Rounded to 3 places.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

WELL_SUPPORTED_DENSITY = 3
_COMMIT = re.compile(r"@[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class Support:
    """One piece of evidence behind an answer.

    ``node`` is how the block names it (``"Service:checkout"``, ``"DecisionNode:ADR-047"``);
    ``confidence`` is its path confidence; ``source`` the connector; ``document`` the source
    document (``evidence_document(edge.evidence_ref)``).
    """

    node: str
    confidence: float
    source: str = ""
    document: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError("confidence must be in [0, 1]")

    def independence_key(self) -> str:
        if self.source:
            return f"source:{self.source}"
        return f"document:{self.document}" if self.document else f"node:{self.node}"


@dataclass(frozen=True)
class ConfidenceBlock:
    confidence: float
    evidence_nodes: tuple[str, ...]
    source_density: int
    retrieval_strategies_used: tuple[str, ...]
    low_confidence_warning: bool

    @property
    def well_supported(self) -> bool:
        return self.source_density >= WELL_SUPPORTED_DENSITY

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "evidence_nodes": list(self.evidence_nodes),
            "source_density": self.source_density,
            "retrieval_strategies_used": list(self.retrieval_strategies_used),
            "low_confidence_warning": self.low_confidence_warning,
        }


def path_confidence(edge_confidences: Iterable[float]) -> float:
    """Product of the edge confidences along a path (1.0 for the empty path: the seed)."""
    values = list(edge_confidences)
    if any(not 0.0 <= c <= 1.0 for c in values):
        raise ValueError("edge confidences must be in [0, 1]")
    return math.prod(values)


def evidence_document(evidence_ref: str) -> str:
    """``docker-compose.yml#L12@3f2a9c1`` -> ``docker-compose.yml``: the ref without the
    fragment (``#...``) and without a trailing ``@<commit>``."""
    return _COMMIT.sub("", evidence_ref.split("#", 1)[0])


def source_density(support: Iterable[Support]) -> int:
    return len({s.independence_key() for s in support})


def combined_confidence(support: Iterable[Support]) -> float:
    """Noisy-or over independent sources of each source's best evidence; 0.0 with none."""
    best: dict[str, float] = {}
    for s in support:
        key = s.independence_key()
        best[key] = max(best.get(key, 0.0), s.confidence)
    return 1.0 - math.prod(1.0 - c for _, c in sorted(best.items()))


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def confidence_block(
    support: Sequence[Support], strategies: Sequence[str], *, degraded: bool = False
) -> ConfidenceBlock:
    """The RSN-11 block. ``evidence_nodes`` and strategies keep first-seen order, no repeats."""
    density = source_density(support)
    return ConfidenceBlock(
        confidence=round(combined_confidence(support), 3),
        evidence_nodes=_unique(s.node for s in support),
        source_density=density,
        retrieval_strategies_used=_unique(strategies),
        low_confidence_warning=degraded or density <= 1,
    )
