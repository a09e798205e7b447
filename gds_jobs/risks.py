"""Architectural risk ranking as of a snapshot version (RSN-UC-04 "top architectural risks").

Every live Service and Infrastructure node is scored by adding up factors, each with its
value, its contribution to the score, and the edges (with their ``evidence_ref``) behind it:

* ``pagerank`` — how much of the system leans on it, directly or transitively (PageRank over
  the dependency edges above the score of a node nobody uses, relative to the tenant's
  highest);
* ``dependents`` — fan-in: distinct entities that call, import, depend on or are hosted by it
  (divided by the tenant's highest);
* ``incidents`` — FailurePatterns CAUSED_BY it (0.5 each) or that AFFECTED it (0.25 each);
* ``ownership`` — a Service with no live OWNS/PRIMARY_OWNER edge, or with PRIMARY_OWNER edges
  from more than one owner;
* ``single_point_of_failure`` — Infrastructure with at least ``SPOF_MIN_DEPENDENTS`` dependents;
* ``betweenness`` — the share of shortest dependency paths through the node (relative to the
  tenant's highest): what many flows pass through;
* ``articulation_point`` — its loss splits the dependency graph (GDS articulation points);
* ``dependency_cycle`` — it sits in a strongly connected component of two or more nodes, with
  the edges of the cycle as evidence;
* ``stale_adr`` — a Service explained (WHY) by an ADR that is superseded, deprecated or
  rejected with no accepted successor explaining it;
* ``incidents`` is the incident density: incidents per entity, caused counting double.

The metrics come from ``gds_jobs.centrality`` (stored per snapshot in ``gds_node_metrics``);
the weights are constants below so that a ranking can be explained and reproduced.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gds_jobs.centrality import NodeMetrics, run_centrality
from gds_jobs.guard import ProgressFn, no_progress
from gds_jobs.pagerank import DAMPING, NodeRank
from gds_jobs.runtime import JobContext
from gds_jobs.summaries import Facts, fan_in
from substrate.errors import BadRequest
from substrate.retrieval.scope import ReadScope

PAGERANK_WEIGHT = 1.0
DEPENDENTS_WEIGHT = 0.5
CAUSED_WEIGHT = 0.5
AFFECTED_WEIGHT = 0.25
INCIDENTS_CAP = 1.0
UNOWNED_WEIGHT = 1.0
CONFLICTING_OWNER_WEIGHT = 0.5
SPOF_WEIGHT = 1.0
SPOF_MIN_DEPENDENTS = 3
BETWEENNESS_WEIGHT = 0.5
ARTICULATION_WEIGHT = 0.5
CYCLE_WEIGHT = 0.5
STALE_ADR_WEIGHT = 0.25
STALE_ADR_CAP = 0.5
DEFAULT_LIMIT = 10
FACT_CHUNK = 2_000  # entities per read of their facts (a transaction holds one chunk)
MAX_EVIDENCE = 25
MAX_CYCLE_NAMES = 20  # members a dependency cycle's note names (then: and N more)


@dataclass(frozen=True)
class RiskFactor:
    factor: str
    value: Any
    contribution: float
    note: str
    evidence: list[dict[str, Any]] = field(default_factory=list)  # first MAX_EVIDENCE edges
    evidence_total: int = 0  # how many edges back the factor (more than shown = truncated)

    @property
    def truncated(self) -> bool:
        return self.evidence_total > len(self.evidence)


@dataclass(frozen=True)
class RiskItem:
    ceid: str
    name: str
    label: str
    score: float
    factors: list[RiskFactor]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for f, d in zip(self.factors, out["factors"], strict=True):
            d["truncated"] = f.truncated
        return out


@dataclass(frozen=True)
class Maxima:
    pagerank: float
    dependents: int
    betweenness: float = 0.0


def _hops(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return sorted((dict(r["hop"]) for r in rows),
                  key=lambda h: (h["type"], h["from"], h["to"], h["evidence_ref"] or ""))


def _centrality(facts: Facts, rank: NodeRank | None, top: Maxima) -> list[RiskFactor]:
    out, n, base = [], fan_in(facts), 1.0 - DAMPING  # base: the score of a node nobody uses
    if rank is not None and rank.pagerank > base and top.pagerank > base:
        out.append(RiskFactor("pagerank", rank.pagerank,
                              PAGERANK_WEIGHT * (rank.pagerank - base) / (top.pagerank - base),
                              f"PageRank {rank.pagerank:.4f} of a tenant highest "
                              f"{top.pagerank:.4f}", _hops(facts["dependents"])))
    if n and top.dependents:
        out.append(RiskFactor("dependents", n, DEPENDENTS_WEIGHT * n / top.dependents,
                              f"{n} distinct dependents", _hops(facts["dependents"])))
    if facts["member"]["label"] == "Infrastructure" and n >= SPOF_MIN_DEPENDENTS:
        out.append(RiskFactor("single_point_of_failure", n, SPOF_WEIGHT,
                              f"infrastructure with {n} dependents (>= {SPOF_MIN_DEPENDENTS})",
                              _hops(facts["dependents"])))
    return out


def _incidents(facts: Facts) -> list[RiskFactor]:
    by_type: dict[str, set[str]] = {"CAUSED_BY": set(), "AFFECTED": set()}
    for r in facts["incidents"]:
        by_type[r["hop"]["type"]].add(r["other"]["ceid"])
    caused, affected = len(by_type["CAUSED_BY"]), len(by_type["AFFECTED"] - by_type["CAUSED_BY"])
    if not caused and not affected:
        return []
    value = {"caused_by": caused, "affected": affected}
    share = min(INCIDENTS_CAP, CAUSED_WEIGHT * caused + AFFECTED_WEIGHT * affected)
    return [RiskFactor("incidents", value, share,
                       f"caused {caused} incident(s), affected by {affected} more",
                       _hops(facts["incidents"]))]


def _ownership(facts: Facts) -> list[RiskFactor]:
    if facts["member"]["label"] != "Service":
        return []
    owners = facts["owners"]
    if not owners:
        return [RiskFactor("ownership", 0, UNOWNED_WEIGHT,
                           "no live OWNS or PRIMARY_OWNER edge at this snapshot")]
    primary = [r for r in owners if r["hop"]["type"] == "PRIMARY_OWNER"]
    claimants = sorted({r["other"]["ceid"] for r in primary})
    if len(claimants) > 1:
        return [RiskFactor("ownership", len({r["other"]["ceid"] for r in owners}),
                           CONFLICTING_OWNER_WEIGHT,
                           f"conflicting PRIMARY_OWNER claims: {', '.join(claimants)}",
                           _hops(primary))]
    return []


def _estimated(metric: NodeMetrics) -> str:
    if metric.betweenness_sources is None:
        return ""
    return f" (estimated from {metric.betweenness_sources:,} sampled source nodes)"


def _structure(facts: Facts, metric: NodeMetrics | None, top: Maxima) -> list[RiskFactor]:
    if metric is None:
        return []
    out, ceid = [], facts["member"]["ceid"]
    if metric.betweenness > 0 and top.betweenness > 0:
        out.append(RiskFactor("betweenness", metric.betweenness,
                              BETWEENNESS_WEIGHT * metric.betweenness / top.betweenness,
                              f"betweenness {metric.betweenness:.1f} of a tenant highest "
                              f"{top.betweenness:.1f}" + _estimated(metric),
                              _hops([*facts["dependents"], *facts["depends_on"]])))
    if metric.articulation:
        out.append(RiskFactor("articulation_point", True, ARTICULATION_WEIGHT,
                              "an articulation point: removing it disconnects the dependency "
                              "graph", _hops([*facts["dependents"], *facts["depends_on"]])))
    if metric.scc_size > 1:
        cycle = [r for r in facts["depends_on"] if r["other"]["ceid"] in metric.cycle_members]
        # no copy of the member set per member (a giant cycle made that quadratic)
        others = len(metric.cycle_members) - (ceid in metric.cycle_members)
        named = [c for c in _first_members(metric.cycle_members) if c != ceid][:MAX_CYCLE_NAMES]
        more = f" and {others - len(named)} more" if others > len(named) else ""
        out.append(RiskFactor("dependency_cycle", metric.scc_size, CYCLE_WEIGHT,
                              f"in a dependency cycle of {metric.scc_size}: "
                              + ", ".join(named) + more, _hops(cycle)))
    return out


@functools.lru_cache(maxsize=4096)
def _first_members(members: frozenset[str]) -> list[str]:
    """A cycle's first members by id, once per cycle (its members share the set)."""
    return heapq.nsmallest(MAX_CYCLE_NAMES + 1, members)


