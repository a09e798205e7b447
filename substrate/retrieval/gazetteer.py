"""Entity linking by the tenant's own names: lower-case, spaced and partial mentions.

Pattern-based mention finding (``mentions``) misses names written in lower case inside a
phrase ("connect to userservice", "the ledger-db gain"). Here every run of one to three words
of the question is compared with the names and aliases of the tenant's services,
infrastructure, teams and repositories after *squashing* both (lower case, letters and digits
only): "user service", "user-service" and "userservice" are one name; a trailing
"service"/"svc"/"api" may be left off ("the ledgerwriter service"). A single word of at least
four letters that begins exactly one service's name links it ("balance" -> balancereader),
or, when it begins no service's name, exactly one infrastructure's ("redis" -> redis-cart);
when it begins no name at all, exactly one name that ends in ``-<word>`` links it ("kafka" ->
opentelemetry-demo-kafka, a Helm release's name); a prefix or an ending shared by several
links none (ambiguous partial names are not guessed).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.mentions import is_stop_word, strip_qualifiers
from substrate.retrieval.scope import ReadScope

MAX_NAMES = 5000
Place = tuple[int, int]  # (position in the question, minus the name's length in words)
PREFIXES = ("service", "infra", "team", "repo", "module")  # the ceid prefixes it links
MIN_PREFIX = 4
_SUFFIXES = ("service", "svc", "api", "server")
ROLE_WORDS = frozenset({"api", "ui", "web", "app", "db", "cli", "bff", "worker", "frontend",
                        "backend", "gateway", "admin"})
_WORD = re.compile(r"[A-Za-z0-9][\w.-]*")
# (tenant, version, clearance, jurisdictions) -> the gazetteer of that view
_CACHE: dict[tuple[str, int, tuple[str, ...], tuple[str, ...] | None], Gazetteer] = {}


def squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def name_keys(entity: dict[str, Any], aliases: Iterable[str]) -> set[str]:
    """Every squashed form the entity answers to."""
    keys = {squash(str(entity.get("name") or "")), squash(entity["ceid"].split(":", 1)[-1])}
    keys |= {squash(a) for a in aliases}
    keys |= {k[: -len(s)] for k in list(keys) for s in _SUFFIXES
             if k.endswith(s) and len(k) > len(s) + 2}
    return {k for k in keys if len(k) >= 2}


def _ngrams(words: list[tuple[int, str]]) -> Iterable[tuple[int, list[str]]]:
    for i in range(len(words)):
        for n in (3, 2, 1):
            if i + n <= len(words):
                yield words[i][0], [w for _, w in words[i:i + n]]


def question_words(question: str) -> list[tuple[int, str]]:
    """(offset, word) of each word of ``question``, without a trailing period or "'s"."""
    return [(m.start(), m.group(0).rstrip(".").removesuffix("'s").removesuffix("’s"))
            for m in _WORD.finditer(question)]


def named_ids(question: str, prefixes: Iterable[str]) -> list[str]:
    """The ids a run of one to three words of ``question`` would have after each prefix,
    with and without a trailing "service"/"svc"/"api"/"server" ("payments export 9" ->
    ``service:payments-export-9``, ...): how a gazetteer past its cap finds a name."""
    words = question_words(question)
    ids: dict[str, None] = {}
    for _, gram in _ngrams(words):
        if len(gram) == 1 and is_stop_word(gram[0]):
            continue
        parts = [p for w in gram for p in re.findall(r"[a-z0-9]+", w.lower())]
        runs = [parts] + ([parts[:-1]] if len(parts) > 1 and parts[-1] in _SUFFIXES else [])
        ids.update(dict.fromkeys(f"{p}:{'-'.join(r)}" for r in runs if r for p in prefixes))
    return list(ids)


class Gazetteer:
    """The names of one tenant view, indexed once: squashed key -> entities, and each
    service's key in sorted order (unique-prefix lookups by bisection). ``capped``: the
    view has more names than these (a prefix unique among them may not be unique)."""

    def __init__(self, names: list[tuple[str, dict[str, Any]]], capped: bool = False) -> None:
        self.index: dict[str, list[dict[str, Any]]] = {}
        for key, entity in names:
            self.index.setdefault(key, []).append(entity)
        self.services = {e["ceid"]: (k, e) for k, e in names if e.get("label") == "Service"}
        self._keys = sorted((k, c) for c, (k, _) in self.services.items())
        self.infrastructure = {e["ceid"]: (k, e) for k, e in names
                               if e.get("label") == "Infrastructure"}
        self._infra_keys = sorted((k, c) for c, (k, _) in self.infrastructure.items())
        # "kafka" and "demo-kafka" -> opentelemetry-demo-kafka: what follows each dash of a name
        self._ends = [_endings(self.services), _endings(self.infrastructure)]
        self.capped = capped

    def match(self, question: str, extra: Gazetteer | None = None) -> list[dict[str, Any]]:
        """Entities named in ``question``, in order of appearance; ``extra``: more names
        (looked up for this question)."""
        words = question_words(question)
        found = self._named(words) + (extra._named(words) if extra is not None else [])
        if not found and not self.capped:
            found = self._unique_prefixes(words)
        seen: set[str] = set()
        out = []
        for _, entity in sorted(found, key=lambda f: (f[0], f[1].get("label") != "Service")):
            if entity["ceid"] not in seen:
                seen.add(entity["ceid"])
                out.append({**entity, "why": "name in the question"})
        return out

    def _named(self, words: list[tuple[int, str]]) -> list[tuple[Place, dict[str, Any]]]:
        """(place, entity) of each name: its position, a longer name first at one position
        ("catalog namespace" before "catalog")."""
        found: list[tuple[Place, dict[str, Any]]] = []
        for pos, gram in _ngrams(words):
            if len(gram) == 1 and is_stop_word(gram[0]):
                continue
            key = squash("".join(gram))
            named: list[dict[str, Any]] = []
            for strip in ("",) + _SUFFIXES:
                k = key[: -len(strip)] if strip and key.endswith(strip) else key
                if strip and k == key:
                    continue
                named += self.index.get(k, [])
            if len(key) >= MIN_PREFIX and not any(e.get("label") == "Service" for e in named):
                # "payments" when the service is "payment" (and the team "payments"), or
                # "order" for "orders": a service by the other number
                other = key[:-1] if key.endswith("s") else key + "s"
                named += [e for e in self.index.get(other, []) if e.get("label") == "Service"]
            found += [((pos, -len(gram)), e) for e in named]
        return found

    def _unique_prefixes(self, words: list[tuple[int, str]]
                         ) -> list[tuple[Place, dict[str, Any]]]:
        found: list[tuple[Place, dict[str, Any]]] = []
        before = ""
        for pos, word in words:
            w, previous, before = squash(word), before, word.lower()
            # "the API", "the UI": a short role word after "the" is the one service named
            # "<something>-api" (notify-api), when exactly one is; never a prefix
            role = w in ROLE_WORDS and previous == "the"
            if (len(w) < MIN_PREFIX and not role) or (is_stop_word(word) and not role):
                continue
            for keys, held in () if role else ((self._keys, self.services),
                                               (self._infra_keys, self.infrastructure)):
                hits = _starting_with(keys, w)
                if hits:  # a service first; infrastructure only when no service begins so
                    if len(hits) == 1:
                        found.append(((pos, -1), held[hits.pop()][1]))
                    break
            else:  # nothing begins so: a name ending in "-<word>" (a Helm release's
                # "opentelemetry-demo-kafka" for "kafka"), again a service first
                for endings in self._ends:
                    ends = endings.get(word.lower(), [])
                    if ends:
                        if len(ends) == 1:
                            found.append(((pos, -1), ends[0]))
                        break
        return found


def _endings(held: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """What follows each dash of each name (lower case) -> the entities so named."""
    out: dict[str, list[dict[str, Any]]] = {}
    for _, entity in held.values():
        parts = str(entity.get("name") or "").lower().split("-")
        for i in range(1, len(parts)):
            out.setdefault("-".join(parts[i:]), []).append(entity)
    return out


def _starting_with(keys: list[tuple[str, str]], prefix: str) -> set[str]:
    """The ceids whose key (in ``keys``, sorted) begins with ``prefix``."""
    hits = set()
    for key, ceid in keys[bisect_left(keys, (prefix, "")):]:
        if not key.startswith(prefix):
            break
        hits.add(ceid)
    return hits


def match_names(question: str, names: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Entities named in ``question``, in order of appearance (pure; no database)."""
    return Gazetteer(names).match(question)


