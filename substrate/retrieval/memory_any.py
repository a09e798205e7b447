"""``/memory/{id}`` from any entity, not only services (issue 9).

A service id (``service:x`` or a plain name) keeps the service path of
:meth:`RetrievalService.memory`. Any other canonical id (``adr:0007``, ``incident:...``,
``team:...``) resolves the entity of whatever label it is and lists the memory tied to it over
every memory relation in both directions (``temporal/entity_memory``). A decision record also
gets ``decision``: what it decided (status, summary, date, the record's path), which records
it supersedes and which supersede it, which incidents cite it and which services it is about.
"""

from __future__ import annotations

from typing import Any

from substrate.errors import BadRequest, NotFound
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.rerank import HttpReranker, LocalReranker
from substrate.retrieval.scope import ReadScope

MEMORY_KINDS = ("DecisionNode", "FailurePattern", "ExceptionNode", "MemoryNode")


def is_other_entity(value: str) -> bool:
    """A canonical id of a label other than Service (``adr:0007``)."""
    kind, sep, name = value.strip().partition(":")
    return bool(sep) and bool(name) and kind != "service"


def citation_pattern(number: int) -> str:
    """A Java regular expression matching a text that cites decision record ``number``:
    ``ADR-0012``, ``ADR 12``, ``adr #12``, ``decision record 12`` (not ``ADR-120``)."""
    return (r"(?is).*\b(adr|decision record)[\s#:_-]*0*" + str(number) + r"(?![0-9]).*")


def decision_summary(entity: dict[str, Any], props: dict[str, Any],
                     items: list[dict[str, Any]]) -> dict[str, Any]:
    """What an ADR decided, its supersession both ways and who cites it."""
    def ceids(pred: Any) -> list[str]:
        return sorted({i["ceid"] for i in items if pred(i)})

    sup = [i for i in items if i["relation"] == "SUPERSEDES"]
    return {
        "ceid": entity["ceid"], "title": entity["name"], "status": props.get("status"),
        "decided": props.get("summary"), "date": props.get("date"), "path": props.get("path"),
        "supersedes": ceids(lambda i: i in sup and i["direction"] == "out"),
        "superseded_by": ceids(lambda i: i in sup and i["direction"] == "in"),
        "cited_by_incidents": ceids(lambda i: i["kind"] == "FailurePattern"),
        "about_services": ceids(lambda i: i["kind"] == "Service"),
    }


async def entity_memory(reader: GraphReader, reranker: HttpReranker | LocalReranker,
                        scope: ReadScope, value: str, limit: int,
                        question: str | None = None) -> dict[str, Any]:
    from substrate.retrieval.service import memory_item

    ceid = value.strip()
    if len(ceid) > 200:
        raise BadRequest("an id must be 1..200 characters", {"id": ceid[:50]})
    kind, _, name = ceid.partition(":")
    found = await reader.rows("temporal/resolve_any", scope, ceid=ceid, prefix=f"{kind}:",
                              name=name)
    if not found:
        raise NotFound(f"no entity {ceid!r} in tenant {scope.tenant!r} at snapshot "
                       f"{scope.version}", {"id": ceid, "snapshot_version": scope.version})
    entity, props = dict(found[0]["entity"]), dict(found[0]["props"])
    rows = await reader.rows("temporal/entity_memory", scope, ceid=entity["ceid"],
                             limit=limit + 1)
    if entity["label"] == "DecisionNode" and isinstance(props.get("number"), int):
        have = {r["item"]["ceid"] for r in rows}
        cited = await reader.rows("temporal/citing_incidents", scope,
                                  pattern=citation_pattern(int(props["number"])),
                                  limit=limit + 1)
        rows += [{**r, "hop": {**r["hop"], "to": entity["ceid"]}, "direction": "in"}
                 for r in cited if r["item"]["ceid"] not in have]
    truncated = len(rows) > limit
    rows = rows[:limit]
    query = question or f"what was decided about {entity['name']}, and why; incidents"
    docs = [f"{r['item']['name']}. {r['props'].get('summary') or ''}" for r in rows]
    relevance: dict[int, float] = {}
    if docs:
        outcome = await reranker.rerank(query, docs)
        relevance = {x.index: x.score for x in outcome.results}
    items = []
    for i, r in enumerate(rows):
        item = memory_item(r, i, len(rows), relevance.get(i, 0.0))
        items.append({**item, "direction": r["direction"]})
    items.sort(key=lambda x: (-x["rank_score"], x["ceid"]))
    out: dict[str, Any] = {"service": entity, "entity": {**entity, "props": props},
                           "items": items, "truncated": truncated}
    if entity["label"] == "DecisionNode":
        out["decision"] = decision_summary(entity, props, items)
    return out
