"""The structural metrics every risk is derived from, computed by GDS once per snapshot and
stored (``gds_node_metrics``) so that requests read them instead of running GDS:

* on the directed projection of the dependency edges (dependent -> dependency): PageRank,
  betweenness (how many shortest dependency paths pass through the node; estimated from
  sampled sources above ``EXACT_BETWEENNESS_MAX_NODES``), in-degree and the
  strongly connected components (a component of two or more nodes is a dependency cycle);
* on the undirected projection: weakly connected components and articulation points (a node
  whose loss splits its component: a single point of failure in the topology).

Every algorithm is estimated first (``gds_jobs.guard.check_memory``); both projections are
dropped when the run ends, whatever happens.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import psycopg
from graphdatascience import Graph

from gds_jobs.guard import ProgressFn, check_memory, heap_free, no_progress
from gds_jobs.pagerank import DAMPING, DIGITS
from gds_jobs.projection import DEPENDENCY_TYPES, present, projected
from gds_jobs.runtime import JobContext
from substrate.retrieval.scope import ReadScope

METRIC_LABELS = ("Service", "Infrastructure")
EXACT_BETWEENNESS_MAX_NODES = 20_000
BETWEENNESS_SOURCES = 1_000
BETWEENNESS_SEED = 42
MAX_LISTED_MEMBERS = 50  # members of a dependency cycle a metrics row lists


@dataclass(frozen=True)
class NodeMetrics:
    ceid: str
    name: str
    label: str
    pagerank: float
    betweenness: float
    in_degree: int
    wcc: int
    scc: int
    scc_size: int
    articulation: bool
    cycle_members: frozenset[str] = frozenset()  # the SCC's members when it is a cycle
    betweenness_sources: int | None = None  # None: exact; else estimated from this many

    def to_dict(self) -> dict[str, Any]:
        """The metrics; a cycle's members listed up to ``MAX_LISTED_MEMBERS`` (its size is
        ``scc_size``): a giant component listed for each of its members was quadratic."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["cycle_members"] = heapq.nsmallest(MAX_LISTED_MEMBERS, self.cycle_members)
        return out


def betweenness_sampling(nodes: int) -> tuple[int | None, int | None]:
    """Exact betweenness (Brandes: a shortest-path search from every node) up to
    ``EXACT_BETWEENNESS_MAX_NODES``; above, estimated from ``BETWEENNESS_SOURCES`` source
    nodes drawn with a fixed seed (the same ranking on every run): exact took ~35 min at 2M
    edges (~105k services and infrastructure) on 2 cores, 1,000 sources about 1/100 of it."""
    if nodes <= EXACT_BETWEENNESS_MAX_NODES:
        return None, None
    return BETWEENNESS_SOURCES, BETWEENNESS_SEED


def _guarded(ctx: JobContext, progress: ProgressFn, name: str,
             estimate: Callable[[], Any], run: Callable[[], Any]) -> None:
    free = heap_free(ctx.gds.run_cypher, ctx.cypher.text("gds/heap"))
    check_memory(int(estimate().bytes_max), free, name, progress)
    run()
    progress(name)


