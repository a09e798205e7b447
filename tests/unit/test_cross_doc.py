from __future__ import annotations

import json
import math

import numpy as np
import pytest

from substrate.connectors.chunking import chunk_document
from substrate.connectors.cross_doc import (
    CrossDocOptions,
    extract_cross_document_edges,
    find_candidate_pairs,
    similar_to_edges,
)
from substrate.connectors.llm_edges import GraphExtractionOptions, OpenAIChatClient
from substrate.embeddings import OpenAIEmbedder
from substrate.graph.records import NodeRecord
from tests.support.openai_stub_server import OpenAIStubServer


def node(doc: str, i: int) -> NodeRecord:
    props = {"name": f"{doc}#{i}", "text": f"{doc} {i}", "doc": f"doc:{doc}", "index": i}
    return NodeRecord(ceid=f"chunk:{doc}:{i}", label="Chunk", props=props)


def at(cos: float) -> list[float]:
    """A unit vector whose cosine with [1, 0, 0] is ``cos``."""
    return [cos, math.sqrt(1 - cos * cos), 0.0]


CHUNKS = [node("a", 0), node("a", 1), node("b", 0), node("b", 1), node("c", 0)]
VECTORS = [
    [1.0, 0.0, 0.0],  # a0
    [1.0, 0.0, 0.0],  # a1: identical to a0, same document -> never paired with it
    at(0.8),  # b0
    at(0.45),  # b1: below the default threshold against a*
    [0.0, 0.0, 2.0],  # c0: orthogonal to everything, not unit length
]


def test_defaults_follow_the_spec() -> None:
    o = CrossDocOptions()
    assert (o.similarity_threshold, o.max_pairs_per_chunk, o.batch_size) == (0.5, 3, 5)
    assert o.document_ids == ()


def test_threshold_and_same_document_exclusion() -> None:
    pairs = find_candidate_pairs(CHUNKS, VECTORS)
    got = {(CHUNKS[p.local].ceid, CHUNKS[p.remote].ceid): p.score for p in pairs}
    assert set(got) == {("chunk:a:0", "chunk:b:0"), ("chunk:a:1", "chunk:b:0")}
    assert got[("chunk:a:0", "chunk:b:0")] == pytest.approx(0.8)


def test_lower_threshold_admits_weaker_pairs_once_per_unordered_pair() -> None:
    pairs = find_candidate_pairs(CHUNKS, VECTORS, CrossDocOptions(similarity_threshold=0.4))
    keys = [(p.local, p.remote) for p in pairs]
    assert (0, 3) in keys and (1, 3) in keys
    unordered = [tuple(sorted(k)) for k in keys]
    assert len(unordered) == len(set(unordered)), "b0->a0 is not repeated after a0->b0"
    assert all(4 not in k for k in keys), "no pair has a non-positive similarity"


def test_candidates_per_chunk_cap() -> None:
    pairs = find_candidate_pairs(
        CHUNKS, VECTORS, CrossDocOptions(similarity_threshold=0.4, max_pairs_per_chunk=1)
    )
    from_a0 = [CHUNKS[p.remote].ceid for p in pairs if p.local == 0]
    assert from_a0 == ["chunk:b:0"], "only the best candidate of a0"


def test_document_scope() -> None:
    pairs = find_candidate_pairs(CHUNKS, VECTORS, CrossDocOptions(document_ids=("doc:b",)))
    assert {CHUNKS[p.local].props["doc"] for p in pairs} == {"doc:b"}
    assert {CHUNKS[p.remote].ceid for p in pairs} == {"chunk:a:0", "chunk:a:1"}


def test_similar_to_edges() -> None:
    pairs = find_candidate_pairs(CHUNKS, np.array(VECTORS))
    edges = similar_to_edges(CHUNKS, pairs, "local:all-MiniLM-L6-v2:384")
    first = edges[0]
    assert (first.type, first.src, first.dst) == ("SIMILAR_TO", "chunk:a:0", "chunk:b:0")
    assert first.weight == pytest.approx(0.8) and first.confidence == 1.0
    assert first.source == "embedding"
    assert first.evidence_ref == "embedding:local:all-MiniLM-L6-v2:384#cos=0.8000"


def test_vector_count_must_match() -> None:
    with pytest.raises(ValueError):
        find_candidate_pairs(CHUNKS, VECTORS[:2])


DOCS = {
    "billing.md": "Card payments are captured by the billing service. Refunds go back to the card.",
    "payments.md": "The billing service captures card payments nightly. Invoices are "
    "emailed to customers.",
    "logging.md": "Structured logs ship to the central log cluster every minute.",
}


def responder(prompt: str) -> str:
    edge = {
        "source": "chunk:billing-md:0",
        "target": "chunk:payments-md:0",
        "relation": "elaborates",
        "weight": 0.7,
        "description": "d",
    }
    return json.dumps({"edges": [edge]})


def test_end_to_end_with_remote_embeddings_and_llm() -> None:
    chunks = [n for p, t in DOCS.items() for n in chunk_document(p, t).nodes]

    with OpenAIStubServer(embedding_dim=256, chat_responder=responder) as server:
        embedder = OpenAIEmbedder(server.base_url, "stub-embed", 256)
        chat = OpenAIChatClient(server.base_url, "stub-chat")
        vectors = embedder.embed_documents([str(c.props["text"]) for c in chunks])
        result = extract_cross_document_edges(
            chunks,
            vectors,
            embedder.model_id,
            CrossDocOptions(),
            chat=chat,
            graph_options=GraphExtractionOptions(min_edge_weight=0.2),
        )
        embedder.close()
        chat.close()
    similar = [(e.src, e.dst) for e in result.edges if e.type == "SIMILAR_TO"]
    assert similar == [(chunks[0].ceid, chunks[1].ceid)], "billing~payments, not logging"
    llm = [e for e in result.edges if e.source == "llm"]
    assert [(e.type, e.weight) for e in llm] == [("ELABORATES", 0.7)]
    assert result.batches == 1 and result.failed_batches == []
