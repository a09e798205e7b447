from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator

import pytest

from substrate.connectors.chunking import ChunkerConfig, chunk_document
from substrate.connectors.llm_edges import (
    RELATION_TYPES,
    Batch,
    GraphExtractionOptions,
    OpenAIChatClient,
    build_chunk_edges,
    deduplicate_edges,
    extract_graph_edges,
    make_batches,
    make_chat_client,
    parse_edges,
    prune_edges,
)
from substrate.graph.records import EdgeRecord, NodeRecord
from substrate.settings import Settings
from tests.support.openai_stub_server import OpenAIStubServer, StubHTTPError

TEXT = " ".join(f"Paragraph {i} explains step {i} of the payment flow." for i in range(7))


def cid(i: int) -> str:
    return f"chunk:guide-md:{i}"


def edge(
    src: int, dst: int, relation: str, weight: object, description: str = ""
) -> dict[str, object]:
    return {
        "source": cid(src),
        "target": cid(dst),
        "relation": relation,
        "weight": weight,
        "description": description,
    }


@pytest.fixture
def chunks() -> list[NodeRecord]:
    nodes = chunk_document("guide.md", TEXT, ChunkerConfig(max_chars=60, overlap_chars=0)).nodes
    assert len(nodes) == 7
    return nodes


def canned(prompt: str) -> str:
    """Batches of size 4, overlap 2 over chunks 0..6: [0-3], [2-5], [4-6]."""
    if f"[{cid(6)}]" in prompt:
        return "Sorry, I cannot help with that {not json"
    if f"[{cid(0)}]" in prompt:
        return json.dumps(
            {
                "edges": [
                    edge(1, 0, "elaborates", 0.8, "step 1 details step 0"),
                    edge(2, 3, "depends_on", 0.4),
                    edge(3, 2, "references", 1),
                    edge(0, 9, "references", 0.9),  # unknown chunk id
                    edge(0, 5, "references", 0.9),  # real chunk, but not in this batch
                    edge(1, 2, "inspired_by", 0.9),  # unknown relation
                    edge(2, 2, "elaborates", 0.9),  # self-loop
                    edge(0, 3, "part_of", 0.0),  # weight out of range
                    edge(0, 3, "part_of", 1.5),  # weight out of range
                    edge(0, 3, "part_of", "0.9"),  # weight not a number
                    "not an edge",
                ]
            }
        )
    reply = {"edges": [edge(2, 3, "depends_on", 0.9, "higher"), edge(5, 4, "CAUSED_BY", 0.3)]}
    return "```json\n" + json.dumps(reply) + "\n```"


@pytest.fixture
def stub() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer(chat_responder=canned) as server:
        yield server


@pytest.fixture
def chat(stub: OpenAIStubServer) -> Iterator[OpenAIChatClient]:
    settings = Settings.from_env({"CHAT_URL": stub.base_url + "/v1", "CHAT_MODEL": "stub-chat"})
    client = make_chat_client(settings)
    assert client is not None
    yield client
    client.close()


OPTS = GraphExtractionOptions(graph_batch_size=4, graph_batch_overlap=2)


def test_defaults_follow_the_spec() -> None:
    o = GraphExtractionOptions()
    assert (o.graph_batch_size, o.graph_batch_overlap, o.graph_extraction_workers) == (5, 0, 3)
    assert (o.min_edge_weight, o.max_edges_per_chunk, o.sequence_edges) == (0.0, 0, False)
    assert len(RELATION_TYPES) == 8


def test_overlap_must_be_less_than_batch_size() -> None:
    with pytest.raises(ValueError):
        GraphExtractionOptions(graph_batch_size=3, graph_batch_overlap=3)


def test_sliding_window_batches(chunks: list[NodeRecord]) -> None:
    windows = [[c.props["index"] for c in b.chunks] for b in make_batches(chunks, 4, 2)]
    assert windows == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6]]
    assert [[c.props["index"] for c in b.chunks] for b in make_batches(chunks, 3)] == [
        [0, 1, 2],
        [3, 4, 5],
    ], "a trailing window of one chunk is not a batch"
    assert make_batches(chunks[:1], 5) == []


def test_extraction_against_openai_compatible_server(
    chunks: list[NodeRecord],
    chat: OpenAIChatClient,
    stub: OpenAIStubServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="substrate.connectors.llm_edges"):
        result = extract_graph_edges(chunks, chat, OPTS)

    chat_calls = [body for path, body in stub.requests if path == "/v1/chat/completions"]
    assert len(chat_calls) == 3 and all(b["model"] == "stub-chat" for b in chat_calls)
    assert result.batches == 3
    assert len(result.failed_batches) == 1 and result.failed_batches[0].startswith("b2-")
    assert "unparsable reply" in caplog.text

    got = {(e.src, e.dst, e.type): e for e in result.edges}
    assert set(got) == {
        (cid(1), cid(0), "ELABORATES"),
        (cid(2), cid(3), "DEPENDS_ON"),
        (cid(3), cid(2), "REFERENCES"),
        (cid(5), cid(4), "CAUSED_BY"),
    }
    dup = got[(cid(2), cid(3), "DEPENDS_ON")]
    assert dup.weight == 0.9 and dup.props["description"] == "higher", "highest weight wins"
    assert dup.evidence_ref.startswith("llm:stub-chat:b1-")
    elab = got[(cid(1), cid(0), "ELABORATES")]
    assert (elab.source, elab.confidence, elab.weight) == ("llm", 0.8, 0.8)
    assert elab.props == {"description": "step 1 details step 0"}


