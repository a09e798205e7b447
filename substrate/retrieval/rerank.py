"""Reranking after RRF fusion (RSN-06): a rerank endpoint when configured, a local one otherwise.

``HttpReranker`` speaks the ``/rerank`` shape that TEI, vLLM, Jina and Cohere share for
bge-reranker-v2-m3 and friends: ``{"query": q, "documents": [...]}`` ->
``{"results": [{"index": i, "relevance_score": s}, ...]}`` (TEI's own ``{"texts": [...]}``
request and bare-list ``[{"index", "score"}]`` reply are accepted too: ``payload_style``).
Any failure — timeout, connection error, HTTP error status, a reply of the wrong shape —
falls back to the local reranker, and the outcome says so (``backend="local"`` plus
``fallback_reason``); nothing is raised to the caller for an endpoint that is down.

``LocalReranker`` is what runs with no model server. No registry package bundles
cross-encoder weights (PyPI's rerankers fetch them from a hub at run time; Maven Central's
``langchain4j-onnx-scoring`` wants the model files supplied), so the local relevance score
blends two signals of the bundled all-MiniLM-L6-v2 bi-encoder and the candidates' text:

* semantic — cosine of query and document embeddings from the local embedder
  (``embed(texts) -> vectors``), clipped to [0, 1];
* lexical — BM25 (k1 = 1.2, b = 0.75, Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``
  idf) of the query over the candidate set itself, divided by the best candidate's BM25 so it
  lies in [0, 1]. Terms are split on CamelCase and ``_``/``-`` so ``PaymentService`` meets
  "payment service". A bi-encoder blurs exact identifiers (service names, error codes, ADR
  numbers) that this signal keeps sharp.

``relevance = semantic_weight × semantic + (1 - semantic_weight) × lexical``, 0.7 / 0.3.

How it is used (``mode``), measured by ``tests/bench/bench_rerank.py`` (MRR@10 over the
question sets): ``"tiebreak"`` (the default) keeps the RRF order and lets relevance order only
the candidates RRF ties (equal fused scores, ``prior``); ``"blend"`` reorders by relevance
alone. Reordering by a bi-encoder lost to RRF by far (0.81 -> 0.12 MRR@10 on the demo set):
the answers to structural questions are graph neighbours (what checkout depends on), not
passages that resemble the question. Without ``prior`` (ranking ADR sentences, memories) it
orders by relevance.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import numpy as np
import numpy.typing as npt

from substrate.settings import Settings

log = logging.getLogger(__name__)

Vector = Sequence[float] | npt.NDArray[np.float64]
Vectors = Sequence[Sequence[float]] | npt.NDArray[np.float64]  # a row per text
Embed = Callable[[Sequence[str]], Vectors]
DEFAULT_TIMEOUT_SECONDS = 5.0
TERM_MEMO = 20_000  # documents whose term counts are remembered


@dataclass(frozen=True)
class RerankResult:
    index: int  # position in the documents passed in
    score: float


@dataclass(frozen=True)
class RerankOutcome:
    results: tuple[RerankResult, ...]  # best first
    backend: Literal["http", "local"]
    fallback_reason: str | None = None


def _order(scores: Sequence[float], top_k: int | None) -> tuple[RerankResult, ...]:
    ranked = sorted((RerankResult(i, s) for i, s in enumerate(scores)),
                    key=lambda r: (-r.score, r.index))
    return tuple(ranked if top_k is None else ranked[:top_k])


def cosine(a: Vector, b: Vector) -> float:
    if len(a) != len(b):
        raise ValueError("vectors differ in dimension")
    return cosines(a, np.asarray([b], dtype=np.float64))[0]


def cosines(query: Vector, vectors: Vectors) -> list[float]:
    """Cosine of ``query`` with each of ``vectors`` (0.0 for a zero vector), in one numpy
    pass: a Python loop over 384 dimensions cost ~70 µs per document on the request path."""
    if len(vectors) == 0:
        return []
    q = np.asarray(query, dtype=np.float64)
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2 or m.shape[1] != q.shape[0]:
        raise ValueError("vectors differ in dimension")
    norms = np.linalg.norm(m, axis=1) * np.linalg.norm(q)
    dots = m @ q
    return [float(d / n) if n else 0.0 for d, n in zip(dots.tolist(), norms.tolist(),
                                                        strict=True)]


def terms(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text).lower())


@functools.lru_cache(maxsize=TERM_MEMO)
def _term_counts(text: str) -> Counter[str]:
    """A document's term counts, remembered: the same candidate texts come back request after
    request (read only: shared between calls)."""
    return Counter(terms(text))


def bm25_scores(query: str, documents: Sequence[str], k1: float = 1.2,
                b: float = 0.75) -> list[float]:
    """BM25 of ``query`` against each document, statistics taken over ``documents``."""
    docs = [_term_counts(d) for d in documents]
    if not docs:
        return []
    avg_len = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    q_terms = set(terms(query))
    df = {t: sum(1 for d in docs if t in d) for t in q_terms}
    scores = []
    for d in docs:
        length = sum(d.values())
        s = 0.0
        for t in q_terms:
            tf = d.get(t, 0)
            if tf:
                idf = math.log(1.0 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))
        scores.append(s)
    return scores


def blend_scores(query: str, documents: Sequence[str], query_vector: Vector,
                 document_vectors: Vectors,
                 semantic_weight: float = 0.7) -> list[float]:
    """The local reranker's score for each document, given the embeddings (pure)."""
    lexical = bm25_scores(query, documents)
    top = max(lexical, default=0.0)
    semantic = cosines(query_vector, document_vectors)
    return [semantic_weight * min(1.0, max(0.0, sim))
            + (1.0 - semantic_weight) * (lex / top if top > 0 else 0.0)
            for sim, lex in zip(semantic, lexical, strict=True)]


