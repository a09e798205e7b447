"""LLM-based chunk edge extraction, deduplication and pruning (chunk-graph-rag.md).

Chunks are sent to an OpenAI-compatible chat endpoint in sliding-window batches; each response
is parsed for typed, weighted edges among the batch's chunk ids. Invalid edges are dropped one
by one; a batch whose call fails or whose reply is not JSON is logged and skipped. Duplicates
(same source, target and relation) keep the highest weight; then ``min_edge_weight`` and
``max_edges_per_chunk`` prune, over the LLM and the sequence edges alike.

An LLM edge carries ``source="llm"``, ``evidence_ref="llm:<model>:<batch-id>"`` and
``confidence == weight``, so weak ones fall under the verification threshold.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from substrate.connectors.chunking import build_sequence_edges
from substrate.embeddings import endpoint_url
from substrate.errors import Unavailable
from substrate.graph.records import EdgeRecord, NodeRecord
from substrate.observability.metrics import observe_model_call
from substrate.observability.tracing import TRACER
from substrate.settings import Settings

log = logging.getLogger(__name__)

SOURCE = "llm"

# relation as the LLM names it (chunk-graph-rag.md) -> relationship type in ontology.yaml
RELATION_TYPES: dict[str, str] = {
    "references": "REFERENCES",
    "elaborates": "ELABORATES",
    "depends_on": "DEPENDS_ON",
    "contradicts": "CONTRADICTS",
    "part_of": "PART_OF",
    "similar_to": "SIMILAR_TO",
    "sequence": "SEQUENCE",
    "caused_by": "CAUSED_BY",
}

PROMPT = """You are a knowledge graph extractor. Identify relationships between the text chunks \
below. Use only the chunk ids given in square brackets.

For each relationship output an edge with:
- "source": the source chunk id
- "target": the target chunk id (never the same as source)
- "relation": one of references, elaborates, depends_on, contradicts, part_of, similar_to, \
sequence, caused_by
- "weight": your confidence, a number greater than 0.0 and at most 1.0
- "description": one sentence saying why the relationship exists

Relation meanings (source -> target):
- references: source cites or mentions content from target
- elaborates: source gives more detail on target's topic
- depends_on: source assumes knowledge from target (target is the prerequisite)
- contradicts: source conflicts with target
- part_of: source is a component or subset of target
- similar_to: source and target cover overlapping topics
- sequence: source follows target in logical order
- caused_by: source is a consequence of target (target is the cause)

Output ONLY JSON of this form:
{"edges":[{"source":"id","target":"id","relation":"type","weight":0.0,"description":"why"}]}
If there are no relationships, output {"edges":[]}

