"""Point-in-time properties for ``POST /cypher ... AT(<past>)`` (issue 9).

The scope predicate of a pinned query already keeps only the nodes valid at the version, but
Neo4j holds one node per entity whose properties are updated in place (``SET n += props``):
without this step a node read ``AT(2020-01-01)`` shows today's values. Here every node in the
result gets the properties it had at the version, rebuilt from the change log exactly as
``GET /temporal?at=`` does (:func:`substrate.retrieval.temporal.props_at`): each ``add`` /
``update`` up to the version folded in order. A property the node only gained later is
removed; bookkeeping properties (validity, sources, tenant) are kept as read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from substrate.retrieval.scope import pg_connection
from substrate.settings import Settings

HISTORY_SQL = """
SELECT element_id, snapshot_version, after FROM change_log
WHERE tenant_id = %s AND element_kind = 'node' AND element_id = ANY(%s)
  AND op IN ('add', 'update') AND after ? 'props'
ORDER BY element_id, snapshot_version, id
"""
# the whole logged history of every node of the tenant changed after the version
CHANGED_SINCE_SQL = """
SELECT element_id, snapshot_version, after FROM change_log
WHERE tenant_id = %s AND element_kind = 'node' AND op IN ('add', 'update') AND after ? 'props'
  AND element_id IN (SELECT element_id FROM change_log WHERE tenant_id = %s
                     AND element_kind = 'node' AND op IN ('add', 'update')
                     AND snapshot_version > %s)
ORDER BY element_id, snapshot_version, id
"""


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    """Every node object (``to_json`` form) in a result value, paths and lists included."""
    if isinstance(value, dict):
        if value.get("type") == "node" and isinstance(value.get("properties"), dict):
            yield value
        else:
            for v in value.values():
                yield from _nodes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _nodes(v)


def fold(history: list[tuple[int, dict[str, Any]]], version: int
         ) -> tuple[dict[str, Any], set[str], list[str] | None]:
    """(properties at ``version``, every property key the log ever set, provenance then)."""
    props: dict[str, Any] = {}
    keys: set[str] = set()
    provenance: list[str] | None = None
    for v, after in history:
        changed = after.get("props") or {}
        keys.update(changed)
        if v <= version:
            props.update(changed)
            if after.get("provenance") is not None:
                provenance = [str(p) for p in after["provenance"]]
    return props, keys, provenance


async def rewind(settings: Settings, tenant: str, version: int,
                 rows: list[list[Any]]) -> int:
    """Rewrite, in place, the properties of every node in ``rows`` to their values at
    ``version``; returns how many nodes were rewritten."""
    nodes = [n for n in _nodes(rows) if isinstance(n["properties"].get("ceid"), str)]
    if not nodes:
        return 0
    ceids = sorted({str(n["properties"]["ceid"]) for n in nodes})
    history: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    async with pg_connection(settings) as conn:
        cur = await conn.execute(HISTORY_SQL, (tenant, ceids))
        for ceid, v, after in await cur.fetchall():
            history.setdefault(str(ceid), []).append((int(v), dict(after)))
    rewritten = 0
    for node in nodes:
        logged = history.get(str(node["properties"]["ceid"]))
        if not logged:
            continue
        past, keys, provenance = fold(logged, version)
        kept = {k: v for k, v in node["properties"].items() if k not in keys}
        node["properties"] = {**kept, **past}
        if provenance is not None and "provenance" in kept:
            node["properties"]["provenance"] = provenance
        rewritten += 1
    return rewritten


def changed_values(history: list[tuple[int, dict[str, Any]]], version: int,
                   keys: frozenset[str] | None) -> dict[str, Any]:
    """The properties (of ``keys``, ``None``: all) whose value at ``version`` differs from
    the latest logged one, with their value then (``None``: not set then). Empty for a node
    the log does not know at the version."""
    if not any(v <= version for v, _ in history):
        return {}
    past, ever, _ = fold(history, version)
    latest, _, _ = fold(history, history[-1][0])
    return {k: past.get(k) for k in sorted(ever) if (keys is None or k in keys)
            and past.get(k) != latest.get(k)}


async def past_values(settings: Settings, tenant: str, version: int,
                      keys: frozenset[str] | None) -> dict[str, dict[str, Any]]:
    """``ceid -> {key: value at version}`` for every node of ``tenant`` whose properties
    (of ``keys``) changed after ``version``: the ``$__past`` of a pinned /cypher query whose
    property reads :mod:`cypher_past` rewrote."""
    history: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    async with pg_connection(settings) as conn:
        cur = await conn.execute(CHANGED_SINCE_SQL, (tenant, tenant, version))
        for ceid, v, after in await cur.fetchall():
            history.setdefault(str(ceid), []).append((int(v), dict(after)))
    out = {ceid: changed_values(logged, version, keys) for ceid, logged in history.items()}
    return {ceid: values for ceid, values in out.items() if values}
