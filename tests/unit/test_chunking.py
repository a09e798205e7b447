from __future__ import annotations

import pytest

from substrate.connectors.chunking import (
    ChunkerConfig,
    build_sequence_edges,
    chunk_document,
    chunk_nodes,
    sentence_atoms,
    split_text,
)
from substrate.graph.records import NodeRecord

SENTENCES = [f"Sentence number {i} talks about topic {i % 4} in some detail." for i in range(40)]
TEXT = " ".join(SENTENCES)


def test_defaults_are_the_upstream_chunker_defaults() -> None:
    cfg = ChunkerConfig()
    assert (cfg.max_chars, cfg.overlap_chars, cfg.parent_max_chars) == (2048, 200, 0)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_chars": 0}, {"max_chars": 100, "overlap_chars": 100}, {"parent_max_chars": 100}],
)
def test_invalid_config_is_rejected(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ChunkerConfig(**kwargs)


def test_chunks_respect_size_and_end_at_sentence_ends() -> None:
    chunks = split_text(TEXT, ChunkerConfig(max_chars=300, overlap_chars=0))
    assert len(chunks) > 5
    for c in chunks:
        piece = TEXT[c.start : c.end]
        assert len(piece) <= 300
        assert piece.endswith(".") and piece[0].isupper()
    # without overlap the chunks tile the text: every sentence is in exactly one chunk
    joined = " ".join(TEXT[c.start : c.end] for c in chunks)
    assert joined == TEXT


def test_overlap_repeats_trailing_sentences_within_budget() -> None:
    chunks = split_text(TEXT, ChunkerConfig(max_chars=300, overlap_chars=120))
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start < prev.end, "consecutive chunks share text"
        assert prev.end - nxt.start <= 120
        assert nxt.end > prev.end, "every chunk makes progress"
        shared = TEXT[nxt.start : prev.end]
        assert shared[0].isupper() and shared.endswith("."), "overlap is whole sentences"
    assert chunks[-1].end == len(TEXT)


def test_blank_lines_and_markdown_blocks_are_boundaries() -> None:
    text = "# Title\nIntro line without stop\n\nSecond paragraph\n- item one\n- item two"
    atoms = [text[s:e] for s, e in sentence_atoms(text, 1000)]
    assert atoms == [
        "# Title\nIntro line without stop",
        "Second paragraph",
        "- item one",
        "- item two",
    ]


def test_lowercase_after_period_is_not_a_boundary() -> None:
    atoms = sentence_atoms("See e.g. the docs. Then stop.", 1000)
    assert len(atoms) == 2


def test_overlong_sentence_is_cut_at_words_and_overlong_word_hard_cut() -> None:
    text = ("word " * 50).strip() + " " + "x" * 70
    chunks = split_text(text, ChunkerConfig(max_chars=30, overlap_chars=0))
    pieces = [text[c.start : c.end] for c in chunks]
    assert all(len(p) <= 30 for p in pieces)
    assert all(p.startswith("word") or set(p) == {"x"} for p in pieces)
    assert sum(len(p) for p in pieces if set(p) == {"x"}) == 70


def test_empty_text_has_no_chunks() -> None:
    assert split_text("   \n\n ") == []
    assert chunk_document("empty.md", "").nodes == []


def test_chunk_document_records() -> None:
    batch = chunk_document(
        "docs/Payments Guide.md", TEXT, ChunkerConfig(max_chars=400, overlap_chars=0)
    )
    first = batch.nodes[0]
    assert first.label == "Chunk"
    assert first.ceid == "chunk:docs-payments-guide-md:0"
    assert first.props["doc"] == "doc:docs-payments-guide-md"
    assert first.props["name"] == "docs/Payments Guide.md#chunk0"
    assert first.props["text"] == TEXT[first.props["char_start"] : first.props["char_end"]]
    assert [n.props["index"] for n in batch.nodes] == list(range(len(batch.nodes)))
    assert {e.type for e in batch.edges} == {"HAS_CHUNK"}, "sequence edges are off by default"
    has_chunk = batch.edges[1]
    assert (has_chunk.src, has_chunk.dst) == ("doc:docs-payments-guide-md", batch.nodes[1].ceid)
    assert has_chunk.evidence_ref == "docs/Payments Guide.md#chunk1"


def test_flat_sequence_edges_link_consecutive_chunks_forward_with_weight_one() -> None:
    batch = chunk_document(
        "a.md", TEXT, ChunkerConfig(max_chars=300, overlap_chars=0), sequence_edges=True
    )
    seq = [e for e in batch.edges if e.type == "SEQUENCE"]
    assert [(e.src, e.dst) for e in seq] == [
        (f"chunk:a-md:{i}", f"chunk:a-md:{i + 1}") for i in range(len(batch.nodes) - 1)
    ]
    assert all(e.weight == 1.0 and e.confidence == 1.0 for e in seq)
    assert seq[0].evidence_ref == "a.md#chunk0-chunk1"


def test_sequence_edges_link_only_chunks_with_the_same_parent() -> None:
    cfg = ChunkerConfig(max_chars=150, overlap_chars=0, parent_max_chars=500)
    chunks = split_text(TEXT, cfg)
    parents = [c for c in chunks if c.parent is None]
    assert len(parents) >= 2
    nodes = chunk_nodes("p.md", TEXT, chunks)
    edges = build_sequence_edges(nodes)
    by_ceid = {n.ceid: n for n in nodes}
    assert edges
    for e in edges:
        src, dst = by_ceid[e.src], by_ceid[e.dst]
        assert src.props["parent"] == dst.props["parent"] != ""
        assert dst.props["index"] > src.props["index"]
    linked = {e.src for e in edges} | {e.dst for e in edges}
    assert not linked & {f"chunk:p-md:{p.index}" for p in parents}, "parents get no edges"
    # every child chain is complete: children of a parent minus one edges
    for p in parents:
        children = [c for c in chunks if c.parent == p.index]
        inside = [e for e in edges if by_ceid[e.src].props["parent"] == f"chunk:p-md:{p.index}"]
        assert len(inside) == len(children) - 1


def test_sequence_edges_follow_index_not_input_order_and_never_cross_documents() -> None:
    def node(doc: str, i: int, parent: str = "") -> NodeRecord:
        props = {
            "name": f"{doc}#{i}",
            "text": "t",
            "doc": f"doc:{doc}",
            "path": doc,
            "index": i,
            "parent": parent,
        }
        return NodeRecord(ceid=f"chunk:{doc}:{i}", label="Chunk", props=props)

    nodes = [node("a", 2), node("b", 0), node("a", 0), node("a", 1), node("b", 1, parent="x")]
    edges = build_sequence_edges(nodes)
    assert [(e.src, e.dst) for e in edges] == [
        ("chunk:a:0", "chunk:a:1"),
        ("chunk:a:1", "chunk:a:2"),
    ]
