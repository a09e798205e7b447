"""Leiden communities over Services and Infrastructure, with summaries stored for global
GraphRAG (RSN-14).

Leiden runs on the undirected projection of the dependency edges (CALLS, DEPENDS_ON, IMPORTS,
HOSTS) as of the snapshot, seeded and single-threaded so a rerun gives the same partition.
Levels follow the summary tree: level 1 holds the final (coarsest) communities, level 2 the
finer ones Leiden passed through on the way, where they differ. Each community of two or more
members gets a deterministic extractive summary (``gds_jobs.summaries``), embedded with the
configured embedder. A community's id is a hash of its members, so an unchanged cluster keeps
its id.

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

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

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


def partitions(assignments: Mapping[str, Sequence[int]]) -> list[Community]:
    """Communities per level from Leiden's intermediate ids (finest first, final last).

    A level that partitions the nodes exactly like the next coarser one is dropped; levels are
    then numbered from the final partition (1) down to the finest; singletons are left out.
    """
    depth = max((len(ids) for ids in assignments.values()), default=0)
    levels: list[frozenset[frozenset[str]]] = []
    for i in range(depth):
        groups: dict[int, set[str]] = defaultdict(set)
        for ceid, ids in assignments.items():
            groups[int(ids[min(i, len(ids) - 1)])].add(ceid)
        levels.append(frozenset(frozenset(g) for g in groups.values()))
    kept = [p for i, p in enumerate(levels) if i == depth - 1 or p != levels[i + 1]]
    out = []
    for level, partition in enumerate(reversed(kept), start=1):
        for group in partition:
            if len(group) >= MIN_MEMBERS:
                members = tuple(sorted(group))
                out.append(Community(community_id(level, members), level, members))
    return sorted(out, key=lambda c: (c.level, c.members))


def detect_communities(ctx: JobContext, scope: ReadScope) -> list[Community]:
    with projected(ctx, scope, job="leiden", undirected=True, labels=COMMUNITY_LABELS,
                   types=DEPENDENCY_TYPES) as graph:
        types = present(DEPENDENCY_TYPES, graph.relationship_types())
        if not types:
            return []
        ctx.gds.leiden.mutate(
            graph, "community", include_intermediate_communities=True, random_seed=RANDOM_SEED,
            concurrency=1, relationship_types=types, relationship_weight_property="weight",
        )
        frame = ctx.gds.graph.node_properties.stream(graph, ["community"],
                                                     db_node_properties=["ceid"])
    return partitions({str(r["ceid"]): [int(x) for x in r["community"]]
                       for _, r in frame.iterrows()})


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
    """Replace the tenant's rows of the scope's clearance level and snapshot in
    ``community_summaries`` (other levels and snapshots stay); returns how many were written."""
    level = scope.clearance[-1]
    vectors = embedder.embed_documents([f"{i.summary.title}. {i.summary.text}" for i in items])
    rows = [(scope.tenant, i.community.community_id, i.community.level, scope.version, level,
             i.summary.title, i.summary.text, Jsonb(i.summary.members), Jsonb(i.jurisdictions),
             np.asarray(v, dtype=np.float32)) for i, v in zip(items, vectors, strict=True)]
    with psycopg.connect(settings.postgres_dsn) as conn:
        register_vector(conn)
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("DELETE FROM community_summaries WHERE tenant_id = %s AND clearance = %s"
                        " AND snapshot_version = %s", (scope.tenant, level, scope.version))
            cur.executemany(
                "INSERT INTO community_summaries (tenant_id, community_id, level, "
                "snapshot_version, clearance, title, summary, members, jurisdictions, "
                "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
            cur.execute(
                "INSERT INTO embedding_models (index_name, model_id, dimensions) "
                "VALUES (%s, %s, %s) ON CONFLICT (index_name) DO UPDATE SET "
                "model_id = EXCLUDED.model_id, dimensions = EXCLUDED.dimensions, "
                "updated_at = now()", (INDEX_NAME, embedder.model_id, embedder.dimensions))
    return len(rows)


def run_communities(ctx: JobContext, scope: ReadScope,
                    embedder: TextEmbedder) -> list[StoredCommunity]:
    """Detect, summarise, embed and store at the scope's clearance; returns what was stored
    (nothing visible at this clearance: no summaries at this level)."""
    try:
        communities = detect_communities(ctx, scope)
    except NotFound:
        communities = []
    items = summarise(ctx, scope, communities)
    store_summaries(ctx.settings, scope, items, embedder)
    return items


def run_every_level(ctx: JobContext, scope: ReadScope, embedder: TextEmbedder,
                    levels: Sequence[str] = CLASSIFICATIONS) -> list[StoredCommunity]:
    """The cron job: :func:`run_communities` once per clearance level at the scope's
    snapshot (a reader is served the summaries of its own level only)."""
    return [item for level in levels
            for item in run_communities(ctx, replace(scope, clearance=clearance_for(level)),
                                        embedder)]