def _stale(stale: Sequence[Mapping[str, Any]]) -> list[RiskFactor]:
    if not stale:
        return []
    names = ", ".join(f"{s['name']} ({s['status']})" for s in stale)
    return [RiskFactor("stale_adr", len(stale),
                       min(STALE_ADR_CAP, STALE_ADR_WEIGHT * len(stale)),
                       f"explained by ADRs no longer in force: {names}",
                       _hops(stale))]


def score(facts: Facts, rank: NodeRank | None, top: Maxima, metric: NodeMetrics | None = None,
          stale: Sequence[Mapping[str, Any]] = ()) -> RiskItem:
    """One entity's risk item from its facts (``gds/entity_facts``), its rank, its stored
    metrics and its stale ADRs (``gds/stale_adrs``)."""
    factors = [*_centrality(facts, rank, top), *_structure(facts, metric, top),
               *_incidents(facts), *_ownership(facts), *_stale(stale)]
    factors = [RiskFactor(f.factor, f.value, round(f.contribution, 4), f.note,
                          f.evidence[:MAX_EVIDENCE], len(f.evidence)) for f in factors]
    m = facts["member"]
    return RiskItem(m["ceid"], m["name"], m["label"],
                    round(sum(f.contribution for f in factors), 4), factors)


def _chunks(ctx: JobContext, template: str, scope: ReadScope,
            ceids: list[str]) -> Iterator[list[dict[str, Any]]]:
    """A per-entity template over ``ceids`` (sorted), ``FACT_CHUNK`` entities a read: at L
    (~105k services with ~680k dependency edges) one read of every entity's facts outgrew
    a transaction's memory, and holding them all took the job's process past 16 GB."""
    for i in range(0, len(ceids), FACT_CHUNK):
        yield ctx.rows(template, scope, ceids=ceids[i : i + FACT_CHUNK])


