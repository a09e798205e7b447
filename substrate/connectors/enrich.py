"""``substrate enrich``: chunk edges beyond the deterministic ones (chunk-graph-rag.md).

Cross-document SIMILAR_TO edges from the stored embeddings always; LLM edge extraction
(within documents and across similar pairs) only when a chat endpoint is configured. LLM
edges carry their weight as confidence, so weak ones land in the verification queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from substrate.connectors.cross_doc import CrossDocOptions, extract_cross_document_edges
from substrate.connectors.llm_edges import build_chunk_edges, make_chat_client
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord
from substrate.graph.writer import CommitResult, GraphWriter


def live_chunks(writer: GraphWriter, tenant: str) -> tuple[list[NodeRecord], list[list[float]]]:
    records, _, _ = writer.driver.execute_query(
        writer.cypher.text("graph/live_chunks"), tenant=tenant, routing_="r")
    chunks = [NodeRecord(r["ceid"], "Chunk", dict(r["props"])) for r in records]
    return chunks, [list(r["embedding"]) for r in records]


def enrich(writer: GraphWriter, tenant: str | None = None,
           options: CrossDocOptions | None = None,
           progress: Callable[[str], None] = print) -> CommitResult | None:
    tenant = tenant or writer.settings.tenant
    chunks, vectors = live_chunks(writer, tenant)
    if len(chunks) < 2:
        progress("[enrich] fewer than two chunks: nothing to link")
        return None
    chat = make_chat_client(writer.settings)
    model_id = str(getattr(writer.embedder, "model_id", "stored-embeddings"))
    cross = extract_cross_document_edges(chunks, vectors, model_id, options, chat=chat)
    edges: list[EdgeRecord] = list(cross.edges)
    if chat is not None:
        by_doc: dict[str, list[NodeRecord]] = defaultdict(list)
        for c in chunks:
            by_doc[str(c.props.get("doc"))].append(c)
        for doc_chunks in by_doc.values():
            edges += build_chunk_edges(sorted(doc_chunks, key=lambda c: c.props.get("index", 0)),
                                       chat=chat).edges
    progress(f"[enrich] {len(chunks)} chunks -> {len(edges)} edges "
             f"({'with' if chat else 'without'} LLM extraction)")
    return writer.commit(GraphBatch(edges=edges), source="enrich", tenant=tenant)
