"""Epic impact (RSN-UC-08): "which services does this epic affect?".

Project item (and the items ``PART_OF`` it) -LINKS_TO-> IntentAssertion -ASSERTS-> service:
the services the epic intends to change (depth 0). With a hop budget ``depth`` (0..2), also
the entities that reach one of those over CALLS / DEPENDS_ON within that many hops — they are
exposed to the change. Each affected entity comes with the shortest such path as hops (every
hop with its evidence) and the node sequence from the item to it.
"""

from __future__ import annotations

from typing import Any

from substrate.errors import BadRequest
from substrate.retrieval import direct
from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import ReadScope

MAX_DEPTH = 2
MAX_RESULTS = 200


def path_nodes(start: str, hops: list[dict[str, Any]]) -> list[str]:
    """The nodes a chain of hops walks through from ``start`` (edges in any direction)."""
    nodes = [start]
    for h in hops:
        current = nodes[-1]
        nodes.append(h["to"] if h["from"] == current else h["from"])
    return nodes


async def resolve_item(reader: GraphReader, scope: ReadScope, value: str) -> dict[str, Any]:
    """``item:shop-10``, ``SHOP-10`` or an item's exact name."""
    return await direct.resolve(reader, scope, value, label="ProjectItem", prefix="item")


async def epic_impact(reader: GraphReader, scope: ReadScope, item_id: str, depth: int = 1,
                      limit: int = 100) -> dict[str, Any]:
    if isinstance(depth, bool) or not 0 <= depth <= MAX_DEPTH:
        raise BadRequest(f"depth must be between 0 and {MAX_DEPTH}", {"depth": depth})
    if not 1 <= limit <= MAX_RESULTS:
        raise BadRequest(f"limit must be 1..{MAX_RESULTS}", {"limit": limit})
    item, rows = await direct.resolved_with(  # one round trip: the item and its impact
        reader, scope, "retrieval/direct_impact", item_id, {"depth": depth},
        label="ProjectItem", prefix="item", limit=limit + 1)
    truncated = len(rows) > limit
    services = []
    for row in rows[:limit]:
        hops = [{**h, "hop": i + 1} for i, h in enumerate(row["hops"])]
        services.append({
            **row["service"], "role": "asserted" if row["depth"] == 0 else "dependent",
            "depth": row["depth"], "via": row["via"], "intent": row["intent"],
            "path": path_nodes(item["ceid"], hops), "hops": hops,
        })
    return {
        "item": item, "depth": depth,
        "asserted": [s["ceid"] for s in services if s["role"] == "asserted"],
        "dependents": [s["ceid"] for s in services if s["role"] == "dependent"],
        "intents": sorted({s["intent"] for s in services}),
        "services": services, "truncated": truncated,
    }


def impact_hops(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for s in result["services"] for h in s["hops"]]


RANKED_EPICS = 5  # epics an unnamed-epic answer lists unless the question asks for a top N


async def epic_ranking(reader: GraphReader, scope: ReadScope, fewest: bool = False,
                       limit: int = MAX_RESULTS) -> list[dict[str, Any]]:
    """Epics by how many entities their intent assertions (their own and their children's)
    name: ``[{item, key, affected: [{entity, intent, hops}], count}]``, the most first
    (``fewest``: the fewest first; epics affecting nothing are not listed)."""
    rows = await reader.plain_rows("retrieval/epic_ranking", scope, limit=MAX_RESULTS)
    ranked = [{**r, "count": len(r["affected"])} for r in rows]
    ranked.sort(key=lambda r: ((r["count"] if fewest else -r["count"]), r["item"]["ceid"]))
    return ranked[:limit]


def ranking_hops(ranked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for r in ranked for a in r["affected"] for h in a["hops"]]


def ranking_sentence(ranked: list[dict[str, Any]], fewest: bool = False) -> str:
    """"SHOP-10 "Faster, safer checkout" and SHOP-40 "..." affect the most services (4 each):
    ..." — the epics tied at the top named first, each with what it affects and the lines
    asserting it; then the others in order."""
    if not ranked:
        return "No epic links an intent assertion naming a service."

    def epic(r: dict[str, Any]) -> str:
        return f"{r['key'] or r['item']['ceid']} \"{r['item']['name']}\""

    def affects(r: dict[str, Any]) -> str:
        refs = sorted({a["hops"][-1]["evidence_ref"] for a in r["affected"]
                       if a["hops"] and a["hops"][-1].get("evidence_ref")})
        names = ", ".join(str(a["entity"]["name"]) for a in r["affected"])
        return f"{names}" + (f" [{', '.join(refs)}]" if refs else "")

    best = [r for r in ranked if r["count"] == ranked[0]["count"]]
    word = "fewest" if fewest else "most"
    each = " each" if len(best) > 1 else ""
    head = (" and ".join(epic(r) for r in best) + (" affect" if len(best) > 1 else " affects")
            + f" the {word} services ({ranked[0]['count']}{each}): "
            + "; ".join(f"{epic(r)}: {affects(r)}" for r in best) + ".")
    rest = ranked[len(best):]
    if rest:
        head += " Then: " + "; ".join(f"{epic(r)} {r['count']} ({affects(r)})"
                                      for r in rest) + "."
    return head
