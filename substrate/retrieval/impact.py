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
