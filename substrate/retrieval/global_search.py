"""Global GraphRAG retrieval (RSN-14): the community summaries nearest to a query embedding.

The summaries are written by the ``communities`` GDS job (``gds_jobs.communities``) into
PostgreSQL ``community_summaries``. The search is an exact cosine ranking inside the tenant
(pgvector ``<=>`` over a materialised per-tenant set): a tenant has tens to hundreds of
communities, and an HNSW scan filtered by tenant afterwards could return fewer than ``k``.

Policy: a reader gets only the summaries built at its own clearance level, from the newest
set built at or before its snapshot (a pinned read gets the set of its snapshot), and, when
it is restricted to jurisdictions, only summaries all of whose restricted entities it may see.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async

from substrate.errors import BadRequest, Unavailable
from substrate.retrieval.scope import pg_connection
from substrate.settings import Settings

MAX_K = 100
INDEX_NAME = "community_summaries"
_QUERY = """
WITH pinned AS MATERIALIZED (
  SELECT max(snapshot_version) AS v FROM community_summaries
  WHERE tenant_id = %(tenant)s AND clearance = %(clearance)s
    AND snapshot_version <= %(v)s
), tenant_rows AS MATERIALIZED (
  SELECT community_id, level, snapshot_version, title, summary, members, embedding
  FROM community_summaries s, pinned
  WHERE s.tenant_id = %(tenant)s AND s.clearance = %(clearance)s
    AND s.snapshot_version = pinned.v AND s.embedding IS NOT NULL
    AND (%(jurisdictions)s::text[] IS NULL OR NOT EXISTS (
      SELECT 1 FROM jsonb_array_elements(s.jurisdictions) AS entity(allowed)
      WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(entity.allowed) AS j(name)
                        WHERE j.name = ANY(%(jurisdictions)s::text[]))))
)
SELECT community_id, level, snapshot_version, title, summary, members,
       1 - (embedding <=> %(q)s) AS score
FROM tenant_rows
ORDER BY embedding <=> %(q)s, level, community_id
LIMIT %(k)s
"""


async def _check_model(conn: psycopg.AsyncConnection[Any], dims: int,
                       model_id: str | None) -> None:
    cur = await conn.execute(
        "SELECT model_id, dimensions FROM embedding_models WHERE index_name = %s", (INDEX_NAME,)
    )
    row = await cur.fetchone()
    if row is None:
        return  # nothing stored yet: the search finds nothing
    if row[1] != dims or (model_id is not None and row[0] != model_id):
        raise Unavailable(
            f"community summaries were embedded with {row[0]} ({row[1]} dimensions); "
            f"the query embedding is {model_id or 'unnamed'} ({dims} dimensions)",
            {"stored_model": row[0], "stored_dimensions": row[1]},
        )


async def global_search(
    settings: Settings, tenant: str, query_embedding: Sequence[float], k: int = 5,
    *, model_id: str | None = None, clearance: str = "internal", version: int = 2**62,
    jurisdictions: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The ``k`` community summaries of ``tenant`` most similar to ``query_embedding``, from
    the set built at ``clearance`` at the newest snapshot <= ``version`` (see the module doc).

    Rows carry ``rank`` (1-based), ``score`` (cosine similarity), ``community_id``,
    ``level``, ``snapshot_version``, ``title``, ``summary`` and ``members``. ``model_id``,
    when given, must be the model the summaries were embedded with.
    """
    if not 1 <= k <= MAX_K:
        raise BadRequest(f"k must be 1..{MAX_K}", {"k": k})
    if len(query_embedding) != settings.embedding_dim:
        raise BadRequest(f"query embedding has {len(query_embedding)} dimensions, "
                         f"EMBEDDING_DIM is {settings.embedding_dim}")
    vector = np.asarray(query_embedding, dtype=np.float32)
    async with pg_connection(settings) as conn:
        await register_vector_async(conn)
        await _check_model(conn, len(query_embedding), model_id)
        cur = await conn.execute(_QUERY, {
            "tenant": tenant, "q": vector, "k": k, "clearance": clearance, "v": version,
            "jurisdictions": None if jurisdictions is None else list(jurisdictions)})
        names = [d.name for d in cur.description or ()]
        rows = [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
        row["score"] = round(float(row["score"]), 6)
    return rows


_SET = """
WITH pinned AS MATERIALIZED (
  SELECT max(snapshot_version) AS v FROM community_summaries
  WHERE tenant_id = %(tenant)s AND clearance = %(clearance)s AND snapshot_version <= %(v)s
)
SELECT community_id, level, snapshot_version, title, summary, members, embedding
FROM community_summaries s, pinned
WHERE s.tenant_id = %(tenant)s AND s.clearance = %(clearance)s
  AND s.snapshot_version = pinned.v
  AND (%(jurisdictions)s::text[] IS NULL OR NOT EXISTS (
    SELECT 1 FROM jsonb_array_elements(s.jurisdictions) AS entity(allowed)
    WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(entity.allowed) AS j(name)
                      WHERE j.name = ANY(%(jurisdictions)s::text[]))))
ORDER BY level, community_id
"""


async def summary_set(settings: Settings, tenant: str, *, clearance: str, version: int,
                      jurisdictions: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every summary of the set a reader gets (same policy as :func:`global_search`), with
    its embedding: the input of the map step of global GraphRAG."""
    async with pg_connection(settings) as conn:
        await register_vector_async(conn)
        cur = await conn.execute(_SET, {
            "tenant": tenant, "clearance": clearance, "v": version,
            "jurisdictions": None if jurisdictions is None else list(jurisdictions)})
        names = [d.name for d in cur.description or ()]
        return [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]
