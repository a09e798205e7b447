"""Incremental communities (RSN-15): after a ``graph.updated`` event, re-run Leiden only where
the change landed.

1. the *touched* domains: the final-level communities (``community_state``) holding a changed
   node or an endpoint of a changed edge;
2. the *affected* nodes: every member of a touched domain plus the changed nodes themselves
   (new services join here); the *boundary*: their dependency neighbours outside them;
3. Leiden (hierarchical, seeded) on the projection of affected + boundary only; the boundary
   nodes give the affected ones their outside pull but keep their own communities;
4. the new communities of the affected nodes are summarised and embedded; every community no
   change touched keeps its id, and its row (text and embedding) is copied into the summary
   set of the new snapshot unchanged; the RAPTOR tree is patched the same way.

A tenant with no stored state yet gets a full run (``run_communities``), unless
``build_missing`` is off (the managed consumer, ``gds_jobs.managed``: a tenant's first set comes
from the full job). An event older than a stored set is skipped: that later set already holds
the change (and re-running at the older snapshot would move the state back). The nightly job
stays a full rebuild.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from gds_jobs.communities import (
    leiden_assignments,
    node_state,
    partitions,
    run_communities,
    summarise,
)
from gds_jobs.community_store import newest_set_version, read_state, write_set, write_state
from gds_jobs.guard import ProgressFn, no_progress
from gds_jobs.raptor import update_tree
from gds_jobs.runtime import JobContext
from substrate.embeddings import TextEmbedder
from substrate.errors import NotFound
from substrate.retrieval.scope import ReadScope


@dataclass(frozen=True)
class IncrementalResult:
    tenant: str
    clearance: str
    snapshot_version: int
    mode: str  # incremental | full | skipped
    touched_domains: int = 0
    affected_nodes: int = 0
    boundary_nodes: int = 0
    new_communities: int = 0
    kept_communities: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def node_ids(changed: list[str]) -> list[str]:
    """The node ids among a change's element ids (edge ids carry their ``-[TYPE]->``; their
    endpoints are listed on their own by ``snapshots.changed_ids``)."""
    return sorted({c for c in changed if "-[" not in c})


def due(conn: psycopg.Connection[Any], scope: ReadScope, build_missing: bool = True) -> bool:
    """Does a change at ``scope`` need a run: no set stored at its snapshot or a newer one,
    and (unless ``build_missing``) a state to start from."""
    newest = newest_set_version(conn, scope)
    built = build_missing or conn.execute(
        "SELECT 1 FROM community_state WHERE tenant_id = %s AND clearance = %s LIMIT 1",
        (scope.tenant, scope.clearance[-1])).fetchone() is not None
    return built and (newest is None or newest < scope.version)


def update_communities(ctx: JobContext, scope: ReadScope, changed: list[str],
                       embedder: TextEmbedder, progress: ProgressFn = no_progress,
                       tree: bool = True, build_missing: bool = True) -> IncrementalResult:
    """Apply one change at ``scope`` (see the module doc); ``tree``: patch the RAPTOR tree
    too (the benchmark leaves it out of both sides); ``build_missing``: a full run where no
    state is stored yet (else skipped)."""
    started = time.monotonic()
    level = scope.clearance[-1]
    with psycopg.connect(ctx.settings.postgres_dsn) as conn:
        if not due(conn, scope, build_missing):
            return IncrementalResult(scope.tenant, level, scope.version, "skipped")
        previous = newest_set_version(conn, scope, below=scope.version)
    state, _ = read_state(ctx.settings, scope)
    if not state or previous is None:
        items = run_communities(ctx, scope, embedder, progress, tree)
        return IncrementalResult(scope.tenant, level, scope.version, "full",
                                 new_communities=len(items),
                                 seconds=round(time.monotonic() - started, 3))
    changed_nodes = node_ids(changed)
    touched = sorted({state[c][0] for c in changed_nodes if c in state})
    touched_set = set(touched)
    affected = sorted({m for m, (d, _) in state.items() if d in touched_set} | set(changed_nodes))
    boundary = [r["ceid"] for r in ctx.rows("gds/neighbours", scope, ceids=affected)]
    progress("affected", touched_domains=len(touched), affected=len(affected),
             boundary=len(boundary))
    try:
        found = leiden_assignments(ctx, scope, [*affected, *boundary], progress)
    except NotFound:  # nothing structural left there (a document changed, nodes removed)
        found = {}
    inside = set(affected)
    communities = partitions({c: ids for c, ids in found.items() if c in inside})
    kept = sorted({x for d, m in state.values() if d not in touched_set for x in (d, m) if x})
    items = summarise(ctx, scope, communities)
    write_set(ctx.settings, scope, items, embedder, keep_from=previous, keep_ids=kept)
    write_state(ctx.settings, scope, node_state(communities), drop=affected)
    if tree:
        update_tree(ctx, scope, previous, items, touched, affected, embedder)
    progress("stored", clearance=level, new=len(items), kept=len(kept))
    return IncrementalResult(scope.tenant, level, scope.version, "incremental", len(touched),
                             len(affected), len(boundary), len(items), len(kept),
                             round(time.monotonic() - started, 3))