def tiebreak_order(prior: Sequence[float], relevance: Sequence[float],
                   top_k: int | None) -> tuple[RerankResult, ...]:
    """The ``prior`` (fused) order; ``relevance`` orders only candidates of equal prior."""
    ranked = sorted(range(len(prior)),
                    key=lambda i: (-round(prior[i], 9), -relevance[i], i))
    results = tuple(RerankResult(i, relevance[i]) for i in ranked)
    return results if top_k is None else results[:top_k]


INLINE_MAX_DOCUMENTS = 64  # ranked on the event loop when their embeddings are remembered
RELEVANCE_MEMO = 1_024  # (query, documents) whose relevance a LocalReranker remembers


class LocalReranker:
    def __init__(self, embed: Embed, semantic_weight: float = 0.7,
                 mode: Literal["tiebreak", "blend"] = "tiebreak",
                 remembered: Callable[[Sequence[str]], bool] | None = None) -> None:
        """``remembered(texts)``: whether ``embed`` has every text already (no model call)."""
        if not 0.0 <= semantic_weight <= 1.0:
            raise ValueError("semantic_weight must be in [0, 1]")
        self._embed = embed
        self._remembered = remembered
        self.semantic_weight = semantic_weight
        self.mode = mode
        # the same question over the same texts (GET /memory of a service, a repeated search)
        # scores the same with this embedder: remembered, it costs a lookup, not ~0.15 ms of
        # embedding-memo reads, BM25 and cosines on the request path (oldest dropped first;
        # two threads may score one key at once, with the same result)
        self._scores: dict[tuple[str, tuple[str, ...]], tuple[float, ...]] = {}
        self._scores_lock = threading.Lock()

    def relevance(self, query: str, documents: Sequence[str]) -> list[float]:
        key = (query, tuple(documents))
        scores = self._scores.get(key)
        if scores is None:
            vectors = self._embed([query, *documents])
            scores = tuple(blend_scores(query, documents, vectors[0], vectors[1:],
                                        self.semantic_weight))
            with self._scores_lock:
                if len(self._scores) >= RELEVANCE_MEMO:
                    del self._scores[next(iter(self._scores))]
                self._scores[key] = scores
        return list(scores)

    def scored(self, query: str, documents: Sequence[str]) -> bool:
        """Whether the relevance of ``documents`` to ``query`` is remembered."""
        return (query, tuple(documents)) in self._scores

    def rank(self, query: str, documents: Sequence[str], top_k: int | None = None,
             prior: Sequence[float] | None = None) -> tuple[RerankResult, ...]:
        if not documents:
            return ()
        if prior is not None and len(prior) != len(documents):
            raise ValueError("prior needs one score per document")
        if self.mode == "blend" or prior is None:  # no fused order: rank by relevance
            return _order(self.relevance(query, documents), top_k)
        if len({round(p, 9) for p in prior}) == len(prior):  # no ties: nothing to embed
            return tiebreak_order(prior, [0.0] * len(prior), top_k)
        return tiebreak_order(prior, self.relevance(query, documents), top_k)

    async def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None,
                     prior: Sequence[float] | None = None) -> RerankOutcome:
        """Off the event loop: embedding is CPU work (a few documents whose embeddings are all
        remembered are ranked in place: a thread hop would cost more than the arithmetic)."""
        if len(documents) <= INLINE_MAX_DOCUMENTS and (
                self.scored(query, documents)
                or (self._remembered is not None and self._remembered([query, *documents]))):
            return RerankOutcome(self.rank(query, documents, top_k, prior), "local")
        results = await asyncio.to_thread(self.rank, query, documents, top_k, prior)
        return RerankOutcome(results, "local")


