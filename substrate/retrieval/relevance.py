"""Relevance of a stored summary to a question without a model: cosine similarity of the
embeddings blended with keyword overlap (the share of the question's content words the
summary contains). Used by the RAPTOR walk and the map step of global GraphRAG."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

EMBEDDING_SHARE = 0.75
_WORD = re.compile(r"[a-z0-9][a-z0-9\-]+")
_STOP_TEXT = """
the a an and or of to in on for with by from at as is are was were be been what which who whom
whose how why when where does do did our their its it this that these those there all any each
most more many much some have has had not no can could would should will into onto over under
about across between through than then them they we you your i me my us he she him her his
"""
STOPWORDS = frozenset(_STOP_TEXT.split())


def terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}


def keyword_overlap(query_terms: set[str], text: str) -> float:
    if not query_terms:
        return 0.0
    words = terms(text)
    hits = sum(1 for t in query_terms
               if t in words or t.rstrip("s") in words or f"{t}s" in words)
    return hits / len(query_terms)


def cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    x, y = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0


def relevance(query_vector: Sequence[float] | np.ndarray, query_terms: set[str],
              vector: Sequence[float] | np.ndarray | None, text: str) -> float:
    semantic = cosine(query_vector, vector) if vector is not None else 0.0
    return round(EMBEDDING_SHARE * semantic
                 + (1 - EMBEDDING_SHARE) * keyword_overlap(query_terms, text), 6)
