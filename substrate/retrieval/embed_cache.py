"""A bounded in-process memo of text embeddings: the reranker sees the same entity and chunk
texts again and again, and MiniLM on 2 CPU cores costs ~15 ms a text. Vectors are kept as
float64 numpy rows and handed out as one matrix (a row per text): the reranker's cosines then
need no conversion of 384 Python floats per text on the request path."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

EmbedMany = Callable[[list[str]], list[list[float]]]
Matrix = npt.NDArray[np.float64]


class EmbeddingMemo:
    def __init__(self, embed: EmbedMany, max_items: int = 20_000) -> None:
        self._embed = embed
        self._max = max_items
        self._items: OrderedDict[str, npt.NDArray[np.float64]] = OrderedDict()
        self._lock = threading.Lock()

    def has(self, texts: Sequence[str]) -> bool:
        """Whether every text is remembered (embedding them needs no model call)."""
        with self._lock:
            return all(t in self._items for t in texts)

    def __call__(self, texts: Sequence[str]) -> Matrix:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._items))
        if missing:
            vectors = self._embed(missing)
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    self._items[text] = np.asarray(vector, dtype=np.float64)
                while len(self._items) > self._max:
                    self._items.popitem(last=False)
        with self._lock:
            for t in texts:
                self._items.move_to_end(t)
            rows = [self._items[t] for t in texts]
        return np.stack(rows) if rows else np.empty((0, 0))
