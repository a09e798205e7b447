"""Find the services and datastores a piece of prose names.

Prose uses everyday words ("the user", "a search") that are also service names, so a word
only counts as a service mention when its *form* says it is one:

* it has a separator or a service suffix: ``checkout-service``, ``orders_db``, ``paymentsvc``;
* it is CamelCase: ``CheckoutService``;
* it is in backticks: `` `checkout` ``;
* it is followed by ``service``/``svc``/``api``/``app``/``server``: "payment service";
* it is the exact name of an Infrastructure entity (``kafka``, ``redis``);
* or the text is a title (``plain_words=True``), where the exact name of any entity counts.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from substrate.connectors.aliases import NameIndex, Resolution, normalise
from substrate.graph.records import EdgeRecord, slug

DOC_MENTION = 0.95

_TOKEN = re.compile(r"`?[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*`?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_SERVICE_WORDS = {"service", "services", "svc", "api", "app", "server"}
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Mention:
    """``surface`` (as written) on ``line`` resolves as ``resolution`` says."""

    surface: str
    line: int
    resolution: Resolution


def _is_strong(token: str) -> bool:
    if token.startswith("`") and token.endswith("`") and len(token) > 2:
        return True
    if "-" in token or "_" in token or _CAMEL.search(token):
        return True
    return normalise(token) != token.lower()


def _surfaces(text: str, plain_words: bool, index: NameIndex) -> Iterable[tuple[str, bool]]:
    """``(surface, strong)`` pairs; weak surfaces only count as exact names."""
    tokens = [m.group(0) for m in _TOKEN.finditer(text)]
    skip = False
    for i, token in enumerate(tokens):
        if skip:
            skip = False
            continue
        nxt = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
        bare = token.strip("`")
        if nxt in _SERVICE_WORDS and "`" not in token:
            skip = True
            yield f"{bare} {nxt}", True
        elif _is_strong(token):
            yield bare, True
        elif plain_words or _is_infra_name(bare, index):
            yield bare, False


def _is_infra_name(word: str, index: NameIndex) -> bool:
    res = index.resolve(word, "Infrastructure", fuzzy=False)
    return res.method == "exact"


def _service_shaped(surface: str) -> bool:
    """``payments-service``, ``CartSvc``, "payment service": a name that says it is a service."""
    last = surface.split()[-1].lower()
    return last in _SERVICE_WORDS or normalise(surface) != _NON_ALNUM.sub("", surface.lower())


def _resolve(index: NameIndex, surface: str, strong: bool) -> Resolution | None:
    if strong:
        res = index.resolve(surface, "Service" if _service_shaped(surface) else None)
    else:
        res = index.resolve(surface, fuzzy=False)
        if res.method != "exact":
            return None
    return res if res.candidates else None


_MEMO: OrderedDict[tuple[tuple[tuple[int, str], ...], bool, str], tuple[Mention, ...]] = \
    OrderedDict()
_MEMO_LIMIT = 2048


def find_mentions(
    lines: Iterable[tuple[int, str]], index: NameIndex, plain_words: bool = False
) -> list[Mention]:
    """Every resolvable mention: per target the most confident (then first) occurrence.
    Memoised by text and :meth:`NameIndex.fingerprint`: a history replay reads the same
    documents against the same names at most commits."""
    text = tuple(lines)
    key = (text, plain_words, index.fingerprint())
    found = _MEMO.get(key)
    if found is None:
        found = _MEMO[key] = tuple(_find_mentions(text, index, plain_words))
        while len(_MEMO) > _MEMO_LIMIT:
            _MEMO.popitem(last=False)
    _MEMO.move_to_end(key)
    return list(found)


def _find_mentions(
    lines: Iterable[tuple[int, str]], index: NameIndex, plain_words: bool
) -> list[Mention]:
    best: dict[tuple[str, ...], Mention] = {}
    for line_no, text in lines:
        for surface, strong in _surfaces(text, plain_words, index):
            res = _resolve(index, surface, strong)
            if res is None:
                continue
            old = best.get(res.candidates)
            if old is None or res.confidence > old.resolution.confidence:
                best[res.candidates] = Mention(surface, line_no, res)
    return sorted(best.values(), key=lambda m: m.line)


def record_doc_alias(index: NameIndex, mention: Mention, ref: str) -> None:
    """Keep a document's spelling of a name (``CheckoutService``) as an alias with evidence."""
    cid = mention.resolution.ceid
    if cid is None or " " in mention.surface or mention.resolution.confidence < 0.95:
        return
    entity = index.get(cid)
    if slug(mention.surface) != slug(entity.name) and mention.surface != entity.name:
        index.alias(cid, mention.surface, ref)


def mention_edges(
    kind: str, src: str, mentions: list[Mention], index: NameIndex, ref_of: Callable[[int], str]
) -> list[EdgeRecord]:
    """``src -[kind]-> entity`` for each mention (one edge per candidate when ambiguous).

    Confidence is that of the name resolution, capped at 0.95 (prose is read heuristically);
    fuzzy and ambiguous matches fall below the verification threshold and carry a reason.
    """
    edges: list[EdgeRecord] = []
    for mention in mentions:
        res = mention.resolution
        ref = ref_of(mention.line)
        record_doc_alias(index, mention, ref)
        props: dict[str, Any] = {"surface": mention.surface, "match": res.method}
        if res.method in ("fuzzy", "ambiguous"):
            names = ", ".join(res.candidates)
            props["reason"] = f"{res.method} match of {mention.surface!r} to {names}"
        for cid in res.candidates:
            if cid != src:
                conf = min(DOC_MENTION, res.confidence)
                edges.append(EdgeRecord(kind, src, cid, ref, conf, source="git", props=props))
    return edges
