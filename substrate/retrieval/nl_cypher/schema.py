"""The live schema of one reader's view: relationship triples and entity names (for the
embedded translator), and a text rendering of labels, types and properties (for a model's
prompt). Cached per (tenant, clearance, jurisdictions, snapshot version)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.nl_cypher.assumptions import normalised_values
from substrate.retrieval.nl_cypher.lexicon import entity_phrases, synonyms
from substrate.retrieval.nl_cypher.parser import Schema
from substrate.retrieval.scope import ReadScope

MAX_NAMES = 20_000
_CACHE: OrderedDict[tuple[Any, ...], tuple[Schema, list[dict[str, Any]]]] = OrderedDict()
_CACHE_SIZE = 16


def _key(scope: ReadScope) -> tuple[Any, ...]:
    return (scope.tenant, scope.clearance, scope.jurisdictions,
            scope.tenant_version if scope.tenant_version is not None else scope.version)


async def load_schema(reader: GraphReader, scope: ReadScope) -> tuple[Schema, list[dict[str, Any]]]:
    """(Schema, triple rows) of what ``scope`` sees."""
    key = _key(scope)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    triples = await reader.rows("nl/schema_triples", scope)
    names = await reader.rows("nl/entity_names", scope, limit=MAX_NAMES)
    schema = Schema(frozenset((r["start"], r["type"], r["end"]) for r in triples
                              if r["start"] and r["end"]), entity_phrases(names),
                    normalised_values(names))
    _CACHE[key] = (schema, triples)
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
