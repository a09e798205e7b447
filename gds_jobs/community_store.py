"""Where community results live in PostgreSQL: the summary sets per (tenant, clearance,
snapshot) in ``community_summaries`` and each node's current (domain, module) in
``community_state``.

A full rebuild writes a whole set; an incremental run (RSN-15) writes the set of its snapshot
as the rows of the communities no change touched, copied from the previous set (same ids,
same text, same embedding: nothing is re-embedded), plus the re-summarised ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from gds_jobs.communities import INDEX_NAME, StoredCommunity
from substrate.embeddings import TextEmbedder
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

State = Mapping[str, tuple[str | None, str | None]]  # ceid -> (domain id, module id)

_INSERT = ("INSERT INTO community_summaries (tenant_id, community_id, level, snapshot_version, "
           "clearance, title, summary, members, jurisdictions, embedding) "
           "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
_COPY = """
INSERT INTO community_summaries (tenant_id, community_id, level, snapshot_version, clearance,
  title, summary, members, jurisdictions, embedding)
SELECT tenant_id, community_id, level, %(v)s, clearance, title, summary, members,
       jurisdictions, embedding
FROM community_summaries
WHERE tenant_id = %(tenant)s AND clearance = %(clearance)s AND snapshot_version = %(from)s
  AND community_id = ANY(%(ids)s)
"""
_MODEL = ("INSERT INTO embedding_models (index_name, model_id, dimensions) VALUES (%s, %s, %s) "
          "ON CONFLICT (index_name) DO UPDATE SET model_id = EXCLUDED.model_id, "
          "dimensions = EXCLUDED.dimensions, updated_at = now()")


def level_of(scope: ReadScope) -> str:
    return scope.clearance[-1]


def write_set(settings: Settings, scope: ReadScope, items: Sequence[StoredCommunity],
              embedder: TextEmbedder, keep_from: int | None = None,
              keep_ids: Sequence[str] = ()) -> int:
    """Replace the set of (tenant, clearance, snapshot) with ``items`` plus the rows
    ``keep_ids`` copied from the set of snapshot ``keep_from``; returns rows written."""
    level = level_of(scope)
    vectors = embedder.embed_documents([f"{i.summary.title}. {i.summary.text}" for i in items])
    rows = [(scope.tenant, i.community.community_id, i.community.level, scope.version, level,
             i.summary.title, i.summary.text, Jsonb(i.summary.members), Jsonb(i.jurisdictions),
             np.asarray(v, dtype=np.float32)) for i, v in zip(items, vectors, strict=True)]
    with psycopg.connect(settings.postgres_dsn) as conn:
        register_vector(conn)
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("DELETE FROM community_summaries WHERE tenant_id = %s AND clearance = %s"
                        " AND snapshot_version = %s", (scope.tenant, level, scope.version))
            copied = 0
            if keep_from is not None and keep_ids and keep_from != scope.version:
                cur.execute(_COPY, {"v": scope.version, "tenant": scope.tenant,
                                    "clearance": level, "from": keep_from,
                                    "ids": list(keep_ids)})
                copied = cur.rowcount
            cur.executemany(_INSERT, rows)
            cur.execute(_MODEL, (INDEX_NAME, embedder.model_id, embedder.dimensions))
    return len(rows) + copied


def newest_set_version(conn: psycopg.Connection[Any], scope: ReadScope,
                       below: int | None = None) -> int | None:
    """The newest snapshot with a summary set at the scope's clearance (below ``below``)."""
    row = conn.execute(
        "SELECT max(snapshot_version) FROM community_summaries WHERE tenant_id = %s "
        "AND clearance = %s AND snapshot_version < %s",
        (scope.tenant, level_of(scope), below if below is not None else 2**62)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def has_set(settings: Settings, tenant: str, version: int, clearance: str = "internal") -> bool:
    """Is a summary set stored for (tenant, clearance) at snapshot ``version``?"""
    with psycopg.connect(settings.postgres_dsn) as conn:
        row = conn.execute("SELECT 1 FROM community_summaries WHERE tenant_id = %s AND "
                           "clearance = %s AND snapshot_version = %s LIMIT 1",
                           (tenant, clearance, version)).fetchone()
    return row is not None


def write_state(settings: Settings, scope: ReadScope, state: State,
                drop: Sequence[str] | None = None) -> None:
    """Store ``state`` at the scope's snapshot. ``drop`` None: replace every row of the
    (tenant, clearance); else delete the rows ``drop`` and upsert ``state``."""
    level = level_of(scope)
    rows = [(scope.tenant, level, ceid, d, m, scope.version) for ceid, (d, m) in state.items()]
    with psycopg.connect(settings.postgres_dsn) as conn, conn.transaction(), \
            conn.cursor() as cur:
        if drop is None:
            cur.execute("DELETE FROM community_state WHERE tenant_id = %s AND clearance = %s",
                        (scope.tenant, level))
        elif drop:
            cur.execute("DELETE FROM community_state WHERE tenant_id = %s AND clearance = %s "
                        "AND ceid = ANY(%s)", (scope.tenant, level, list(drop)))
        cur.executemany(
            "INSERT INTO community_state (tenant_id, clearance, ceid, domain_id, module_id, "
            "snapshot_version) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (tenant_id, "
            "clearance, ceid) DO UPDATE SET domain_id = EXCLUDED.domain_id, module_id = "
            "EXCLUDED.module_id, snapshot_version = EXCLUDED.snapshot_version", rows)


def read_state(settings: Settings, scope: ReadScope) -> tuple[dict[str, tuple[str, str]], int]:
    """Every node's (domain, module) at the scope's clearance and the newest snapshot the
    state was written at (0: no state)."""
    with psycopg.connect(settings.postgres_dsn) as conn:
        rows = conn.execute(
            "SELECT ceid, domain_id, module_id, snapshot_version FROM community_state "
            "WHERE tenant_id = %s AND clearance = %s", (scope.tenant, level_of(scope))).fetchall()
    return ({r[0]: (r[1], r[2]) for r in rows}, max((int(r[3]) for r in rows), default=0))