def parse_rerank_reply(payload: Any, n_documents: int) -> dict[int, float]:
    """``{"results": [{"index", "relevance_score"}]}`` or TEI's ``[{"index", "score"}]``."""
    rows = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(rows, list):
        raise ValueError("rerank reply has no result list")
    scores: dict[int, float] = {}
    for row in rows:
        index = int(row["index"])
        score = float(row["relevance_score"] if "relevance_score" in row else row["score"])
        if not 0 <= index < n_documents or index in scores or math.isnan(score):
            raise ValueError(f"rerank reply has a bad or repeated index {index}")
        scores[index] = score
    return scores


class HttpReranker:
    """A bge-reranker-style ``/rerank`` endpoint with the local reranker as fallback."""

    def __init__(
        self,
        url: str,
        fallback: LocalReranker,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        model: str | None = None,
        client: httpx.AsyncClient | None = None,
        payload_style: Literal["documents", "texts"] = "documents",
    ) -> None:
        self.url = url if url.rstrip("/").endswith("rerank") else url.rstrip("/") + "/rerank"
        self.fallback = fallback
        self.timeout = timeout
        self.model = model
        self.payload_style = payload_style
        self._client = client

    def _payload(self, query: str, documents: Sequence[str],
                 top_k: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, self.payload_style: list(documents)}
        if self.model:
            body["model"] = self.model
        if top_k is not None and self.payload_style == "documents":
            body["top_n"] = top_k
        return body

    async def _post(self, body: dict[str, Any]) -> Any:
        if self._client is not None:
            reply = await self._client.post(self.url, json=body, timeout=self.timeout)
            return reply.raise_for_status().json()
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            reply = await client.post(self.url, json=body)
            return reply.raise_for_status().json()

    async def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None,
                     prior: Sequence[float] | None = None) -> RerankOutcome:
        """The endpoint's order (a cross-encoder's relevance replaces the fused order)."""
        if not documents:
            return RerankOutcome((), "http")
        try:
            reply = await self._post(self._payload(query, documents, top_k))
            scores = parse_rerank_reply(reply, len(documents))
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            reason = (f"rerank endpoint {self.url} failed ({type(e).__name__}: {e}); "
                      "used the local reranker")
            log.warning(reason)
            local = await self.fallback.rerank(query, documents, top_k, prior)
            return RerankOutcome(local.results, "local", reason)
        ranked = sorted((RerankResult(i, s) for i, s in scores.items()),
                        key=lambda r: (-r.score, r.index))
        return RerankOutcome(tuple(ranked if top_k is None else ranked[:top_k]), "http")


def make_reranker(settings: Settings, embed: Embed,
                  remembered: Callable[[Sequence[str]], bool] | None = None,
                  ) -> HttpReranker | LocalReranker:
    """``RERANK_URL`` set: the endpoint (local fallback); empty: the local reranker alone."""
    local = LocalReranker(embed, remembered=remembered)
    if not settings.rerank_url:
        return local
    return HttpReranker(settings.rerank_url, local)