def _stream(ctx: JobContext, graph: Graph, props: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for label in present(METRIC_LABELS, graph.node_labels()):
        frame = ctx.gds.graph.node_properties.stream(graph, props, node_labels=[label],
                                                     db_node_properties=["ceid", "name"])
        for _, row in frame.iterrows():
            out[str(row["ceid"])] = {"name": str(row["name"]), "label": label,
                                     **{p: row[p] for p in props}}
    return out


def _directed(ctx: JobContext, scope: ReadScope, progress: ProgressFn
              ) -> tuple[dict[str, Any], int | None]:
    """The directed metrics by ceid, and the sampled sources betweenness was estimated from
    (None: exact)."""
    with projected(ctx, scope, job="centrality", undirected=False, labels=METRIC_LABELS,
                   types=DEPENDENCY_TYPES, runs_on_only=True) as g:
        progress("projected (directed)", nodes=g.node_count(),
                 relationships=g.relationship_count())
        t = present(DEPENDENCY_TYPES, g.relationship_types())
        algo = ctx.gds
        _guarded(ctx, progress, "pagerank",
                 lambda: algo.page_rank.estimate(g, relationship_types=t),
                 lambda: algo.page_rank.mutate(g, "pagerank", damping_factor=DAMPING,
                                               relationship_weight_property="weight",
                                               relationship_types=t))
        size, seed = betweenness_sampling(g.node_count())
        if size is not None:
            progress("betweenness sampled", sources=size, nodes=g.node_count())
        _guarded(ctx, progress, "betweenness",
                 lambda: algo.betweenness.estimate(g, relationship_types=t, sampling_size=size,
                                                   sampling_seed=seed),
                 lambda: algo.betweenness.mutate(g, "betweenness", relationship_types=t,
                                                 sampling_size=size, sampling_seed=seed))
        _guarded(ctx, progress, "in-degree",
                 lambda: algo.degree.estimate(g, relationship_types=t),
                 lambda: algo.degree.mutate(g, "inDegree", orientation="REVERSE",
                                            relationship_types=t))
        _guarded(ctx, progress, "scc", lambda: algo.scc.estimate(g, relationship_types=t),
                 lambda: algo.scc.mutate(g, "scc", relationship_types=t))
        return _stream(ctx, g, ["pagerank", "betweenness", "inDegree", "scc"]), size


def _undirected(ctx: JobContext, scope: ReadScope, progress: ProgressFn) -> dict[str, Any]:
    with projected(ctx, scope, job="articulation", undirected=True, labels=METRIC_LABELS,
                   types=DEPENDENCY_TYPES, runs_on_only=True) as g:
        t = present(DEPENDENCY_TYPES, g.relationship_types())
        algo = ctx.gds
        _guarded(ctx, progress, "wcc", lambda: algo.wcc.estimate(g, relationship_types=t),
                 lambda: algo.wcc.mutate(g, "wcc", relationship_types=t))
        if not g.relationship_count():  # GDS 2.13 fails on a graph of no relationship
            # (ArrayIndexOutOfBounds): with none, no node disconnects anything
            return {c: {**m, "articulation": 0} for c, m in _stream(ctx, g, ["wcc"]).items()}
        _guarded(ctx, progress, "articulation points",
                 lambda: algo.articulation_points.estimate(g, relationship_types=t),
                 lambda: algo.articulation_points.mutate(g, "articulation",
                                                         relationship_types=t))
        return _stream(ctx, g, ["wcc", "articulation"])


def compute_metrics(ctx: JobContext, scope: ReadScope,
                    progress: ProgressFn = no_progress) -> list[NodeMetrics]:
    """Every live Service and Infrastructure node's metrics at the scope."""
    directed, sources = _directed(ctx, scope, progress)
    undirected = _undirected(ctx, scope, progress)
    sizes = Counter(int(d["scc"]) for d in directed.values())
    members: dict[int, set[str]] = defaultdict(set)
    for ceid, d in directed.items():
        if sizes[int(d["scc"])] > 1:
            members[int(d["scc"])].add(ceid)
    # one set per cycle, shared by its members (a set per member was quadratic: at L one
    # strongly connected component held most of the 105k nodes)
    cycles = {scc: frozenset(m) for scc, m in members.items()}
    out = [NodeMetrics(ceid, d["name"], d["label"], round(float(d["pagerank"]), DIGITS),
                       round(float(d["betweenness"]), DIGITS), int(d["inDegree"]),
                       int(undirected[ceid]["wcc"]), int(d["scc"]), sizes[int(d["scc"])],
                       bool(int(undirected[ceid]["articulation"])),
                       cycles.get(int(d["scc"]), frozenset()), sources)
           for ceid, d in directed.items() if ceid in undirected]
    return sorted(out, key=lambda m: m.ceid)


def store_metrics(ctx: JobContext, scope: ReadScope, metrics: Sequence[NodeMetrics]) -> int:
    level = scope.clearance[-1]
    rows = [(scope.tenant, level, scope.version, m.ceid, m.name, m.label, m.pagerank,
             m.betweenness, m.in_degree, m.wcc, m.scc, m.scc_size, m.articulation,
             m.betweenness_sources)
            for m in metrics]
    with psycopg.connect(ctx.settings.postgres_dsn) as conn, conn.transaction(), \
            conn.cursor() as cur:
        cur.execute("DELETE FROM gds_node_metrics WHERE tenant_id = %s AND clearance = %s "
                    "AND snapshot_version = %s", (scope.tenant, level, scope.version))
        cur.executemany(
            "INSERT INTO gds_node_metrics (tenant_id, clearance, snapshot_version, ceid, name, "
            "label, pagerank, betweenness, in_degree, wcc, scc, scc_size, articulation, "
            "betweenness_sources) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
    return len(rows)


def run_centrality(ctx: JobContext, scope: ReadScope,
                   progress: ProgressFn = no_progress) -> list[NodeMetrics]:
    metrics = compute_metrics(ctx, scope, progress)
    store_metrics(ctx, scope, metrics)
    progress("stored", clearance=scope.clearance[-1], nodes=len(metrics))
    return metrics
