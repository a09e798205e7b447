"""The local reranker's arithmetic, and HttpReranker against a small /rerank server started here."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from substrate.retrieval.rerank import (
    HttpReranker,
    LocalReranker,
    blend_scores,
    bm25_scores,
    cosine,
    make_reranker,
    parse_rerank_reply,
    terms,
)
from substrate.settings import Settings

VOCAB = ["payment", "service", "card", "logging", "auth", "token", "kafka"]


def bag_of_words(texts: Sequence[str]) -> list[list[float]]:
    """A deterministic stand-in embedder: counts over a fixed vocabulary."""
    return [[float(terms(t).count(w)) for w in VOCAB] for t in texts]


DOCS = ["Structured logging setup", "PaymentService charges the card", "Auth token refresh"]


# --- local ----------------------------------------------------------------------------------


def test_terms_split_camel_case_and_separators() -> None:
    assert terms("PaymentService calls auth_api and card-vault") == [
        "payment", "service", "calls", "auth", "api", "and", "card", "vault"]


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 2.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [1.0, 0.0]) == pytest.approx(1 / math.sqrt(2))
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(ValueError):
        cosine([1.0], [1.0, 2.0])


def test_bm25_hand_computed() -> None:
    scores = bm25_scores("c", ["a b", "a c c"])
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    tf_part = 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / 2.5))
    assert scores == [0.0, pytest.approx(idf * tf_part)]
    assert bm25_scores("x", []) == []
    assert bm25_scores("zzz", ["a", "b"]) == [0.0, 0.0]


def test_blend_scores_hand_computed() -> None:
    scores = blend_scores("card", ["card card", "logging"], [1.0, 0.0],
                          [[1.0, 0.0], [-1.0, 0.0]], semantic_weight=0.7)
    # doc 0: cosine 1, lexical best (1.0); doc 1: cosine -1 clipped to 0, no lexical match
    assert scores == [pytest.approx(1.0), pytest.approx(0.0)]
    half = blend_scores("card", ["card", "x"], [1.0, 1.0], [[1.0, 0.0], [1.0, 1.0]], 0.5)
    assert half == [pytest.approx(0.5 / math.sqrt(2) + 0.5), pytest.approx(0.5)]


def test_local_reranker_orders_and_cuts() -> None:
    local = LocalReranker(bag_of_words)
    ranked = local.rank("payment card", DOCS)
    assert ranked[0].index == 1
    assert [r.index for r in local.rank("payment card", DOCS, top_k=1)] == [1]
    assert local.rank("q", []) == ()
    # ties keep the fused order
    assert [r.index for r in local.rank("kafka", ["a", "b", "c"])] == [0, 1, 2]
    with pytest.raises(ValueError):
        LocalReranker(bag_of_words, semantic_weight=2.0)


def test_local_reranker_async_outcome() -> None:
    outcome = asyncio.run(LocalReranker(bag_of_words).rerank("auth token", DOCS, top_k=2))
    assert outcome.backend == "local" and outcome.fallback_reason is None
    assert outcome.results[0].index == 2 and len(outcome.results) == 2


def test_remembered_embeddings_are_ranked_on_the_loop_in_the_same_order() -> None:
    """Every text's embedding remembered: no thread hop; otherwise embedding runs in a
    worker thread. The order is the same either way."""
    callers: list[int] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        callers.append(threading.get_ident())
        return bag_of_words(texts)

    expected = LocalReranker(bag_of_words).rank("auth token", DOCS, top_k=2)
    for remembered, in_place in ((True, True), (False, False)):
        callers.clear()
        local = LocalReranker(embed, remembered=lambda texts, r=remembered: r)
        outcome = asyncio.run(local.rerank("auth token", DOCS, top_k=2))
        assert outcome.results == expected and outcome.backend == "local"
        assert (callers == [threading.get_ident()]) is in_place, callers


# --- reply parsing --------------------------------------------------------------------------


def test_parse_rerank_reply_shapes() -> None:
    assert parse_rerank_reply({"results": [{"index": 1, "relevance_score": 0.9},
                                           {"index": 0, "relevance_score": 0.1}]}, 2) == {
        1: 0.9, 0: 0.1}
    assert parse_rerank_reply([{"index": 0, "score": 0.3}], 2) == {0: 0.3}
    for bad in [{"results": [{"index": 5, "score": 1}]}, {"nope": []}, "x",
                [{"index": 0, "score": 1}, {"index": 0, "score": 2}],
                [{"index": 0, "score": float("nan")}], [{"score": 1}]]:
        with pytest.raises((ValueError, KeyError, TypeError)):
            parse_rerank_reply(bad, 2)


# --- HTTP -----------------------------------------------------------------------------------


class RerankHandler(BaseHTTPRequestHandler):
    requests: list[tuple[str, dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: str) -> None:
        data = body.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout case)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append((self.path, body))
        mode = self.path.strip("/").split("/")[0]
        docs = body.get("documents") or body.get("texts") or []
        # relevance: documents that mention "card" first, then by position
        scored = [{"index": i, "relevance_score": (1.0 if "card" in d else 0.1) - i / 100}
                  for i, d in enumerate(docs)]
        if mode == "ok":
            top = body.get("top_n")
            scored.sort(key=lambda r: -float(r["relevance_score"]))
            self._reply(200, json.dumps({"results": scored[:top] if top else scored}))
        elif mode == "tei":
            self._reply(200, json.dumps([{"index": r["index"], "score": r["relevance_score"]}
                                         for r in scored]))
        elif mode == "fail":
            self._reply(500, '{"error": "model not loaded"}')
        elif mode == "slow":
            time.sleep(1.0)
            self._reply(200, json.dumps({"results": scored}))
        elif mode == "bad":
            self._reply(200, json.dumps({"results": [{"index": 99, "relevance_score": 1}]}))
        else:
            self._reply(200, "<html>not json</html>")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), RerankHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def http(url: str, **kw: Any) -> HttpReranker:
    return HttpReranker(url, LocalReranker(bag_of_words), **kw)


def test_http_reranker_uses_the_endpoint(server: str) -> None:
    outcome = asyncio.run(http(f"{server}/ok", model="bge-reranker-v2-m3").rerank(
        "payment card", DOCS, top_k=2))
    assert outcome.backend == "http" and outcome.fallback_reason is None
    assert [r.index for r in outcome.results] == [1, 0]
    assert [r.score for r in outcome.results] == pytest.approx([0.99, 0.1])
    path, body = RerankHandler.requests[-1]
    assert path == "/ok/rerank"
    assert body == {"query": "payment card", "documents": DOCS, "model": "bge-reranker-v2-m3",
                    "top_n": 2}


def test_http_reranker_tei_style(server: str) -> None:
    reranker = http(f"{server}/tei/rerank", payload_style="texts")
    outcome = asyncio.run(reranker.rerank("card", DOCS, top_k=1))
    assert outcome.backend == "http" and [r.index for r in outcome.results] == [1]
    assert RerankHandler.requests[-1][1] == {"query": "card", "texts": DOCS}


@pytest.mark.parametrize(
    ("mode", "error"),
    [("fail", "HTTPStatusError"), ("slow", "ReadTimeout"), ("bad", "ValueError"),
     ("html", "JSONDecodeError")],
)
def test_a_failing_endpoint_falls_back_to_local_and_says_so(
    server: str, mode: str, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    outcome = asyncio.run(http(f"{server}/{mode}", timeout=0.2).rerank("payment card", DOCS))
    assert outcome.backend == "local"
    assert outcome.fallback_reason is not None and error in outcome.fallback_reason
    assert "used the local reranker" in outcome.fallback_reason
    assert outcome.results == LocalReranker(bag_of_words).rank("payment card", DOCS)
    assert "used the local reranker" in caplog.text


def test_an_unreachable_endpoint_falls_back() -> None:
    outcome = asyncio.run(http("http://127.0.0.1:9", timeout=0.5).rerank("card", DOCS))
    assert outcome.backend == "local" and "ConnectError" in (outcome.fallback_reason or "")


def test_an_injected_client_is_used(server: str) -> None:
    async def run() -> tuple[int, ...]:
        async with httpx.AsyncClient() as client:
            outcome = await http(f"{server}/ok", client=client).rerank("card", DOCS)
        return tuple(r.index for r in outcome.results)

    assert asyncio.run(run()) == (1, 0, 2)


def test_no_documents_no_request(server: str) -> None:
    before = len(RerankHandler.requests)
    assert asyncio.run(http(f"{server}/ok").rerank("q", [])).results == ()
    assert len(RerankHandler.requests) == before


def test_make_reranker_follows_settings() -> None:
    local = make_reranker(Settings.from_env({}), bag_of_words)
    assert isinstance(local, LocalReranker)
    remote = make_reranker(Settings.from_env({"RERANK_URL": "http://gpu:8004/"}), bag_of_words)
    assert isinstance(remote, HttpReranker) and remote.url == "http://gpu:8004/rerank"
    assert http("http://gpu:8004/v1/rerank").url == "http://gpu:8004/v1/rerank"


# --- tie-break mode (the default with a fused order) --------------------------------------
def test_tiebreak_keeps_the_fused_order_and_orders_only_ties() -> None:
    local = LocalReranker(bag_of_words)
    docs = ["Structured logging setup", "Auth token refresh", "PaymentService charges the card",
            "Kafka topics"]
    prior = [0.033, 0.016, 0.016, 0.010]  # 1 and 2 are tied in the fused list
    ranked = local.rank("payment card", docs, prior=prior)
    assert [r.index for r in ranked] == [0, 2, 1, 3]  # the tie goes to the relevant one
    assert [r.index for r in local.rank("payment card", docs, top_k=2, prior=prior)] == [0, 2]


def test_tiebreak_without_ties_embeds_nothing() -> None:
    calls: list[int] = []

    def counting(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return bag_of_words(texts)

    ranked = LocalReranker(counting).rank("payment", DOCS, prior=[0.3, 0.2, 0.1])
    assert [r.index for r in ranked] == [0, 1, 2] and calls == []


def test_blend_mode_and_no_prior_rank_by_relevance() -> None:
    prior = [0.3, 0.2, 0.1]
    blend = LocalReranker(bag_of_words, mode="blend")
    assert blend.rank("payment card", DOCS, prior=prior)[0].index == 1
    assert LocalReranker(bag_of_words).rank("payment card", DOCS)[0].index == 1
    with pytest.raises(ValueError, match="one score per document"):
        LocalReranker(bag_of_words).rank("q", DOCS, prior=[1.0])


def test_relevance_of_the_same_question_and_texts_is_remembered() -> None:
    calls: list[int] = []

    def counting(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return bag_of_words(texts)

    local = LocalReranker(counting)
    first = local.relevance("payment card", DOCS)
    assert local.relevance("payment card", list(DOCS)) == first and calls == [len(DOCS) + 1]
    assert first == LocalReranker(bag_of_words).relevance("payment card", DOCS)
    local.relevance("payment", DOCS)  # another question: scored afresh
    local.relevance("payment card", DOCS[:2])  # other texts: scored afresh
    assert calls == [len(DOCS) + 1, len(DOCS) + 1, 3]


def test_relevance_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from substrate.retrieval import rerank

    monkeypatch.setattr(rerank, "RELEVANCE_MEMO", 2)
    local = LocalReranker(bag_of_words)
    for q in ("a", "b", "c"):
        local.relevance(q, DOCS)
    assert not local.scored("a", DOCS) and local.scored("b", DOCS) and local.scored("c", DOCS)
