"""Throughput of the local MiniLM embedder: ~1000 chunks of ~300 characters, batch 64.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_embeddings`` (or the file directly).
Writes the figures to ``$SUBSTRATE_HOME/bench/embeddings.json`` and prints them.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from substrate.embeddings import LocalMiniLMEmbedder
from substrate.settings import Settings

N_CHUNKS = 1000
CHUNK_CHARS = 300
BATCH_SIZE = 64

_VOCABULARY = (
    "service billing payment card invoice refund ledger queue retry timeout deploy "
    "cluster node replica index query cache token auth owner incident latency error "
    "rollback migration schema event stream consumer producer partition shard backup "
    "the a of to and in for with on by from is are was were be has have that this"
)
_WORDS = _VOCABULARY.split()


def synthetic_chunks(n: int = N_CHUNKS, chars: int = CHUNK_CHARS, seed: int = 7) -> list[str]:
    """``n`` deterministic pseudo-sentences of about ``chars`` characters each."""
    rng = random.Random(seed)
    chunks: list[str] = []
    for _ in range(n):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < chars:
            words.append(rng.choice(_WORDS))
        chunks.append((" ".join(words)[: chars - 1] + ".").capitalize())
    return chunks


def run() -> dict[str, Any]:
    import onnxruntime

    embedder = LocalMiniLMEmbedder()
    t0 = time.perf_counter()
    embedder.model()
    load_s = time.perf_counter() - t0
    texts = synthetic_chunks()
    embedder.embed_documents(texts[:BATCH_SIZE], batch_size=BATCH_SIZE)  # warm-up
    t0 = time.perf_counter()
    vectors = embedder.embed_documents(texts, batch_size=BATCH_SIZE)
    seconds = time.perf_counter() - t0
    assert len(vectors) == len(texts) and len(vectors[0]) == embedder.dimensions
    return {
        "benchmark": "local_embedder_throughput",
        "model_id": embedder.model_id,
        "runtime": f"onnxruntime {onnxruntime.__version__} (CPU)",
        "chunks": len(texts),
        "avg_chunk_chars": round(sum(map(len, texts)) / len(texts), 1),
        "batch_size": BATCH_SIZE,
        "seconds": round(seconds, 3),
        "chunks_per_s": round(len(texts) / seconds, 1),
        "model_load_s": round(load_s, 2),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main() -> None:
    figures = run()
    out = Settings.from_env().home / "bench" / "embeddings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(f"local embedder: {figures['chunks_per_s']} chunks/s -> {out}")


if __name__ == "__main__":
    main()