def rank_risks(ctx: JobContext, scope: ReadScope, limit: int = DEFAULT_LIMIT,
               progress: ProgressFn = no_progress) -> list[RiskItem]:
    """The ``limit`` riskiest Services and Infrastructure, highest score first (the GDS
    metrics are computed and stored on the way). When there is more than one chunk of
    facts, the tenant's largest fan-in (every score is relative to it) is counted first
    (``gds/max_fan_in``: counts only), then the facts are read a chunk at a time, each
    chunk scored and the best ``limit`` kept."""
    if limit < 1:
        raise BadRequest("limit must be at least 1", {"limit": limit})
    metrics = {m.ceid: m for m in run_centrality(ctx, scope, progress)}
    ranks = {c: NodeRank(m.ceid, m.name, m.label, m.pagerank, m.in_degree)
             for c, m in metrics.items()}
    ceids = sorted(ranks)
    stale = {r["ceid"]: r["stale"]
             for rows in _chunks(ctx, "gds/stale_adrs", scope, ceids) for r in rows}
    facts = "gds/entity_facts"
    single = list(_chunks(ctx, facts, scope, ceids)) if len(ceids) <= FACT_CHUNK else None
    if single is not None:
        most = max((fan_in(f) for rows in single for f in rows), default=0)
    else:  # counted, not read: reading every entity's facts twice took ~130 s at L
        most = max((int(rows[0]["most"]) for rows in _chunks(ctx, "gds/max_fan_in", scope,
                                                              ceids)), default=0)
    progress("facts read", entities=len(ceids), most_dependents=most)
    top = Maxima(max((r.pagerank for r in ranks.values()), default=0.0), most,
                 max((m.betweenness for m in metrics.values()), default=0.0))
    best: list[RiskItem] = []
    for rows in single or _chunks(ctx, facts, scope, ceids):
        items = [score(f, ranks.get(f["member"]["ceid"]), top, metrics.get(f["member"]["ceid"]),
                       stale.get(f["member"]["ceid"], ())) for f in rows]
        best = sorted([*best, *(i for i in items if i.score > 0)],
                      key=lambda i: (-i.score, i.ceid))[:limit]
    return best
