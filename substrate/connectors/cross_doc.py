"""Cross-document chunk edges (chunk-graph-rag.md, ``ExtractCrossDocumentEdges``).

For every chunk of the documents in scope, the ``max_pairs_per_chunk`` most similar chunks of
*other* documents (cosine similarity of their embeddings, at least ``similarity_threshold``)
become candidate pairs. Each unordered pair is kept once and becomes a ``SIMILAR_TO`` edge whose
weight is the similarity. When a chat client is given, the paired chunks of each document are
also sent to the LLM in batches of ``batch_size`` for typed edges, as in ingestion.

A ``SIMILAR_TO`` edge here is a measurement, not a guess: ``confidence`` 1.0, ``weight`` the
cosine, ``source="embedding"``, ``evidence_ref="embedding:<model_id>#cos=<score>"``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from substrate.connectors.llm_edges import (
    ChatClient,
    ExtractionResult,
    GraphExtractionOptions,
    deduplicate_edges,
    extract_graph_edges,
    prune_edges,
)
from substrate.graph.records import EdgeRecord, NodeRecord

SOURCE = "embedding"
_ROW_BLOCK = 256

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class CrossDocOptions:
    """The ``CrossDocWith*`` options of chunk-graph-rag.md, with its defaults."""

    similarity_threshold: float = 0.5
    max_pairs_per_chunk: int = 3
    batch_size: int = 5
    document_ids: tuple[str, ...] = ()  # document ceids in scope; empty: all

    def __post_init__(self) -> None:
        if self.max_pairs_per_chunk < 1:
            raise ValueError("max_pairs_per_chunk must be at least 1")
        if self.batch_size < 2:
            raise ValueError("batch_size must be at least 2")


@dataclass(frozen=True)
class CandidatePair:
    """Chunk ``local`` (of a document in scope) and ``remote`` (of another document)."""

    local: int
    remote: int
    score: float


def unit_rows(vectors: Sequence[Sequence[float]] | Matrix) -> Matrix:
    """Rows scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError("vectors must be a 2-D array: one row per chunk")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def _top_candidates(scores: Matrix, k: int) -> list[list[tuple[int, float]]]:
    """Per row, the ``k`` highest finite scores as ``(column, score)``, best first."""
    k = min(k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    out: list[list[tuple[int, float]]] = []
    for row, cols in zip(scores, top, strict=True):
        found = [(int(c), float(row[c])) for c in cols if np.isfinite(row[c])]
        out.append(sorted(found, key=lambda cs: (-cs[1], cs[0])))
    return out


def find_candidate_pairs(
    chunks: Sequence[NodeRecord],
    vectors: Sequence[Sequence[float]] | Matrix,
    options: CrossDocOptions | None = None,
) -> list[CandidatePair]:
    """Similar chunk pairs across documents; each unordered pair once, in chunk order."""
    opts = options or CrossDocOptions()
    matrix = unit_rows(vectors)
    if matrix.shape[0] != len(chunks):
        raise ValueError(f"{len(chunks)} chunks but {matrix.shape[0]} vectors")
    names = [str(c.props["doc"]) for c in chunks]
    doc_codes = np.unique(np.array(names), return_inverse=True)[1] if names else np.array([])
    scope = set(opts.document_ids)
    local_rows = [i for i, d in enumerate(names) if not scope or d in scope]
    pairs: list[CandidatePair] = []
    seen: set[tuple[int, int]] = set()
    for start in range(0, len(local_rows), _ROW_BLOCK):
        rows = local_rows[start : start + _ROW_BLOCK]
        scores = matrix[rows] @ matrix.T
        scores[doc_codes[rows][:, None] == doc_codes[None, :]] = -np.inf
        for i, found in zip(rows, _top_candidates(scores, opts.max_pairs_per_chunk), strict=True):
            for j, score in found:
                key = (min(i, j), max(i, j))
                if score < opts.similarity_threshold or score <= 0.0 or key in seen:
                    continue
                seen.add(key)
                pairs.append(CandidatePair(i, j, min(score, 1.0)))
    return pairs


def similar_to_edges(
    chunks: Sequence[NodeRecord], pairs: Sequence[CandidatePair], model_id: str
) -> list[EdgeRecord]:
    """One ``SIMILAR_TO`` edge ``local -> remote`` per candidate pair."""
    return [
        EdgeRecord(
            type="SIMILAR_TO",
            src=chunks[p.local].ceid,
            dst=chunks[p.remote].ceid,
            evidence_ref=f"embedding:{model_id}#cos={p.score:.4f}",
            confidence=1.0,
            weight=round(p.score, 6),
            source=SOURCE,
            props={"description": f"embedding cosine similarity {p.score:.3f}"},
        )
        for p in pairs
    ]


def _paired_chunks_by_doc(
    chunks: Sequence[NodeRecord], pairs: Sequence[CandidatePair]
) -> list[list[NodeRecord]]:
    """Per local document, its paired chunks and their partners, interleaved, each once."""
    groups: dict[str, list[NodeRecord]] = {}
    added: dict[str, set[int]] = {}
    for p in pairs:
        doc = str(chunks[p.local].props["doc"])
        group, seen = groups.setdefault(doc, []), added.setdefault(doc, set())
        for idx in (p.local, p.remote):
            if idx not in seen:
                seen.add(idx)
                group.append(chunks[idx])
    return list(groups.values())


def extract_cross_document_edges(
    chunks: Sequence[NodeRecord],
    vectors: Sequence[Sequence[float]] | Matrix,
    model_id: str,
    options: CrossDocOptions | None = None,
    chat: ChatClient | None = None,
    graph_options: GraphExtractionOptions | None = None,
    cancel: threading.Event | None = None,
) -> ExtractionResult:
    """``SIMILAR_TO`` edges from embeddings, plus LLM edges when ``chat`` is given; pruned."""
    opts = options or CrossDocOptions()
    gopts = graph_options or GraphExtractionOptions()
    pairs = find_candidate_pairs(chunks, vectors, opts)
    result = ExtractionResult(edges=similar_to_edges(chunks, pairs, model_id))
    if chat is not None:
        llm_opts = GraphExtractionOptions(
            graph_batch_size=opts.batch_size,
            graph_extraction_workers=gopts.graph_extraction_workers,
        )
        for group in _paired_chunks_by_doc(chunks, pairs):
            found = extract_graph_edges(group, chat, llm_opts, cancel)
            result.edges.extend(found.edges)
            result.batches += found.batches
            result.failed_batches.extend(found.failed_batches)
    result.edges = prune_edges(
        deduplicate_edges(result.edges), gopts.min_edge_weight, gopts.max_edges_per_chunk
    )
    return result
