"""EvidenceBundle and confidence block from the strategies' hops (RSN-11, bundle spec)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from substrate.graph.ontology import load_ontology
from substrate.retrieval.bundle import ConflictMarker, ConflictValue, EvidenceBundle, Hop, SeedRef
from substrate.retrieval.confidence import Support, confidence_block, evidence_document
from substrate.retrieval.context import SearchContext, StrategyResult

GRAPH_STRATEGIES = ("dependencies", "callers", "owns_traversal", "memory", "local_graphrag",
                    "attributes", "epic_impact", "temporal", "risks", "intent", "nl_cypher",
                    "system_overview", "decision_recent")


def _hops(results: dict[str, StrategyResult]) -> list[Hop]:
    hops = []
    for name in GRAPH_STRATEGIES:
        for h in results[name].hops if name in results else []:
            hops.append(Hop(hop=int(h.get("hop", 1)), source=h["from"], edge=h["type"],
                            target=h["to"], evidence_ref=h["evidence_ref"],
                            confidence=float(h["confidence"]), connector=str(h["source"] or "")))
    return hops


def _conflicts(results: dict[str, StrategyResult], fused_conflicts: Any,
               resolutions: dict[tuple[str, str], Any] | None = None) -> list[ConflictMarker]:
    """Single-valued edges that disagree among the hops read at this snapshot (computed from
    the version-scoped hops, so a pinned read never sees a conflict that arose later), with
    the request's resolution of each when it chose a strategy."""
    ontology = load_ontology()
    groups: dict[tuple[str, str], set[ConflictValue]] = defaultdict(set)
    for r in results.values():
        for h in r.hops:
            side = ontology.single_valued_side(h["type"])
            if side is None:
                continue
            subject, value = (h["to"], h["from"]) if side == "target" else (h["from"], h["to"])
            groups[(subject, h["type"])].add(
                ConflictValue(value, (h["evidence_ref"],), float(h["confidence"])))
    resolutions = resolutions or {}

    def resolution(key: tuple[str, str]) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
        r = resolutions.get(key)
        return None if r is None else (r.strategy, r.kept, r.dropped)

    markers = [ConflictMarker(s, p, tuple(v), resolution((s, p))) for (s, p), v in groups.items()
               if len({x.value for x in v}) > 1]
    seen = {(m.subject, m.predicate) for m in markers}
    return markers + [c for c in fused_conflicts if (c.subject, c.predicate) not in seen]


def build_bundle(ctx: SearchContext, results: dict[str, StrategyResult],
                 context: Any, asserted: dict[str, StrategyResult] | None = None,
                 resolutions: dict[tuple[str, str], Any] | None = None) -> dict[str, Any]:
    """``results``: the hops the answer used; ``asserted``: every hop read (before conflict
    resolution dropped the losing ones), from which the conflicts are listed."""
    seeds = tuple(SeedRef(s["ceid"], s["label"], s.get("name") or "") for s in ctx.seeds)
    graph_truncated = any(results[n].truncated for n in GRAPH_STRATEGIES if n in results)
    bundle = EvidenceBundle(
        snapshot_version=ctx.scope.version, ontology_version=_ontology_version(),
        seeds=seeds, hops=tuple(_hops(results)),
        conflicts=tuple(_conflicts(asserted or results, context.conflicts, resolutions)),
        truncated=graph_truncated or bool(context.truncated)
        or any(r.truncated for r in results.values()),
    )
    return bundle.to_dict_with_hash()


def build_confidence(ctx: SearchContext, results: dict[str, StrategyResult],
                     plan: list[str], degraded: bool) -> dict[str, Any]:
    support = [
        Support(node=h.target, confidence=h.confidence, source=h.connector,
                document=evidence_document(h.evidence_ref))
        for h in _hops(results)
    ]
    used = [n for n in plan if n in results] + ["rrf_fusion"]
    return confidence_block(support, used, degraded=degraded).to_dict()


def _ontology_version() -> str:
    from substrate.graph.ontology import load_ontology

    return load_ontology().version


def direct_evidence(version: int, seeds: list[dict[str, Any]], hops: list[dict[str, Any]],
                    truncated: bool, strategy: str) -> dict[str, Any]:
    """Bundle + confidence for a direct endpoint (one strategy, explicit hops)."""
    result = StrategyResult(strategy, hops=hops, truncated=truncated)
    seed_refs = tuple(SeedRef(s["ceid"], s.get("label") or "", s.get("name") or "")
                      for s in seeds)
    hop_objs = _hops({"local_graphrag": result})
    bundle = EvidenceBundle(version, _ontology_version(), seed_refs, tuple(hop_objs),
                            tuple(_conflicts({strategy: result}, ())), truncated)
    support = [Support(node=h.target, confidence=h.confidence, source=h.connector,
                       document=evidence_document(h.evidence_ref)) for h in hop_objs]
    return {"evidence_bundle": bundle.to_dict_with_hash(),
            "confidence": confidence_block(support, [strategy]).to_dict()}
