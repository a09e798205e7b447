"""The EvidenceBundle every retrieval returns (knowledge-graph-spec.txt, knowledge-substrate.txt).

"EvidenceBundle (snapshot_version, ontology_version, seed, hops[], conflicts[], truncated)",
with "Aggregate confidence and per-hop confidence". Deterministic replay: "the same query
against the same versions must return the same bundle" — so ``to_dict`` sorts everything
(seeds by ceid, hops by hop/source/edge/target/evidence, conflicts by subject/predicate,
values by value), drops exact duplicates, and ``to_json`` writes canonical JSON (sorted keys,
no spaces), byte-identical for equal inputs in any order.

Choices:
* ``seed`` is always a list: a question can name several entities (hybrid seeding gives up to
  ``top_k`` seeds); one shape is easier on clients than "object or list".
* In a hop, ``source``/``target`` are the edge's end nodes (ceids, or a literal value for
  an attribute hop); the connector that produced the edge — the relationship's ``source``
  property in ontology.yaml — is ``connector``.
* Every key is always present (null when unknown), ``truncated`` and ``conflicts`` included.
* Aggregate confidence = the weakest path: a hop's path confidence is the product of the edge
  confidences from a seed to it (the best path when several reach its start); the bundle's is
  the minimum over its hops — every hop in it is at least that well supported. ``None``
  when there are no hops.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from substrate import jsonwire


class _Dictable(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def _canonical(obj: _Dictable) -> str:
    return jsonwire.canonical(obj.to_dict()).decode()


def _hop_key(h: Hop) -> tuple[int, str, str, str, str, str]:
    return (h.hop, h.source, h.edge, h.target, h.evidence_ref, h.canonical)


def _hop_head(h: Hop) -> tuple[int, str, str, str, str]:
    return (h.hop, h.source, h.edge, h.target, h.evidence_ref)


def _sorted_seeds(seeds: Iterable[SeedRef]) -> list[SeedRef]:
    """By ceid, then canonical JSON, which is made only when two seeds share a ceid."""
    out = sorted(seeds, key=lambda s: s.ceid)
    if any(a.ceid == b.ceid for a, b in zip(out, out[1:], strict=False)):
        out.sort(key=lambda s: (s.ceid, _canonical(s)))
    return out


def sorted_hops(hops: Iterable[Hop]) -> list[Hop]:
    """``hops`` in ``_hop_key`` order; the canonical JSON (the last key) is made only when
    two hops tie on everything before it (a hop's JSON per sort was most of a bundle's cost)."""
    out = sorted(hops, key=_hop_head)
    if any(_hop_head(a) == _hop_head(b) for a, b in zip(out, out[1:], strict=False)):
        out.sort(key=_hop_key)
    return out


@dataclass(frozen=True)
class SeedRef:
    ceid: str
    entity_type: str
    name: str = ""
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ceid": self.ceid, "entity_type": self.entity_type, "name": self.name,
                "score": self.score}


@dataclass(frozen=True)
class Hop:
    hop: int
    source: str
    edge: str
    target: str
    evidence_ref: str
    confidence: float
    connector: str = ""
    as_of: str | None = None

    def __post_init__(self) -> None:
        if not self.evidence_ref:
            raise ValueError(f"hop {self.source}-[{self.edge}]->{self.target} has no evidence_ref")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError("confidence must be in [0, 1]")
        if self.hop < 1:
            raise ValueError("hops are numbered from 1")

    @functools.cached_property
    def canonical(self) -> str:
        """Canonical JSON of the hop (the last sort key): made once, a bundle sorts often."""
        return _canonical(self)

    def to_dict(self) -> dict[str, Any]:
        return {"hop": self.hop, "edge": self.edge, "source": self.source, "target": self.target,
                "evidence_ref": self.evidence_ref, "confidence": self.confidence,
                "connector": self.connector, "as_of": self.as_of}


@dataclass(frozen=True)
class ConflictValue:
    value: str
    evidence_refs: tuple[str, ...] = ()
    confidence: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "evidence_refs": sorted(set(self.evidence_refs)),
                "confidence": self.confidence}


@dataclass(frozen=True)
class ConflictMarker:
    """Two or more values asserted for one single-valued (subject, predicate); every value is
    kept, and ``resolution`` says which the answer used when a strategy was chosen."""

    subject: str
    predicate: str
    values: tuple[ConflictValue, ...]
    # set when the request chose a strategy (conflict_resolution.py): strategy, kept, dropped
    resolution: tuple[str, tuple[str, ...], tuple[str, ...]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"subject": self.subject, "predicate": self.predicate, "conflict": True,
               "values": [v.to_dict() for v in
                          sorted(set(self.values), key=lambda v: (v.value, _canonical(v)))],
               "resolution": None}
        if self.resolution is not None:
            strategy, kept, dropped = self.resolution
            out["resolution"] = {"strategy": strategy, "kept": list(kept),
                                 "dropped": list(dropped)}
        return out


def path_confidences(seeds: tuple[SeedRef, ...], hops: tuple[Hop, ...]) -> dict[Hop, float]:
    """Per hop: product of edge confidences along the best path from a seed to it.

    A hop whose start is neither a seed nor reached by an earlier hop counts from itself.
    """
    reach: dict[str, float] = {s.ceid: 1.0 for s in seeds}
    out: dict[Hop, float] = {}
    for level in sorted({h.hop for h in hops}):
        found: dict[str, float] = {}
        for h in sorted_hops(x for x in hops if x.hop == level):
            out[h] = reach.get(h.source, 1.0) * h.confidence
            found[h.target] = max(found.get(h.target, 0.0), out[h])
        for target, conf in found.items():
            reach[target] = max(reach.get(target, 0.0), conf)
    return out


def weakest_path(seeds: tuple[SeedRef, ...], ordered: list[Hop]) -> float | None:
    """The smallest of ``path_confidences`` (rounded), from distinct hops in ``sorted_hops``
    order (by hop number first): one pass, no hop hashed. None without hops."""
    reach: dict[str, float] = {s.ceid: 1.0 for s in seeds}
    found: dict[str, float] = {}
    level, weakest = None, None
    for h in ordered:
        if h.hop != level:  # a new level reaches from everything the earlier ones reached
            for target, conf in found.items():
                reach[target] = max(reach.get(target, 0.0), conf)
            found, level = {}, h.hop
        conf = reach.get(h.source, 1.0) * h.confidence
        found[h.target] = max(found.get(h.target, 0.0), conf)
        weakest = conf if weakest is None else min(weakest, conf)
    return None if weakest is None else round(weakest, 6)


@dataclass(frozen=True)
class EvidenceBundle:
    snapshot_version: int | str
    ontology_version: str
    seeds: tuple[SeedRef, ...]
    hops: tuple[Hop, ...] = ()
    conflicts: tuple[ConflictMarker, ...] = ()
    truncated: bool = False

    @property
    def aggregate_confidence(self) -> float | None:
        return weakest_path(self.seeds, sorted_hops(set(self.hops)))

    def to_dict(self) -> dict[str, Any]:
        hops = sorted_hops(set(self.hops))
        return {
            "snapshot_version": self.snapshot_version,
            "ontology_version": self.ontology_version,
            "seed": [s.to_dict() for s in _sorted_seeds(set(self.seeds))],
            "hops": [h.to_dict() for h in hops],
            "conflicts": [c.to_dict() for c in sorted(
                set(self.conflicts), key=lambda c: (c.subject, c.predicate, _canonical(c)))],
            "truncated": self.truncated,
            "confidence": weakest_path(self.seeds, hops),
        }

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, no insignificant spaces, UTF-8 kept, NaN refused."""
        return _canonical_json(self.to_dict())

    def content_hash(self) -> str:
        """sha256 of ``to_json`` — equal for a replay against the same snapshot."""
        return _digest(self.to_dict())

    def to_dict_with_hash(self) -> dict[str, Any]:
        """``to_dict`` with ``bundle_hash`` (= ``content_hash``), the dict made once."""
        out = self.to_dict()
        return {**out, "bundle_hash": _digest(out)}


def _canonical_json(data: dict[str, Any]) -> str:
    return jsonwire.canonical(data).decode()


def _digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(jsonwire.canonical(data)).hexdigest()
