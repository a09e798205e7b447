"""Entity linking: mentions in the question -> entities, via the full-text name index.

Exact ids and names win over fuzzy matches; each mention links to its best entity, so the
seeds of a pinned query are stable across later writes.
"""

from __future__ import annotations

from typing import Any

from substrate.graph.records import slug
from substrate.retrieval.gazetteer import link_names
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.mentions import fuzzy_query
from substrate.retrieval.scope import ReadScope
from substrate.retrieval.strategies_text import WIDE_POOL
from substrate.retrieval.technologies import names_it, technology_named, technology_seeds

MIN_SCORE = 0.5
POOL = 5  # full-text candidates read per entity wanted (the index holds every tenant's)


def _exactness(mention: str, entity: dict[str, Any]) -> int:
    m = slug(mention)
    name = slug(str(entity.get("name") or ""))
    ident = entity["ceid"].split(":", 1)[-1]
    if m in (name, ident):
        return 0
    if name.startswith(m) or ident.startswith(m) or m.startswith(ident):
        return 1
    return 2


def best_match(mention: str, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The entity ``mention`` links to among its full-text ``rows`` (entity, score): exact
    names and ids first, then the higher score, then the smaller id."""
    best = sorted(
        (r for r in rows if r["score"] >= MIN_SCORE),
        key=lambda r: (_exactness(mention, r["entity"]), -r["score"], r["entity"]["ceid"]),
    )
    if not best:
        return None
    top = best[0]
    return {**top["entity"], "mention": mention, "score": round(float(top["score"]), 4),
            "why": "exact name/id" if _exactness(mention, top["entity"]) == 0
            else "fuzzy full-text match on names and aliases"}


async def link_mentions(reader: GraphReader, scope: ReadScope, mentions: list[str],
                        limit: int = 5) -> list[dict[str, Any] | None]:
    """Each mention's entity (None: no match): every distinct query in one round trip
    ("billing-api" and "billing api" are one query)."""
    queries = [fuzzy_query(m) for m in mentions]
    distinct = list(dict.fromkeys(q for q in queries if q))
    if not distinct:
        return [None] * len(mentions)
    found = await _tenant_matches(reader, scope, distinct, limit)
    return [best_match(m, found.get(q, [])) for m, q in zip(mentions, queries, strict=True)]


async def _tenant_matches(reader: GraphReader, scope: ReadScope, queries: list[str],
                          limit: int) -> dict[str, list[dict[str, Any]]]:
    """Each query's best ``limit`` rows of the tenant's entities. The index's ``limit *
    POOL`` best of every tenant are read; a query whose pool filled with fewer than
    ``limit`` of this tenant's (a tenant among larger ones with the same names) is read
    again from ``WIDE_POOL`` candidates."""
    pool = limit * POOL
    rows = await reader.rows("retrieval/link_entities", scope, queries=queries, limit=limit,
                             pool=pool)
    found: dict[str, list[dict[str, Any]]] = {q: [] for q in queries}
    full: set[str] = set()
    for row in rows:
        query = queries[row["query"]]
        if row["entity"] is not None:
            found[query].append(row)
        if row["candidates"] >= pool:
            full.add(query)
    wider = [q for q in queries if q in full and len(found[q]) < limit]
    if not wider:
        return found
    found.update({q: [] for q in wider})  # the wide read finds the first one's rows again
    for row in await reader.rows("retrieval/link_entities", scope, queries=wider,
                                 limit=limit, pool=WIDE_POOL):
        if row["entity"] is not None:
            found[wider[row["query"]]].append(row)
    return found


async def named_seeds(reader: GraphReader, scope: ReadScope,
                      question: str | None) -> list[dict[str, Any]]:
    """The tenant's names found in ``question`` (``gazetteer``), in order of appearance: the
    first seeds ``link_entities`` returns (later ones are only appended after them)."""
    linked: dict[str, dict[str, Any]] = {}
    if question:
        for named in await link_names(reader, scope, question):
            linked.setdefault(named["ceid"], {**named, "mention": named["name"], "score": 1.0})
    return list(linked.values())


async def link_entities(reader: GraphReader, scope: ReadScope, mentions: list[str],
                        question: str | None = None,
                        named: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The tenant's names found in ``question`` first (``named_seeds``; ``named``: already
    found), in order of appearance, then the fuzzy full-text matches of the pattern mentions;
    when the question names no service or datastore but a technology ("MongoDB"), the
    datastores running it first (``technologies``)."""
    if named is None:
        named = await named_seeds(reader, scope, question)
    linked = {e["ceid"]: e for e in named}
    for entity in await link_mentions(reader, scope, mentions):
        if entity is not None and entity["ceid"] not in linked:
            linked[entity["ceid"]] = entity
    found = list(linked.values())
    ends = [e for e in named if e["label"] in ("Service", "Infrastructure")]
    tech = technology_named(question) if question else None
    if question and not ends:
        # "which services use MongoDB?" with datastores called carts-db and orders-db
        used = await technology_seeds(reader, scope, tech, found)
        found = [*used, *(e for e in found if e["ceid"] not in {u["ceid"] for u in used})]
    elif question and tech is not None and all(names_it(e, tech) for e in ends):
        # "which services use mysql?" where Compose runs mysql and Kubernetes ftgo-mysql:
        # every datastore running it, when more than the one named (or than a job named
        # after it: "dynamodblocal-init")
        used = await technology_seeds(reader, scope, tech, [])
        if {u["ceid"] for u in used} - {e["ceid"] for e in ends}:
            found = [*used, *(e for e in found if e["ceid"] not in {u["ceid"] for u in used})]
    return found
