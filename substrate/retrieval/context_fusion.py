"""Context fusion (graphrag-orchestrator-architecture.md): dedup, conflicts, token budget.

"Deduplicate similar content · Detect conflicting information · Compress to token budget."
What each step does here:

* Near-duplicates: Jaccard similarity of word shingles (``|A ∩ B| / |A ∪ B|``, lower-cased
  ``\\w+`` words, ``shingle`` words each, default 1) at or above ``threshold`` (default 0.85).
  Items are visited best score first, so the best-scored copy survives; the dropped id is
  reported with the id it duplicates. Two statements about one (subject, predicate) with
  different objects are never merged, however alike their text ("checkout primary owner
  team-a" vs "... team-b") — different facts, possibly a conflict, never a duplicate.
* Conflicts: items carrying ``subject``/``predicate``/``object`` where the predicate is
  single-valued (``single_valued: true`` in ontology.yaml: PRIMARY_OWNER, SUPERSEDES) and two
  or more objects are asserted. Every value comes back with its evidence; nothing is
  resolved (knowledge-substrate.txt: "conflicts surface, never silenced"). Conflicts are
  computed over all input items, before dedup and the budget cut, so every value keeps all
  its evidence even if an item carrying it is dropped.
* Budget: tokens are estimated as ``max(ceil(words × 1.3), ceil(chars / 4))`` — the larger of
  the two usual rules of thumb, so the estimate errs high. Items are kept best score first
  while they fit; the first that does not fit is cut at a word boundary when at least
  ``min_partial_tokens`` remain, and everything after it is dropped. ``truncated`` is True
  whenever anything was cut or dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .bundle import ConflictMarker, ConflictValue

ELLIPSIS = " …"


@dataclass(frozen=True)
class ContextItem:
    id: str
    text: str
    score: float
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    evidence_ref: str = ""
    source: str = ""
    confidence: float | None = None


@dataclass(frozen=True)
class FusedContext:
    items: tuple[ContextItem, ...]
    duplicates: tuple[tuple[str, str], ...]  # (dropped id, id of the copy kept)
    conflicts: tuple[ConflictMarker, ...]
    truncated: bool
    tokens: int
    dropped: tuple[str, ...]  # ids cut by the budget
    partial: tuple[str, ...]  # ids whose text was shortened to fit


def single_valued_predicates(ontology: Mapping[str, Any]) -> frozenset[str]:
    """Relationship types marked ``single_valued: true`` in a parsed ontology.yaml."""
    rels = ontology.get("relationships") or {}
    return frozenset(name for name, spec in rels.items() if (spec or {}).get("single_valued"))


def estimate_tokens(text: str) -> int:
    return max(math.ceil(len(text.split()) * 1.3), math.ceil(len(text) / 4))


def shingles(text: str, size: int = 1) -> frozenset[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    if len(words) < size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i: i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0.0 when either side is empty (no words, nothing to compare)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _ranked(items: Iterable[ContextItem]) -> list[ContextItem]:
    return sorted(items, key=lambda i: (-i.score, i.id))


def _disagree(a: ContextItem, b: ContextItem) -> bool:
    return (a.subject is not None and a.predicate is not None
            and (a.subject, a.predicate) == (b.subject, b.predicate) and a.object != b.object)


def dedupe(
    items: Iterable[ContextItem], threshold: float = 0.85, shingle: int = 1
) -> tuple[list[ContextItem], list[tuple[str, str]]]:
    """Kept items (best score first) and ``(dropped, kept)`` id pairs."""
    kept: list[tuple[ContextItem, frozenset[tuple[str, ...]]]] = []
    dropped: list[tuple[str, str]] = []
    for item in _ranked(items):
        sh = shingles(item.text, shingle)
        twin = next((k for k, ksh in kept
                     if not _disagree(item, k) and jaccard(sh, ksh) >= threshold), None)
        if twin is None:
            kept.append((item, sh))
        else:
            dropped.append((item.id, twin.id))
    return [k for k, _ in kept], dropped


def find_conflicts(
    items: Iterable[ContextItem], single_valued: Collection[str]
) -> tuple[ConflictMarker, ...]:
    groups: dict[tuple[str, str], dict[str, list[ContextItem]]] = {}
    for item in items:
        if (item.subject and item.predicate and item.predicate in single_valued
                and item.object is not None):
            by_value = groups.setdefault((item.subject, item.predicate), {})
            by_value.setdefault(item.object, []).append(item)
    markers = []
    for (subject, predicate), by_value in sorted(groups.items()):
        if len(by_value) < 2:
            continue
        values = tuple(
            ConflictValue(value, tuple(sorted({i.evidence_ref for i in its if i.evidence_ref})),
                          max((i.confidence for i in its if i.confidence is not None),
                              default=None))
            for value, its in sorted(by_value.items()))
        markers.append(ConflictMarker(subject, predicate, values))
    return tuple(markers)


def _cut(text: str, budget: int) -> str:
    """The longest word prefix of ``text`` that, with an ellipsis, fits ``budget`` tokens."""
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(" ".join(words[:mid]) + ELLIPSIS) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + ELLIPSIS if lo else ""


def fit_budget(
    items: Sequence[ContextItem], max_tokens: int, min_partial_tokens: int = 32
) -> tuple[list[ContextItem], list[str], list[str], int]:
    """(kept, dropped ids, shortened ids, tokens used) for items already in rank order."""
    kept: list[ContextItem] = []
    used = 0
    for n, item in enumerate(items):
        cost = estimate_tokens(item.text)
        if used + cost <= max_tokens:
            kept.append(item)
            used += cost
            continue
        rest = max_tokens - used
        cut = _cut(item.text, rest) if rest >= min_partial_tokens else ""
        if cut:
            kept.append(replace(item, text=cut))
            used += estimate_tokens(cut)
            return kept, [i.id for i in items[n + 1:]], [item.id], used
        return kept, [i.id for i in items[n:]], [], used
    return kept, [], [], used


def fuse_context(
    items: Iterable[ContextItem],
    *,
    max_tokens: int,
    single_valued: Collection[str] = frozenset(),
    threshold: float = 0.85,
    shingle: int = 1,
    min_partial_tokens: int = 32,
) -> FusedContext:
    """Dedup, surface conflicts, then fit to ``max_tokens``; see the module docstring."""
    everything = list(items)
    kept, duplicates = dedupe(everything, threshold, shingle)
    conflicts = find_conflicts(everything, single_valued)
    fitted, dropped, partial, used = fit_budget(kept, max_tokens, min_partial_tokens)
    return FusedContext(tuple(fitted), tuple(duplicates), conflicts,
                        bool(dropped or partial), used, tuple(dropped), tuple(partial))
