"""Leiden communities over Services and Infrastructure, with summaries stored for global
GraphRAG (RSN-14).

Leiden runs on the undirected projection of the dependency edges (CALLS, DEPENDS_ON, IMPORTS,
HOSTS) as of the snapshot, seeded and single-threaded so a rerun gives the same partition, after
a memory estimate (``gds_jobs.guard``). Levels follow the summary tree (hierarchical Leiden, the
intermediate communities as levels): level 1 holds the final (coarsest) communities — the
service domains of the RAPTOR tree — and level 2 the finest ones Leiden passed through on the
way — the module clusters — where they differ. Each node's pair (domain, module) is kept in
``community_state``, where an incremental re-run (``gds_jobs.incremental``) starts. Each
community of two or more members gets a deterministic extractive summary
(``gds_jobs.summaries``), embedded with the configured embedder. A community's id is a hash
of its members, so an unchanged cluster keeps its id.

Policy: summaries are built once per clearance level, each from the graph a reader at that
level sees (projection and facts are scoped), and stored with that level and the snapshot
version; a run replaces only the rows of its (tenant, level, snapshot) so a pinned read finds
the set of its snapshot. Each row also lists the jurisdictions of the entities it mentions
that are restricted to jurisdictions (``gds/jurisdictions``), for readers so restricted.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gds_jobs.guard import ProgressFn, check_memory, heap_free, no_progress
from gds_jobs.projection import DEPENDENCY_TYPES, present, projected
from gds_jobs.runtime import JobContext
from gds_jobs.summaries import Summary, build_summary
from substrate.embeddings import TextEmbedder
from substrate.errors import NotFound
from substrate.retrieval.scope import CLASSIFICATIONS, ReadScope, clearance_for
from substrate.settings import Settings

COMMUNITY_LABELS = ("Service", "Infrastructure")
MIN_MEMBERS = 2
RANDOM_SEED = 42
INDEX_NAME = "community_summaries"
COMMUNITY_TABLES = ("community_summaries", "raptor_nodes", "community_state")


@dataclass(frozen=True)
class Community:
    community_id: str
    level: int
    members: tuple[str, ...]  # ceids, sorted


@dataclass(frozen=True)
class StoredCommunity:
    community: Community
    summary: Summary
    clearance: str = "internal"  # the level it was built at (and is served to)
    # per mentioned entity restricted to jurisdictions: its jurisdictions
    jurisdictions: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"community_id": self.community.community_id, "level": self.community.level,
                "clearance": self.clearance, "title": self.summary.title,
                "summary": self.summary.text, "members": self.summary.members,
                "jurisdictions": self.jurisdictions}


def community_id(level: int, members: Sequence[str]) -> str:
    digest = hashlib.sha1("\n".join(sorted(members)).encode()).hexdigest()[:12]
    return f"L{level}-{digest}"


def _grouped(assignments: Mapping[str, Sequence[int]], i: int) -> frozenset[frozenset[str]]:
    groups: dict[int, set[str]] = defaultdict(set)
    for ceid, ids in assignments.items():
        groups[int(ids[min(i, len(ids) - 1)] if i >= 0 else ids[-1])].add(ceid)
    return frozenset(frozenset(g) for g in groups.values())


def partitions(assignments: Mapping[str, Sequence[int]]) -> list[Community]:
    """Communities of level 1 (Leiden's final ids) and level 2 (its finest intermediate
    ids: the groups that are not also a final community); singletons are left out."""
    final, finest = _grouped(assignments, -1), _grouped(assignments, 0)
    out = []
    for level, partition in ((1, final), (2, finest - final)):
        for group in partition:
            if len(group) >= MIN_MEMBERS:
                members = tuple(sorted(group))
                out.append(Community(community_id(level, members), level, members))
    return sorted(out, key=lambda c: (c.level, c.members))


def node_state(communities: Sequence[Community]) -> dict[str, tuple[str | None, str | None]]:
    """Per member: (domain id, module id); a domain without finer modules is its own
    module."""
    state: dict[str, list[str | None]] = {}
    for c in sorted(communities, key=lambda c: c.level):
        for m in c.members:
            slot = state.setdefault(m, [None, None])
            slot[c.level - 1] = c.community_id
    return {m: (d, mod or d) for m, (d, mod) in state.items()}


def leiden_assignments(ctx: JobContext, scope: ReadScope, ceids: Sequence[str] | None = None,
                       progress: ProgressFn = no_progress) -> dict[str, list[int]]:
    """Leiden's intermediate ids per node (finest first) on the projection of the scope's
    graph (of the nodes ``ceids`` only, when given)."""
    with projected(ctx, scope, job="leiden", undirected=True, labels=COMMUNITY_LABELS,
                   types=DEPENDENCY_TYPES, ceids=ceids) as graph:
        progress("projected", nodes=graph.node_count(),
                 relationships=graph.relationship_count())
        types = present(DEPENDENCY_TYPES, graph.relationship_types())
        if not types:
            return {}
        config: dict[str, Any] = {
            "include_intermediate_communities": True, "random_seed": RANDOM_SEED,
            "concurrency": 1, "relationship_types": types,
            "relationship_weight_property": "weight"}
        check_memory(ctx.gds.leiden.estimate(graph, **config).bytes_max,
                     heap_free(ctx.gds.run_cypher, ctx.cypher.text("gds/heap")), "leiden",
                     progress)
        result = ctx.gds.leiden.mutate(graph, "community", **config)
        progress("leiden", levels=result.ran_levels, communities=result.community_count,
                 modularity=round(result.modularity, 4))
        frame = ctx.gds.graph.node_properties.stream(graph, ["community"],
                                                     db_node_properties=["ceid"])
    return {str(r["ceid"]): [int(x) for x in r["community"]] for _, r in frame.iterrows()}


def detect_communities(ctx: JobContext, scope: ReadScope,
                       progress: ProgressFn = no_progress) -> list[Community]:
    return partitions(leiden_assignments(ctx, scope, progress=progress))


def mentioned(rows: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every entity a summary built from these entity_facts rows can name."""
    found = set()
    for row in rows:
        found.add(row["member"]["ceid"])
        for key in ("depends_on", "dependents", "owners", "incidents"):
            found.update(h["other"]["ceid"] for h in row[key])
    return found


