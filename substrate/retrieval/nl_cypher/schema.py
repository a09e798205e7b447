"""The live schema of one reader's view: relationship triples and entity names (for the
embedded translator), and a text rendering of labels, types and properties (for a model's
prompt).

Reading it takes two steps: the tenant's distinct (label, type, label) triples, scanned
without checking visibility (``nl/schema_candidates``), then each triple kept if one
relationship of it is live in the reader's view (``nl/schema_triples``, which stops at the
first). 0.2 s for a 200k-edge tenant and ~2 s for a 2M-edge one; checking every
relationship's visibility in one scan took 0.8 s and 9-12 s. The lexicon holds at most
``MAX_NAMES`` names; past that, ``question_schema`` adds the entities a question's phrases
name, looked up by id (``nl/entity_names_by_id``). Kept per
view (tenant, clearance, jurisdictions): a pinned read uses the schema of its own snapshot; an
unpinned read uses the newest one held, and when the tenant has a newer snapshot than that
it is read again: at once when the last reading took less than ``WAIT_BELOW_S`` (a small
tenant: the answer sees the write's names), else in the background (one reading per view at
a time) while the request goes on with the one held — so a write to a large tenant does not
make the next question wait for a scan; until the reading lands, names that write added are
not yet in the embedded translator's lexicon."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import ChainMap, OrderedDict
from collections.abc import Iterable, MutableMapping
from dataclasses import replace
from functools import lru_cache
from typing import Any, cast

from substrate.graph.ontology import load_ontology
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher.assumptions import normalised_values
from substrate.retrieval.nl_cypher.lexicon import (
    base_lexicon,
    entity_phrases,
    synonyms,
    with_value_states,
    words,
)
from substrate.retrieval.nl_cypher.parser import Schema
from substrate.retrieval.scope import ReadScope

log = logging.getLogger(__name__)

MAX_NAMES = 20_000
MAX_PHRASE = 6  # the longest entity phrase the tagger tries (tagger._longest_entity)
WAIT_BELOW_S = 0.25  # a schema read faster than this is read again while the request waits
Loaded = tuple[Schema, list[dict[str, Any]]]
# ownership is a relation of the contract whether or not a tenant records any: a repository
# with no CODEOWNERS or ownership file answers "which services have no owner?" with every
# service (the query runs), not with a question the translator cannot read
CONTRACT_TRIPLES = frozenset({("Team", "OWNS", "Service"), ("Developer", "OWNS", "Service")})
# key -> (the snapshot it was read at, seconds the reading took, schema, triples); key: the
# view, plus the version for a pinned read
_CACHE: OrderedDict[tuple[Any, ...], tuple[int, float, Schema, list[dict[str, Any]]]] = \
    OrderedDict()
_CACHE_SIZE = 16
_REFRESHING: dict[tuple[Any, ...], asyncio.Task[None]] = {}
# (view key, version, question) -> the rows of the entities the question names (capped views)
_NAMED: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
_NAMED_SIZE = 256


def _version(scope: ReadScope) -> int:
    return scope.tenant_version if scope.tenant_version is not None else scope.version


def _key(scope: ReadScope) -> tuple[Any, ...]:
    view = (scope.tenant, scope.clearance, scope.jurisdictions)
    return (*view, "at", _version(scope)) if scope.pinned else view


async def load_schema(reader: GraphReader, scope: ReadScope) -> Loaded:
    """(Schema, triple rows) of what ``scope`` sees (see the module doc)."""
    key, version = _key(scope), _version(scope)
    held = _CACHE.get(key)
    if held is None or (held[0] < version and held[1] < WAIT_BELOW_S):
        return await _read_and_keep(reader, scope, key, version)
    _CACHE.move_to_end(key)
    if held[0] < version and key not in _REFRESHING:  # the tenant wrote since: read again
        _REFRESHING[key] = asyncio.get_running_loop().create_task(
            _refresh(reader, scope, key, version))
    return held[2], held[3]


async def refreshed(scope: ReadScope) -> None:
    """Wait for the background reading of ``scope``'s view, if one runs."""
    task = _REFRESHING.get(_key(scope))
    if task is not None:
        await asyncio.shield(task)


async def _refresh(reader: GraphReader, scope: ReadScope, key: tuple[Any, ...],
                   version: int) -> None:
    try:
        await _read_and_keep(reader, scope, key, version)
    except Exception:  # noqa: BLE001 - the schema held stays; the next read tries again
        log.exception("reading the NL->Cypher schema again failed")
    finally:
        _REFRESHING.pop(key, None)


async def _read_and_keep(reader: GraphReader, scope: ReadScope, key: tuple[Any, ...],
                         version: int) -> Loaded:
    started = time.monotonic()
    candidates = await reader.rows("nl/schema_candidates", scope)
    triples = await reader.rows("nl/schema_triples", scope, candidates=candidates)
    names = await reader.rows("nl/entity_names", scope, limit=MAX_NAMES)
    schema = Schema(frozenset((r["start"], r["type"], r["end"]) for r in triples),
                    entity_phrases(names), normalised_values(names),
                    names_capped=len(names) >= MAX_NAMES,
                    lexicon=with_value_states(base_lexicon(), names))
    held = _CACHE.get(key)
    if held is None or held[0] <= version:  # else a newer reading landed first
        _CACHE[key] = (version, time.monotonic() - started, schema, triples)
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return schema, triples