Chunks:
"""


@dataclass(frozen=True)
class GraphExtractionOptions:
    """The ingestion options of chunk-graph-rag.md, with its defaults."""

    graph_batch_size: int = 5
    graph_batch_overlap: int = 0
    graph_extraction_workers: int = 3
    min_edge_weight: float = 0.0  # 0: no filter
    max_edges_per_chunk: int = 0  # 0: unlimited
    sequence_edges: bool = False

    def __post_init__(self) -> None:
        if self.graph_batch_size < 2:
            raise ValueError("graph_batch_size must be at least 2")
        if not 0 <= self.graph_batch_overlap < self.graph_batch_size:
            raise ValueError("graph_batch_overlap must be in [0, graph_batch_size)")
        if self.graph_extraction_workers < 1:
            raise ValueError("graph_extraction_workers must be at least 1")


class ChatClient(Protocol):
    model: str

    def complete(self, prompt: str) -> str: ...


class OpenAIChatClient:
    """One-shot completions from an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str = "", timeout: float = 120.0
    ) -> None:
        self.url = endpoint_url(base_url, "/chat/completions")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def complete(self, prompt: str) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
        }
        started = time.perf_counter()
        with TRACER.start_as_current_span(f"chat {self.model}", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": self.model}) as span:
            try:
                response = self._client.post(self.url, json=body)
                response.raise_for_status()
                answer = response.json()
                text = str(answer["choices"][0]["message"]["content"])
            except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as e:
                observe_model_call("chat", self.model, 0, 0, 0.0,
                                   time.perf_counter() - started, False)
                raise Unavailable(f"chat endpoint {self.url} failed: {e}") from e
            usage = answer.get("usage") or {}
            sent, got = (int(usage.get("prompt_tokens") or 0),
                         int(usage.get("completion_tokens") or 0))
            span.set_attributes({"gen_ai.usage.input_tokens": sent,
                                 "gen_ai.usage.output_tokens": got})
        observe_model_call("chat", self.model, sent, got, 0.0,
                           time.perf_counter() - started, True)
        return text


def make_chat_client(settings: Settings) -> OpenAIChatClient | None:
    """The chat client when ``CHAT_URL`` is set; ``None`` means deterministic edges only."""
    if not settings.chat_url:
        return None
    return OpenAIChatClient(settings.chat_url, settings.chat_model)


@dataclass(frozen=True)
class Batch:
    batch_id: str
    chunks: tuple[NodeRecord, ...]


@dataclass
class ExtractionResult:
    edges: list[EdgeRecord] = field(default_factory=list)
    batches: int = 0
    failed_batches: list[str] = field(default_factory=list)


def make_batches(chunks: Sequence[NodeRecord], size: int, overlap: int = 0) -> list[Batch]:
    """Sliding windows of ``size`` chunks advancing by ``size - overlap``; each holds >= 2."""
    stride = size - overlap
    batches: list[Batch] = []
    for start in range(0, len(chunks), stride):
        window = tuple(chunks[start : start + size])
        if len(window) >= 2:
            digest = hashlib.sha1("\n".join(c.ceid for c in window).encode()).hexdigest()
            batches.append(Batch(f"b{len(batches)}-{digest[:8]}", window))
        if start + size >= len(chunks):
            break
    return batches


def build_prompt(batch: Batch) -> str:
    lines = [f"[{c.ceid}]: {' '.join(str(c.props.get('text', '')).split())}" for c in batch.chunks]
    return PROMPT + "\n".join(lines) + "\n"


def _json_object(content: str) -> dict[str, Any]:
    """The JSON object in an LLM reply, tolerating Markdown fences around it."""
    raw = content.strip()
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        start, end = raw.find("{"), raw.rfind("}")
        if start < 0 or end <= start:
            raise
        parsed = json.loads(raw[start : end + 1])
    if not isinstance(parsed, dict) or not isinstance(parsed.get("edges"), list):
        raise ValueError('reply is not an object with an "edges" list')
    return parsed


def _valid_edge(item: Any, ids: set[str]) -> tuple[str, str, str, float, str] | None:
    if not isinstance(item, dict):
        return None
    src, dst, weight = item.get("source"), item.get("target"), item.get("weight")
    rel = RELATION_TYPES.get(str(item.get("relation", "")).strip().lower())
    if src not in ids or dst not in ids or src == dst or rel is None:
        return None
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        return None
    if not 0.0 < float(weight) <= 1.0:
        return None
    return str(src), str(dst), rel, float(weight), str(item.get("description") or "")


def parse_edges(content: str, batch: Batch, model: str) -> list[EdgeRecord]:
    """Edges of one reply; raises ``ValueError`` when the reply is not the expected JSON."""
    ids = {c.ceid for c in batch.chunks}
    edges: list[EdgeRecord] = []
    for item in _json_object(content)["edges"]:
        valid = _valid_edge(item, ids)
        if valid is None:
            log.debug("graph extraction: batch %s: dropped invalid edge %r", batch.batch_id, item)
            continue
        src, dst, rel, weight, description = valid
        edges.append(
            EdgeRecord(
                type=rel,
                src=src,
                dst=dst,
                evidence_ref=f"llm:{model}:{batch.batch_id}",
                confidence=weight,
                weight=weight,
                source=SOURCE,
                props={"description": description} if description else {},
            )
        )
    return edges


def _run_batch(
    chat: ChatClient, batch: Batch, cancel: threading.Event | None
) -> list[EdgeRecord] | None:
    if cancel is not None and cancel.is_set():
        log.warning("graph extraction: cancelled, skipping batch %s", batch.batch_id)
        return None
    try:
        return parse_edges(chat.complete(build_prompt(batch)), batch, chat.model)
    except Unavailable as e:
        log.warning("graph extraction: batch %s: LLM call failed: %s", batch.batch_id, e)
    except ValueError as e:
        log.warning("graph extraction: batch %s: unparsable reply: %s", batch.batch_id, e)
    return None


def extract_graph_edges(
    chunks: Sequence[NodeRecord],
    chat: ChatClient,
    options: GraphExtractionOptions | None = None,
    cancel: threading.Event | None = None,
) -> ExtractionResult:
    """LLM edges among ``chunks`` (in the order given), deduplicated, not yet pruned."""
    opts = options or GraphExtractionOptions()
    batches = make_batches(chunks, opts.graph_batch_size, opts.graph_batch_overlap)
    result = ExtractionResult(batches=len(batches))
    if not batches:
        return result
    workers = min(opts.graph_extraction_workers, len(batches))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graph-extract") as pool:
        outcomes = list(pool.map(lambda b: _run_batch(chat, b, cancel), batches))
    for batch, edges in zip(batches, outcomes, strict=True):
        if edges is None:
            result.failed_batches.append(batch.batch_id)
        else:
            result.edges.extend(edges)
    result.edges = deduplicate_edges(result.edges)
    if result.failed_batches:
        log.warning(
            "graph extraction: %d of %d batches failed", len(result.failed_batches), len(batches)
        )
    return result


def _edge_order(edge: EdgeRecord) -> tuple[float, str, str, str]:
    return (-edge.weight, edge.src, edge.dst, edge.type)


def deduplicate_edges(edges: Iterable[EdgeRecord]) -> list[EdgeRecord]:
    """One edge per (source, target, relation): the highest weight (first one on ties)."""
    best: dict[tuple[str, str, str], EdgeRecord] = {}
    for edge in edges:
        key = (edge.src, edge.dst, edge.type)
        if key not in best or edge.weight > best[key].weight:
            best[key] = edge
    return sorted(best.values(), key=lambda e: (e.src, e.dst, e.type))


def prune_edges(
    edges: Iterable[EdgeRecord], min_weight: float = 0.0, max_per_chunk: int = 0
) -> list[EdgeRecord]:
    """Drop edges below ``min_weight``; keep the top ``max_per_chunk`` by weight per source."""
    kept = [e for e in edges if e.weight >= min_weight]
    if max_per_chunk > 0:
        by_source: dict[str, list[EdgeRecord]] = {}
        for edge in sorted(kept, key=_edge_order):
            by_source.setdefault(edge.src, []).append(edge)
        kept = [e for group in by_source.values() for e in group[:max_per_chunk]]
    return sorted(kept, key=lambda e: (e.src, e.dst, e.type))


def build_chunk_edges(
    chunks: Sequence[NodeRecord],
    options: GraphExtractionOptions | None = None,
    chat: ChatClient | None = None,
    cancel: threading.Event | None = None,
) -> ExtractionResult:
    """Sequence edges (if enabled) plus LLM edges (if ``chat`` is given), deduplicated, pruned."""
    opts = options or GraphExtractionOptions()
    result = ExtractionResult()
    if chat is not None:
        result = extract_graph_edges(chunks, chat, opts, cancel)
    # deterministic edges first: on equal weight the duplicate with their evidence is kept
    edges = build_sequence_edges(chunks) if opts.sequence_edges else []
    edges.extend(result.edges)
    result.edges = prune_edges(
        deduplicate_edges(edges), opts.min_edge_weight, opts.max_edges_per_chunk
    )
    return result
