"""Sentence-aware chunking of documents into ``Chunk`` nodes, ``HAS_CHUNK`` and ``SEQUENCE`` edges.

Text is cut into atoms at sentence ends, blank lines and Markdown block starts (an atom longer
than ``max_chars`` is cut at word boundaries); atoms are packed greedily into chunks of at most
``max_chars`` characters, and each chunk after the first repeats the trailing atoms of the one
before it, up to ``overlap_chars``. Every chunk's text is the exact slice
``text[char_start:char_end]`` of the document.

With ``parent_max_chars > 0`` the parent-child strategy is used: the text is first packed into
parent chunks of up to ``parent_max_chars`` (no overlap), then each parent into child chunks.
Indices run in document order, each parent just before its children.

Sequence edges follow chunk-graph-rag.md (``WithSequenceEdges``): chunks sorted by index, only
consecutive chunks sharing the same parent are linked, ``chunk[i] -> chunk[i+1]``, weight 1.0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid, slug

SOURCE = "chunking"

Span = tuple[int, int]

# The whitespace between two atoms: after . ! ? (optionally closed by a quote or bracket)
# unless a lower-case word follows; a blank line; a line starting a Markdown heading or item.
_BOUNDARY = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?![a-z])"
    r"|\n[ \t]*\n\s*"
    r"|\n(?=[ \t]*(?:\#{1,6}\s|[-*+]\s|\d+[.)]\s))"
)
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkerConfig:
    """Chunk sizes in characters; the defaults are oasis' ``DefaultChunkerConfig``."""

    max_chars: int = 2048
    overlap_chars: int = 200
    parent_max_chars: int = 0  # > 0: parent-child strategy

    def __post_init__(self) -> None:
        if self.max_chars <= 0:
            raise ValueError("max_chars must be positive")
        if not 0 <= self.overlap_chars < self.max_chars:
            raise ValueError("overlap_chars must be in [0, max_chars)")
        if self.parent_max_chars and self.parent_max_chars <= self.max_chars:
            raise ValueError("parent_max_chars must be 0 or greater than max_chars")


@dataclass(frozen=True)
class TextChunk:
    """One chunk as offsets into the document; ``parent`` is the parent chunk's index."""

    index: int
    start: int
    end: int
    parent: int | None = None