def _gazetteer(rows: list[dict[str, Any]], capped: bool = False) -> Gazetteer:
    return Gazetteer([(k, dict(r["entity"])) for r in rows
                      for k in name_keys(r["entity"], r["aliases"])], capped)


async def tenant_gazetteer(reader: GraphReader, scope: ReadScope) -> Gazetteer:
    key = (scope.tenant, scope.version, scope.clearance, scope.jurisdictions)
    if key not in _CACHE:
        rows = await reader.rows("retrieval/entity_names", scope, limit=MAX_NAMES)
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = _gazetteer(rows, capped=len(rows) >= MAX_NAMES)
    return _CACHE[key]


async def link_names(reader: GraphReader, scope: ReadScope,
                     question: str) -> list[dict[str, Any]]:
    """The entities ``question`` names by the tenant's names; past the gazetteer's cap, also
    those its words name by id (looked up for this question)."""
    gazetteer, text = await tenant_gazetteer(reader, scope), strip_qualifiers(question)
    extra = None
    if gazetteer.capped:
        ids = named_ids(text, PREFIXES)
        rows = await reader.rows("nl/entity_names_by_id", scope, ceids=ids) if ids else []
        extra = _gazetteer([{"entity": {"ceid": r["ceid"], "name": r["name"],
                                        "label": r["label"]}, "aliases": r["aliases"]}
                            for r in rows])
    return gazetteer.match(text, extra)
