from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from neo4j_graphrag.embeddings.base import Embedder

from substrate import local_model
from substrate.embeddings import (
    LocalMiniLMEmbedder,
    OpenAIEmbedder,
    endpoint_url,
    make_embedder,
)
from substrate.errors import StackError, Unavailable
from substrate.settings import Settings
from tests.support.openai_stub_server import OpenAIStubServer

QUERY = "payment card processing"
BILLING = "The billing service charges the customer's credit card and settles card payments."
LOGGING = "Application logs are shipped as JSON lines to the central logging cluster."


@pytest.fixture(scope="module")
def local() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder()


def test_local_embedder_ranks_card_payments_above_logging(local: LocalMiniLMEmbedder) -> None:
    q = np.array(local.embed_query(QUERY))
    docs = np.array(local.embed_documents([LOGGING, BILLING]))
    logging_score, billing_score = docs @ q
    assert billing_score > logging_score + 0.2


def test_local_embedder_shape_and_identity(local: LocalMiniLMEmbedder) -> None:
    assert isinstance(local, Embedder)
    assert local.model_id == "local:all-MiniLM-L6-v2:384" and local.dimensions == 384
    vectors = local.embed_documents([QUERY, BILLING], batch_size=1)
    assert [len(v) for v in vectors] == [384, 384]
    assert all(math.isclose(float(np.linalg.norm(v)), 1.0, rel_tol=1e-4) for v in vectors)
    assert np.allclose(local.embed_query(QUERY), vectors[0], atol=1e-5)
    assert local.embed_documents([]) == []


def test_local_model_is_loaded_once_from_the_verified_files(local: LocalMiniLMEmbedder) -> None:
    assert LocalMiniLMEmbedder().model() is local.model()
    assert local_model.verify(local.settings) == local.model_dir()
    assert (local.model_dir() / "model.onnx").is_file()


def test_local_model_is_cpu_only_without_torch() -> None:
    import importlib.util

    assert importlib.util.find_spec("torch") is None
    assert importlib.util.find_spec("sentence_transformers") is None


def test_tampered_model_file_is_refused(tmp_path: Path) -> None:
    settings = Settings.from_env({"SUBSTRATE_HOME": str(tmp_path)})
    target = local_model.model_dir(settings)
    target.mkdir(parents=True)
    for name in local_model.MINILM.files:
        (target / name).write_bytes(b"not the model")
    with pytest.raises(StackError, match="sha256"):
        local_model.verify(settings)


def test_missing_model_names_its_fix(tmp_path: Path) -> None:
    settings = Settings.from_env({"SUBSTRATE_HOME": str(tmp_path)})
    with pytest.raises(StackError, match="make venv"):
        local_model.verify(settings)


@pytest.mark.parametrize(
    "base", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/embeddings"]
)
def test_endpoint_url(base: str) -> None:
    assert endpoint_url(base, "/embeddings") == "http://h:1/v1/embeddings"


def test_openai_embedder_against_compatible_server() -> None:
    texts = [QUERY, BILLING, LOGGING, "card", "payment"]
    with OpenAIStubServer(embedding_dim=32) as server:
        embedder = OpenAIEmbedder(server.base_url + "/v1", "stub-embed", 32)
        vectors = embedder.embed_documents(texts, batch_size=2)
        single = embedder.embed_query("card")
        embedder.close()
    calls = [body for path, body in server.requests if path == "/v1/embeddings"]
    assert [len(b["input"]) for b in calls] == [2, 2, 1, 1]
    assert all(b["model"] == "stub-embed" for b in calls)
    assert embedder.model_id == "openai:stub-embed:32"
    assert len(vectors) == 5 and all(len(v) == 32 for v in vectors)
    assert np.allclose(vectors[3], single), "order is kept across batches"


def test_openai_embedder_rejects_wrong_dimensions() -> None:
    with OpenAIStubServer(embedding_dim=16) as server:
        embedder = OpenAIEmbedder(server.base_url, "stub-embed", 384)
        with pytest.raises(Unavailable, match="16 dimensions"):
            embedder.embed_query("x")
        embedder.close()


def test_openai_embedder_unreachable_endpoint_is_unavailable() -> None:
    with OpenAIStubServer() as server:
        url = server.base_url
    embedder = OpenAIEmbedder(url, "m", 384, timeout=2.0)
    with pytest.raises(Unavailable):
        embedder.embed_query("x")
    embedder.close()


def test_make_embedder_picks_by_settings() -> None:
    remote = make_embedder(Settings.from_env({"EMBEDDING_URL": "http://h:1", "EMBEDDING_DIM": "8"}))
    assert isinstance(remote, OpenAIEmbedder) and remote.dimensions == 8
    remote.close()
    assert isinstance(make_embedder(Settings.from_env({})), LocalMiniLMEmbedder)
    with pytest.raises(StackError):
        make_embedder(Settings.from_env({"EMBEDDING_DIM": "768"}))