def _trimmed(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _split_long(text: str, span: Span, max_chars: int) -> list[Span]:
    """Cut an over-long atom at word boundaries (a word longer than ``max_chars`` is hard-cut)."""
    pieces: list[Span] = []
    cur: Span | None = None
    for word in _WORD.finditer(text, span[0], span[1]):
        w_start, w_end = word.span()
        if cur is not None and w_end - cur[0] <= max_chars:
            cur = (cur[0], w_end)
            continue
        if cur is not None:
            pieces.append(cur)
        while w_end - w_start > max_chars:
            pieces.append((w_start, w_start + max_chars))
            w_start += max_chars
        cur = (w_start, w_end)
    if cur is not None:
        pieces.append(cur)
    return pieces


def sentence_atoms(text: str, max_chars: int) -> list[Span]:
    """Sentence-like spans of ``text``, none longer than ``max_chars``."""
    atoms: list[Span] = []
    start = 0
    cuts = [m.span() for m in _BOUNDARY.finditer(text)] + [(len(text), len(text))]
    for cut_start, cut_end in cuts:
        span = _trimmed(text, start, cut_start)
        start = cut_end
        if span is None:
            continue
        atoms.extend(
            _split_long(text, span, max_chars) if span[1] - span[0] > max_chars else [span]
        )
    return atoms


def _overlap_start(
    atoms: Sequence[Span], first: int, last: int, overlap_chars: int, max_chars: int
) -> int:
    """Index of the atom the chunk after ``atoms[first..last]`` starts with."""
    nxt = last + 1
    k = nxt
    while (
        k - 1 > first
        and atoms[last][1] - atoms[k - 1][0] <= overlap_chars
        and atoms[nxt][1] - atoms[k - 1][0] <= max_chars
    ):
        k -= 1
    return k


def pack(atoms: Sequence[Span], max_chars: int, overlap_chars: int = 0) -> list[Span]:
    """Greedily pack consecutive atoms into spans of at most ``max_chars``, with overlap."""
    spans: list[Span] = []
    first = 0
    while first < len(atoms):
        last = first
        while last + 1 < len(atoms) and atoms[last + 1][1] - atoms[first][0] <= max_chars:
            last += 1
        spans.append((atoms[first][0], atoms[last][1]))
        if last == len(atoms) - 1:
            break
        first = _overlap_start(atoms, first, last, overlap_chars, max_chars)
    return spans


def split_text(text: str, config: ChunkerConfig | None = None) -> list[TextChunk]:
    """Chunk ``text`` per ``config``; flat chunks have ``parent=None``."""
    cfg = config or ChunkerConfig()
    atoms = sentence_atoms(text, cfg.max_chars)
    if not cfg.parent_max_chars:
        return [
            TextChunk(i, s, e)
            for i, (s, e) in enumerate(pack(atoms, cfg.max_chars, cfg.overlap_chars))
        ]
    chunks: list[TextChunk] = []
    for p_start, p_end in pack(atoms, cfg.parent_max_chars):
        parent = TextChunk(len(chunks), p_start, p_end)
        chunks.append(parent)
        inner = [a for a in atoms if p_start <= a[0] and a[1] <= p_end]
        for c_start, c_end in pack(inner, cfg.max_chars, cfg.overlap_chars):
            chunks.append(TextChunk(len(chunks), c_start, c_end, parent.index))
    return chunks


def chunk_ceid(doc_path: str, index: int) -> str:
    """``chunk:<doc-slug>:<index>``."""
    return f"chunk:{slug(doc_path)}:{index}"


def chunk_nodes(
    doc_path: str, text: str, chunks: Iterable[TextChunk], doc_ceid: str | None = None
) -> list[NodeRecord]:
    """``Chunk`` node records for ``chunks`` of the document at ``doc_path``."""
    doc = doc_ceid or ceid("doc", doc_path)
    return [
        NodeRecord(
            ceid=chunk_ceid(doc_path, c.index),
            label="Chunk",
            props={
                "name": f"{doc_path}#chunk{c.index}",
                "text": text[c.start : c.end],
                "doc": doc,
                "path": doc_path,
                "index": c.index,
                "char_start": c.start,
                "char_end": c.end,
                "parent": "" if c.parent is None else chunk_ceid(doc_path, c.parent),
            },
            provenance=(doc_path,),
        )
        for c in chunks
    ]


def has_chunk_edges(nodes: Iterable[NodeRecord]) -> list[EdgeRecord]:
    """``Document -[HAS_CHUNK]-> Chunk`` for each chunk node, evidence ``<path>#chunk<i>``."""
    return [
        EdgeRecord(
            type="HAS_CHUNK",
            src=str(n.props["doc"]),
            dst=n.ceid,
            evidence_ref=f"{n.props['path']}#chunk{n.props['index']}",
            source=SOURCE,
        )
        for n in nodes
    ]


def build_sequence_edges(chunks: Iterable[NodeRecord]) -> list[EdgeRecord]:
    """``SEQUENCE`` edges ``chunk[i] -> chunk[i+1]`` within each document, same parent only."""
    by_doc: dict[str, list[NodeRecord]] = {}
    for node in chunks:
        by_doc.setdefault(str(node.props["doc"]), []).append(node)
    edges: list[EdgeRecord] = []
    for doc_chunks in by_doc.values():
        ordered = sorted(doc_chunks, key=lambda n: int(n.props["index"]))
        for a, b in zip(ordered, ordered[1:], strict=False):
            if a.props.get("parent", "") != b.props.get("parent", ""):
                continue
            evidence = f"{a.props['path']}#chunk{a.props['index']}-chunk{b.props['index']}"
            edges.append(
                EdgeRecord(
                    type="SEQUENCE",
                    src=a.ceid,
                    dst=b.ceid,
                    evidence_ref=evidence,
                    weight=1.0,
                    source=SOURCE,
                )
            )
    return edges


def chunk_document(
    doc_path: str,
    text: str,
    config: ChunkerConfig | None = None,
    *,
    sequence_edges: bool = False,
    doc_ceid: str | None = None,
) -> GraphBatch:
    """Chunk nodes and ``HAS_CHUNK`` edges of one document, plus ``SEQUENCE`` edges if asked.

    The ``Document`` node itself is not included: the documents connector owns it.
    """
    nodes = chunk_nodes(doc_path, text, split_text(text, config), doc_ceid)
    edges = has_chunk_edges(nodes)
    if sequence_edges:
        edges.extend(build_sequence_edges(nodes))
    return GraphBatch(nodes=nodes, edges=edges)
