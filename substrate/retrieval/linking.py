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

MIN_SCORE = 0.5


def _exactness(mention: str, entity: dict[str, Any]) -> int:
    m = slug(mention)
    name = slug(str(entity.get("name") or ""))
    ident = entity["ceid"].split(":", 1)[-1]
    if m in (name, ident):
        return 0
    if name.startswith(m) or ident.startswith(m) or m.startswith(ident):
        return 1
    return 2


async def link_mention(reader: GraphReader, scope: ReadScope, mention: str,
                       limit: int = 5) -> dict[str, Any] | None:
    lucene = fuzzy_query(mention)
    if not lucene:
        return None
    rows = await reader.rows("retrieval/link_entities", scope, lucene=lucene, limit=limit)
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


async def link_entities(reader: GraphReader, scope: ReadScope, mentions: list[str],
                        question: str | None = None) -> list[dict[str, Any]]:
    """The tenant's names found in ``question`` (``gazetteer``) first, in order of appearance,
    then the fuzzy full-text matches of the pattern mentions."""
    linked: dict[str, dict[str, Any]] = {}
    if question:
        for named in await link_names(reader, scope, question):
            linked.setdefault(named["ceid"], {**named, "mention": named["name"], "score": 1.0})
    for mention in mentions:
        entity = await link_mention(reader, scope, mention)
        if entity is not None and entity["ceid"] not in linked:
            linked[entity["ceid"]] = entity
    return list(linked.values())