def test_prompt_lists_chunk_ids_and_texts(
    chunks: list[NodeRecord], chat: OpenAIChatClient, stub: OpenAIStubServer
) -> None:
    extract_graph_edges(chunks[:2], chat, OPTS)
    prompt = stub.requests[0][1]["messages"][0]["content"]
    assert f"[{cid(0)}]: {chunks[0].props['text']}" in prompt
    assert '"edges"' in prompt and "caused_by" in prompt


def test_failed_llm_call_skips_only_that_batch(chunks: list[NodeRecord]) -> None:
    def flaky(prompt: str) -> str:
        if f"[{cid(0)}]" in prompt:
            raise StubHTTPError(500, "model overloaded")
        return json.dumps({"edges": [edge(5, 4, "sequence", 0.7)]})

    with OpenAIStubServer(chat_responder=flaky) as server:
        client = OpenAIChatClient(server.base_url, "m")
        result = extract_graph_edges(chunks, client, OPTS)
        client.close()
    assert len(result.failed_batches) == 1
    assert [(e.src, e.dst, e.type) for e in result.edges] == [(cid(5), cid(4), "SEQUENCE")]


def test_cancelled_extraction_sends_nothing(
    chunks: list[NodeRecord], chat: OpenAIChatClient, stub: OpenAIStubServer
) -> None:
    cancel = threading.Event()
    cancel.set()
    result = extract_graph_edges(chunks, chat, OPTS, cancel)
    assert result.edges == [] and len(result.failed_batches) == 3
    assert stub.requests == []


def test_parse_edges_rejects_non_object_replies(chunks: list[NodeRecord]) -> None:
    batch = Batch("b0-x", tuple(chunks[:2]))
    with pytest.raises(ValueError):
        parse_edges("[1, 2]", batch, "m")
    with pytest.raises(ValueError):
        parse_edges('{"nodes": []}', batch, "m")
    assert parse_edges('{"edges": []}', batch, "m") == []


def _e(src: str, dst: str, weight: float, type_: str = "REFERENCES") -> EdgeRecord:
    return EdgeRecord(type=type_, src=src, dst=dst, evidence_ref="x", weight=weight)


def test_dedup_and_pruning() -> None:
    edges = [
        _e("a", "b", 0.2),
        _e("a", "b", 0.6),
        _e("a", "c", 0.9),
        _e("a", "d", 0.5),
        _e("a", "e", 0.1),
        _e("b", "a", 0.3),
    ]
    deduped = deduplicate_edges(edges)
    assert len(deduped) == 5 and [e.weight for e in deduped if e.dst == "b"] == [0.6]
    pruned = prune_edges(deduped, min_weight=0.3, max_per_chunk=2)
    assert [(e.src, e.dst) for e in pruned] == [("a", "b"), ("a", "c"), ("b", "a")]
    assert prune_edges(deduped) == deduped, "defaults prune nothing"


def test_without_chat_url_only_deterministic_edges(chunks: list[NodeRecord]) -> None:
    assert make_chat_client(Settings.from_env({})) is None
    result = build_chunk_edges(chunks, GraphExtractionOptions(sequence_edges=True))
    assert [e.type for e in result.edges] == ["SEQUENCE"] * 6
    assert result.batches == 0
    assert build_chunk_edges(chunks).edges == [], "sequence edges are off by default"


def test_combined_edges_are_pruned_together(
    chunks: list[NodeRecord], chat: OpenAIChatClient
) -> None:
    opts = GraphExtractionOptions(
        graph_batch_size=4,
        graph_batch_overlap=2,
        sequence_edges=True,
        min_edge_weight=0.5,
        max_edges_per_chunk=1,
    )
    result = build_chunk_edges(chunks, opts, chat)
    by_src: dict[str, list[EdgeRecord]] = {}
    for e in result.edges:
        by_src.setdefault(e.src, []).append(e)
    assert all(len(v) == 1 for v in by_src.values())
    assert all(e.weight >= 0.5 for e in result.edges)
    # chunk 2 has SEQUENCE 2->3 (1.0) and DEPENDS_ON 2->3 (0.9): the sequence edge is kept
    assert [(e.type, e.weight) for e in by_src[cid(2)]] == [("SEQUENCE", 1.0)]
    # REFERENCES 3->2 (weight 1) ties SEQUENCE 3->4 (1.0): ties go to the lower target id
    assert by_src[cid(3)][0].type == "REFERENCES"
