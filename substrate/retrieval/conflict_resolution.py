"""Conflict resolution in context fusion (graphrag-orchestrator-architecture.md, ContextFusion:
"Conflict Resolution: Strategies: highest_confidence, newest, merge").

A conflict is two or more values asserted for one single-valued (subject, predicate) — e.g. two
``PRIMARY_OWNER`` teams of one service (``single_valued`` in ontology.yaml names which end is
the subject). The strategy is chosen per request:

* ``none`` (default) — nothing is resolved; every value stays in the answer's evidence and the
  bundle lists the conflict (knowledge-substrate.txt: "conflicts surface, never silenced").
* ``highest_confidence`` — the value whose best claim has the highest edge confidence wins;
  ties go to the newest claim, then to the smaller value (deterministic).
* ``newest`` — the value whose claim began at the latest snapshot version wins; ties go to
  the higher confidence, then to the smaller value.
* ``merge`` — every value is kept as one merged statement (all owners, say), and the bundle
  says the values were merged rather than chosen.

Whatever the strategy, the losing statements are never dropped from the record: the bundle's
``conflicts`` keep every value with its evidence, plus ``resolution`` naming the strategy, the
kept and the dropped values. Only the answer is composed from the kept values.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from substrate.errors import BadRequest
from substrate.graph.ontology import Ontology
from substrate.retrieval.context import StrategyResult

STRATEGIES = ("none", "highest_confidence", "newest", "merge")


@dataclass(frozen=True)
class Claim:
    value: str
    evidence_ref: str
    confidence: float
    version: int


@dataclass(frozen=True)
class Resolution:
    subject: str
    predicate: str
    strategy: str
    kept: tuple[str, ...]
    dropped: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "kept": list(self.kept), "dropped": list(self.dropped)}


def check_strategy(name: Any) -> str:
    if name not in STRATEGIES:
        raise BadRequest("unknown conflict_strategy", {"conflict_strategy": name,
                                                       "allowed": list(STRATEGIES)})
    return str(name)


def _subject_value(ontology: Ontology, hop: dict[str, Any]) -> tuple[str, str] | None:
    side = ontology.single_valued_side(hop["type"])
    if side is None:
        return None
    return (hop["to"], hop["from"]) if side == "target" else (hop["from"], hop["to"])


def claims(results: dict[str, StrategyResult], ontology: Ontology
           ) -> dict[tuple[str, str], list[Claim]]:
    """Single-valued claims grouped by (subject, predicate), only where values disagree."""
    groups: dict[tuple[str, str], list[Claim]] = defaultdict(list)
    for result in results.values():
        for hop in result.hops:
            sv = _subject_value(ontology, hop)
            if sv is not None:
                groups[(sv[0], hop["type"])].append(Claim(
                    sv[1], hop["evidence_ref"], float(hop["confidence"]),
                    int(hop.get("valid_from_v") or 0)))
    return {k: v for k, v in groups.items() if len({c.value for c in v}) > 1}


def _winner(found: list[Claim], strategy: str) -> str:
    best: dict[str, tuple[float, int]] = {}
    for c in found:
        conf, version = best.get(c.value, (0.0, 0))
        best[c.value] = (max(conf, c.confidence), max(version, c.version))
    if strategy == "highest_confidence":
        ranked = sorted(best, key=lambda v: (-best[v][0], -best[v][1], v))
    else:  # newest
        ranked = sorted(best, key=lambda v: (-best[v][1], -best[v][0], v))
    return ranked[0]


def resolve(results: dict[str, StrategyResult], ontology: Ontology, strategy: str
            ) -> tuple[dict[str, StrategyResult], dict[tuple[str, str], Resolution]]:
    """The results with the losing hops removed, and a resolution per conflict."""
    check_strategy(strategy)
    if strategy == "none":
        return results, {}
    resolutions: dict[tuple[str, str], Resolution] = {}
    for (subject, predicate), found in sorted(claims(results, ontology).items()):
        values = sorted({c.value for c in found})
        if strategy == "merge":
            resolutions[(subject, predicate)] = Resolution(subject, predicate, strategy,
                                                           tuple(values), ())
            continue
        winner = _winner(found, strategy)
        resolutions[(subject, predicate)] = Resolution(
            subject, predicate, strategy, (winner,), tuple(v for v in values if v != winner))
    losers = {(s, p, v) for (s, p), r in resolutions.items() for v in r.dropped}
    if not losers:
        return results, resolutions

    def keep(hop: dict[str, Any]) -> bool:
        sv = _subject_value(ontology, hop)
        return sv is None or (sv[0], hop["type"], sv[1]) not in losers

    filtered = {name: replace(r, hops=[h for h in r.hops if keep(h)],
                              facts=[_without_losers(f, keep) for f in r.facts])
                for name, r in results.items()}
    return filtered, resolutions


def _without_losers(fact: dict[str, Any], keep: Callable[[dict[str, Any]], bool]
                    ) -> dict[str, Any]:
    """An ownership fact (``owners`` with their ``claims``) without the losing claims."""
    if not isinstance(fact.get("owners"), list):
        return fact
    owners = []
    for owner in fact["owners"]:
        claims_kept = [c for c in owner["claims"] if keep(c)]
        if claims_kept:
            owners.append({**owner, "claims": claims_kept})
    conflicts = [c for c in fact.get("conflicts", []) if keep(c)]
    return {**fact, "owners": owners, "conflicts": conflicts}
