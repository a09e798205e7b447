from __future__ import annotations

from substrate.retrieval.embed_cache import EmbeddingMemo


def test_memo_embeds_each_text_once_and_keeps_order() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[float(len(t))] for t in texts]

    memo = EmbeddingMemo(embed, max_items=3)
    assert memo(["aa", "b", "aa"]).tolist() == [[2.0], [1.0], [2.0]]
    assert memo(["b", "ccc"]).tolist() == [[1.0], [3.0]]
    assert memo([]).shape == (0, 0)
    assert calls == [["aa", "b"], ["ccc"]]
    memo(["dddd"])  # evicts the least recently used ("aa")
    memo(["aa"])
    assert calls[-1] == ["aa"]


def test_has_tells_whether_every_text_is_remembered() -> None:
    memo = EmbeddingMemo(lambda texts: [[1.0] for _ in texts], max_items=2)
    assert memo.has([]) and not memo.has(["a"])
    memo(["a", "b"])
    assert memo.has(["a", "b", "a"]) and not memo.has(["a", "c"])
    memo(["c"])  # evicts the least recently used ("a")
    assert not memo.has(["a"]) and memo.has(["b", "c"])
