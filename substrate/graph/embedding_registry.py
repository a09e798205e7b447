"""Which embedding model built each vector index; reads refuse a mismatch.

The writer records the model (``entity_embedding``, ``chunk_embedding``) when it stores
vectors; the read side checks its own embedder against the record before using an index.
Changing the embedder = a migration (new dimensions) plus ``substrate reembed``.
"""

from __future__ import annotations

from typing import Any

import psycopg

from substrate.errors import Unavailable

INDEXES = ("entity_embedding", "chunk_embedding")


def record(conn: psycopg.Connection[Any], index: str, model_id: str, dimensions: int) -> None:
    conn.execute(
        "INSERT INTO embedding_models (index_name, model_id, dimensions) VALUES (%s, %s, %s) "
        "ON CONFLICT (index_name) DO UPDATE SET model_id = EXCLUDED.model_id, "
        "dimensions = EXCLUDED.dimensions, updated_at = now()",
        (index, model_id, dimensions),
    )


def recorded(conn: psycopg.Connection[Any]) -> dict[str, tuple[str, int]]:
    rows = conn.execute("SELECT index_name, model_id, dimensions FROM embedding_models").fetchall()
    return {str(r[0]): (str(r[1]), int(r[2])) for r in rows}


def check(dsn: str, model_id: str, dimensions: int) -> None:
    """Raise Unavailable when an index was built with another model than ``model_id``."""
    with psycopg.connect(dsn) as conn:
        known = recorded(conn)
    for index in INDEXES:
        if index in known and known[index] != (model_id, dimensions):
            stored_model, stored_dims = known[index]
            raise Unavailable(
                f"vector index {index} was built with {stored_model} ({stored_dims} dims) but "
                f"the configured embedder is {model_id} ({dimensions} dims); run "
                "`substrate reembed` (and a migration if the dimensions differ)",
                {"index": index, "stored_model": stored_model, "configured_model": model_id},
            )
