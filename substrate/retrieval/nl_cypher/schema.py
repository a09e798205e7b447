"""The live schema of one reader's view: relationship triples and entity names (for the
embedded translator), and a text rendering of labels, types and properties (for a model's
prompt).

Reading it scans the view's live relationships (``nl/schema_triples``): ~2 s for a 200k-edge
tenant, ~10-12 s for a 2M-edge one (the first ``/search`` of ``bench_scale`` at L). Kept per
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
from collections import OrderedDict
from typing import Any

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher.assumptions import normalised_values
from substrate.retrieval.nl_cypher.lexicon import entity_phrases, synonyms
from substrate.retrieval.nl_cypher.parser import Schema
from substrate.retrieval.scope import ReadScope

log = logging.getLogger(__name__)

MAX_NAMES = 20_000
WAIT_BELOW_S = 0.25  # a schema read faster than this is read again while the request waits
Loaded = tuple[Schema, list[dict[str, Any]]]
# key -> (the snapshot it was read at, seconds the reading took, schema, triples); key: the
# view, plus the version for a pinned read
_CACHE: OrderedDict[tuple[Any, ...], tuple[int, float, Schema, list[dict[str, Any]]]] = \
    OrderedDict()
_CACHE_SIZE = 16
_REFRESHING: dict[tuple[Any, ...], asyncio.Task[None]] = {}


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
    triples = await reader.rows("nl/schema_triples", scope)
    names = await reader.rows("nl/entity_names", scope, limit=MAX_NAMES)
    schema = Schema(frozenset((r["start"], r["type"], r["end"]) for r in triples
                              if r["start"] and r["end"]), entity_phrases(names),
                    normalised_values(names))
    held = _CACHE.get(key)
    if held is None or held[0] <= version:  # else a newer reading landed first
        _CACHE[key] = (version, time.monotonic() - started, schema, triples)
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return schema, triples


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
    kinds = ", ".join(f"{k['words'][0]} = {k['label']}.{k['property']} '{k['value']}'"
                      for k in synonyms()["kinds"])
    lines.append(f"Kinds: {kinds}")
    return "\n".join(lines)