def summarise(ctx: JobContext, scope: ReadScope,
              communities: Sequence[Community]) -> list[StoredCommunity]:
    wanted = sorted({c for com in communities for c in com.members})
    facts = {r["member"]["ceid"]: r for r in ctx.rows("gds/entity_facts", scope, ceids=wanted)}
    rows = {c.community_id: [facts[m] for m in c.members if m in facts] for c in communities}
    names = sorted(set().union(*(mentioned(r) for r in rows.values())))
    restricted = {r["ceid"]: sorted(r["jurisdictions"])
                  for r in ctx.rows("gds/jurisdictions", scope, ceids=names)} if names else {}
    level = scope.clearance[-1]
    return [StoredCommunity(c, build_summary(rows[c.community_id]), level,
                            [restricted[x] for x in sorted(mentioned(rows[c.community_id]))
                             if x in restricted])
            for c in communities]


def store_summaries(settings: Settings, scope: ReadScope, items: Sequence[StoredCommunity],
                    embedder: TextEmbedder) -> int:
    """Replace the tenant's set of the scope's clearance level and snapshot in
    ``community_summaries`` (other levels and snapshots stay); returns how many were written."""
    from gds_jobs.community_store import write_set

    return write_set(settings, scope, items, embedder)


def run_communities(ctx: JobContext, scope: ReadScope, embedder: TextEmbedder,
                    progress: ProgressFn = no_progress, tree: bool = True,
                    ) -> list[StoredCommunity]:
    """Detect, summarise, embed and store at the scope's clearance (summaries, node state and
    the RAPTOR tree); returns what was stored (nothing visible at this clearance: no
    summaries at this level)."""
    from gds_jobs.community_store import write_state
    from gds_jobs.raptor import build_tree

    try:
        communities = detect_communities(ctx, scope, progress)
    except NotFound:
        communities = []
    items = summarise(ctx, scope, communities)
    progress("summarised", clearance=scope.clearance[-1], communities=len(items))
    store_summaries(ctx.settings, scope, items, embedder)
    write_state(ctx.settings, scope, node_state(communities))
    if tree:
        nodes = build_tree(ctx, scope, items, embedder)
        progress("raptor tree", clearance=scope.clearance[-1], nodes=nodes)
    return items


def run_every_level(ctx: JobContext, scope: ReadScope, embedder: TextEmbedder,
                    levels: Sequence[str] = CLASSIFICATIONS,
                    progress: ProgressFn = no_progress) -> list[StoredCommunity]:
    """The cron job: the summaries of every clearance level at the scope's snapshot (a reader
    is served the summaries of its own level only): :func:`run_communities` once per group of
    levels that see the same graph, its rows copied to the other levels of the group."""
    from gds_jobs.levels import copy_level, level_groups

    out: list[StoredCommunity] = []
    for first, *others in level_groups(ctx, scope, levels):
        items = run_communities(ctx, replace(scope, clearance=clearance_for(first)), embedder,
                                progress)
        out += items
        for level in others:
            copy_level(ctx.settings, COMMUNITY_TABLES, scope.tenant, scope.version, first, level)
            progress("copied", clearance=level, same_graph_as=first, communities=len(items))
            out += [replace(i, clearance=level) for i in items]
    return out
