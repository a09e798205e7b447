"""``substrate reembed``: recompute every live vector with the configured embedder.

Embeddings are derived data: re-embedding makes no snapshot. If the new model has other
dimensions, first add a migration that recreates the vector indexes with EMBEDDING_DIM.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from neo4j import Driver

from substrate.cypher import CypherLibrary
from substrate.graph import embedding_registry
from substrate.graph.ontology import load_ontology
from substrate.graph.records import NodeRecord
from substrate.graph.writer import Embedder, embedding_text
from substrate.observability.progress import advance

PAGE = 500


def reembed(driver: Driver, dsn: str, tenant: str, embedder: Embedder, model_id: str,
            progress: Callable[[str], None] = print) -> int:
    cypher = CypherLibrary.load()
    labels = [name for name, spec in load_ontology().labels.items() if spec.vector]
    total = 0
    for storage, index in (("Entity", "entity_embedding"), ("Chunk", "chunk_embedding")):
        after, dims = "", 0
        while True:
            records, _, _ = driver.execute_query(
                cypher.text("graph/embedding_targets", storage=storage),
                tenant=tenant, labels=labels, after=after, limit=PAGE)
            if not records:
                break
            nodes = [NodeRecord(r["ceid"], r["label"], dict(r["props"])) for r in records]
            vectors = embedder.embed_documents([embedding_text(n) for n in nodes])
            dims = len(vectors[0])
            rows = [{"ceid": n.ceid, "embedding": v} for n, v in zip(nodes, vectors, strict=True)]
            driver.execute_query(cypher.text("graph/set_embeddings", storage=storage),
                                 tenant=tenant, rows=rows)
            total += len(rows)
            after = nodes[-1].ceid
            advance(progress, len(rows))
            progress(f"[reembed] {storage}: {total} vectors")
        if dims:
            with psycopg.connect(dsn) as conn:
                embedding_registry.record(conn, index, model_id, dims)
    return total
