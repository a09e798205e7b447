"""Text embedders behind neo4j-graphrag's ``Embedder`` interface.

Two implementations, picked by :func:`make_embedder` from the settings:

* :class:`LocalMiniLMEmbedder` — all-MiniLM-L6-v2 as ONNX (see :mod:`substrate.local_model`),
  run in-process on onnxruntime's CPU provider. No PyTorch; nothing is fetched from a hub.
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

import httpx
import numpy as np
from neo4j_graphrag.embeddings.base import Embedder

from substrate import local_model
from substrate.errors import StackError, Unavailable
from substrate.settings import Settings

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
DEFAULT_BATCH_SIZE = 64
MAX_TOKENS = 256  # the model card's max_seq_length


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
    """all-MiniLM-L6-v2 as ONNX on onnxruntime's CPU provider; loaded once, on first use.

    Same pipeline as sentence-transformers' model card: WordPiece tokens truncated at 256,
    mean pooling over the attention mask, L2 normalisation.
    """

    _lock = threading.Lock()
    _models: dict[Path, _OnnxMiniLM] = {}

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__()
        self.settings = settings or Settings.from_env()
        self.dimensions = MINILM_DIM
        self.model_id = f"local:{MINILM_NAME}:{MINILM_DIM}"

    def model_dir(self) -> Path:
        return local_model.model_dir(self.settings)

    def model(self) -> _OnnxMiniLM:
        """The shared model for this state directory, loaded on first call."""
        with self._lock:
            key = self.model_dir()
            loaded = self._models.get(key)
            if loaded is None:
                loaded = _OnnxMiniLM(local_model.install(self.settings))
                self._models[key] = loaded
            return loaded

    def embed_documents(
        self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> list[list[float]]:
        if not texts:
            return []
        model = self.model()
        rows: list[list[float]] = []
        for start in range(0, len(texts), batch_size):
            rows.extend(model.encode(list(texts[start : start + batch_size])).tolist())
        return rows


class _OnnxMiniLM:
    """One onnxruntime session and its tokenizer (both thread-safe for inference)."""

    def __init__(self, directory: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = min(4, os.cpu_count() or 1)
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}
        dim = self.session.get_outputs()[0].shape[-1]
        if dim != MINILM_DIM:
            raise Unavailable(f"local {MINILM_NAME} has {dim} dimensions, expected {MINILM_DIM}")

    def encode(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: np.ndarray = pooled / np.clip(norms, 1e-12, None)
        return out


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
    return LocalMiniLMEmbedder(settings)