async def question_schema(reader: GraphReader, scope: ReadScope, question: str) -> Schema:
    """The view's schema (``load_schema``) with the ``CONTRACT_TRIPLES``, plus, when the view
    has more names than the lexicon holds (``MAX_NAMES``), the entities the question's phrases
    name: looked up by the ids those phrases would have, so a name past the cap is still known
    to the translator."""
    schema, _ = await load_schema(reader, scope)
    if not schema.triples >= CONTRACT_TRIPLES:
        schema = replace(schema, triples=schema.triples | CONTRACT_TRIPLES)
    if not schema.names_capped:
        return schema
    memo_key = (_key(scope), _version(scope), question)
    found = _NAMED.get(memo_key)
    if found is None:
        ids = named_ids(question, (s.ceid_prefix for s in load_ontology().labels.values()),
                        vocabulary())
        found = await reader.rows("nl/entity_names_by_id", scope, ceids=ids) if ids else []
        _NAMED[memo_key] = found
        while len(_NAMED) > _NAMED_SIZE:
            _NAMED.popitem(last=False)
    return with_names(schema, found)


def named_ids(question: str, prefixes: Iterable[str],
              vocabulary: frozenset[str] = frozenset()) -> list[str]:
    """The ids a run of up to ``MAX_PHRASE`` words of ``question`` would name: the run as a
    slug after every ceid prefix ("team t0813 inventory" -> ``team:t0813-inventory``,
    ``service:t0813-inventory``, ...), and a run that starts with a prefix as that prefix's
    id ("adr 3" -> ``adr:3``, ``adr:003``, ``adr:0003``). A run of numbers only, or of
    ``vocabulary`` words only (the translator's own words: "how many services"), is not
    tried."""
    tokens = words(question)
    known = tuple(sorted(set(prefixes)))
    ids: dict[str, None] = {}
    for n in range(1, MAX_PHRASE + 1):
        for i in range(len(tokens) - n + 1):
            run = tokens[i: i + n]
            if all(t.isdigit() for t in run) or all(t in vocabulary for t in run):
                continue
            ids.update(dict.fromkeys(f"{p}:{'-'.join(run)}" for p in known))
            if n > 1 and run[0] in known:
                rest = "-".join(run[1:])
                forms = (rest, rest.zfill(3), rest.zfill(4)) if rest.isdigit() else (rest,)
                ids.update(dict.fromkeys(f"{run[0]}:{f}" for f in forms))
    return list(ids)


@lru_cache(maxsize=1)
def vocabulary() -> frozenset[str]:
    """The one-word phrases of the translator's base lexicon (function words, synonyms)."""
    return frozenset(p[0] for p in base_lexicon().phrases if len(p) == 1)


def with_names(schema: Schema, rows: list[dict[str, Any]]) -> Schema:
    """``schema`` with the phrases of ``rows`` (nl/entity_names' columns) added."""
    if not rows:
        return schema
    added: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for phrase, named in entity_phrases(rows).items():
        held = schema.entities.get(phrase, [])
        added[phrase] = [*held, *(e for e in named if e not in held)]
    normalised = normalised_values(rows) | (schema.normalised or frozenset())
    # the view's phrases are not copied (tens of thousands past the cap): looked up through
    # (a ChainMap writes to its first map only)
    base = cast(MutableMapping[tuple[str, ...], list[tuple[str, str]]], schema.entities)
    return replace(schema, entities=ChainMap(added, base), normalised=normalised)


def schema_text(triples: list[dict[str, Any]], ontology_labels: dict[str, Any]) -> str:
    """The prompt's schema: node labels with their properties, relationship patterns and the
    words people use for them (neo4j-graphrag's schema format)."""
    props = ("ceid", "name", "tenant_id")
    lines = ["Node properties:"]
    for label, spec in ontology_labels.items():
        extra = ", ".join(f"{p}: STRING" for p in (*props, *spec.required) if p != "name")
        lines.append(f"{label} {{name: STRING, {extra}}}")
    lines.append("Relationship properties:")
    lines.append("(every type) {evidence_ref: STRING, confidence: FLOAT, weight: FLOAT, "
                 "source: STRING, valid_from_ts: DATE_TIME}")
    lines.append("The relationships:")
    for r in sorted(triples, key=lambda r: (r["type"], r["start"] or "", r["end"] or "")):
        if r["start"] and r["end"]:
            lines.append(f"(:{r['start']})-[:{r['type']}]->(:{r['end']})")
    kinds = ", ".join(f"{k['words'][0]} = {k['label']}.{k['property']} {_kind_value(k['value'])}"
                      for k in synonyms()["kinds"])
    lines.append(f"Kinds: {kinds}")
    return "\n".join(lines)


def _kind_value(value: str | list[str]) -> str:
    """``'database'``, or ``IN ['database', 'cache']`` for a word naming several kinds."""
    if isinstance(value, list):
        return "IN [" + ", ".join(f"'{v}'" for v in value) + "]"
    return f"'{value}'"
