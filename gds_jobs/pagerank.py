"""PageRank and in-degree per Service (or any structural label) as of a snapshot version.

Both run on the directed projection over the dependency types only (CALLS, DEPENDS_ON,
IMPORTS and HOSTS turned round), so rank flows from dependents to what they depend on: a high
score means much of the system leans on the node, directly or transitively.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from graphdatascience import Graph

from gds_jobs.projection import DEPENDENCY_TYPES, present, projected
from gds_jobs.runtime import JobContext
from substrate.retrieval.scope import ReadScope

DAMPING = 0.85
# what depends on what: teams and developers (OWNS) take no part in the ranking
RANKED_LABELS = ("Service", "Infrastructure", "Module", "Repository")
DIGITS = 6  # scores are rounded so reruns at the same snapshot give the same rows


@dataclass(frozen=True)
class NodeRank:
    ceid: str
    name: str
    label: str
    pagerank: float
    in_degree: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ranks(ctx: JobContext, graph: Graph, labels: list[str]) -> list[NodeRank]:
    # an empty type list means "no relationships" to GDS: every node keeps the teleport score
    types = present(DEPENDENCY_TYPES, graph.relationship_types())
    ctx.gds.page_rank.mutate(graph, "pagerank", damping_factor=DAMPING,
                             relationship_types=types, relationship_weight_property="weight")
    ctx.gds.degree.mutate(graph, "inDegree", orientation="REVERSE", relationship_types=types)
    ranks = []
    for label in labels:  # one stream per label: the label column of the client warns
        frame = ctx.gds.graph.node_properties.stream(
            graph, ["pagerank", "inDegree"], node_labels=[label],
            db_node_properties=["ceid", "name"],
        )
        ranks += [
            NodeRank(str(row["ceid"]), str(row["name"]), label,
                     round(float(row["pagerank"]), DIGITS), int(row["inDegree"]))
            for _, row in frame.iterrows()
        ]
    return ranks


def rank_nodes(ctx: JobContext, scope: ReadScope,
               labels: Sequence[str] = ("Service",)) -> list[NodeRank]:
    """PageRank and in-degree of every node with one of ``labels``, highest rank first."""
    with projected(ctx, scope, job="pagerank", undirected=False, labels=RANKED_LABELS,
                   types=DEPENDENCY_TYPES, runs_on_only=True) as graph:
        wanted = present(labels, graph.node_labels())
        ranks = _ranks(ctx, graph, wanted) if wanted else []
    return sorted(ranks, key=lambda r: (-r.pagerank, -r.in_degree, r.ceid))


def service_ranks(ctx: JobContext, scope: ReadScope) -> list[NodeRank]:
    return rank_nodes(ctx, scope, ("Service",))
