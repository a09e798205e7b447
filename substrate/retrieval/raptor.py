"""RAPTOR tree retrieval (RSN-05): a top-down walk over the tree the communities job stores
(``gds_jobs.raptor``: system -> service domain -> module cluster -> node).

At each level the children of the branches kept so far are scored (``relevance``: embedding
cosine blended with keyword overlap); only children scoring at least ``THRESHOLD`` and within
``MARGIN`` of the best child are expanded (at most ``BEAM``; the best one always), so the walk
reasons at the level where the question's answer lives instead of reading every leaf. The
nodes reached at the leaf level are the hits (entity ids, so they fuse with the other
strategies); the ``LEAF_HOP`` best leaves also bring what they depend on (one graph hop, stored
with the leaf), since a multi-hop answer often ends one edge beyond the branch that names the
question's subject. The path taken — every child considered, its score, whether it was
expanded, and the hops — is returned in ``trace``.

Policy: the tree of the reader's clearance level, from the newest snapshot at or before its
snapshot (a pinned read walks the tree of its snapshot); a reader restricted to jurisdictions
gets no summary text, only the leaves it may see.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pgvector.psycopg import register_vector_async

from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.relevance import relevance, terms
from substrate.retrieval.scope import ReadScope, pg_connection
from substrate.settings import Settings

THRESHOLD = 0.2
MARGIN = 0.08
BEAM = 3
LEAF_HOP = 3  # the best leaves whose dependencies join the answer
HOP_DISCOUNT = 0.9
LEVEL_NAMES = ("system", "domain", "module", "node")
_TREE = """
WITH pinned AS MATERIALIZED (
  SELECT max(snapshot_version) AS v FROM raptor_nodes
  WHERE tenant_id = %(tenant)s AND clearance = %(clearance)s AND snapshot_version <= %(v)s)
SELECT node_id, level, parent_id, title, summary, members, embedding, snapshot_version
FROM raptor_nodes r, pinned
WHERE r.tenant_id = %(tenant)s AND r.clearance = %(clearance)s
  AND r.snapshot_version = pinned.v
ORDER BY level, node_id
"""


@dataclass(frozen=True)
class Scored:
    row: dict[str, Any]
    score: float


async def load_tree(settings: Settings, scope: ReadScope) -> list[dict[str, Any]]:
    async with pg_connection(settings) as conn:
        await register_vector_async(conn)
        cur = await conn.execute(_TREE, {"tenant": scope.tenant,
                                         "clearance": scope.clearance[-1],
                                         "v": scope.version})
        names = [d.name for d in cur.description or ()]
        return [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]


def walk(rows: Sequence[dict[str, Any]], query_vector: Sequence[float], query: str,
         threshold: float = THRESHOLD, beam: int = BEAM,
         ) -> tuple[list[Scored], list[dict[str, Any]]]:
    """The leaves reached (best first) and the path: per level every child considered."""
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        children[r["parent_id"]].append(r)
    words, qv = terms(query), np.asarray(query_vector, dtype=np.float32)
    frontier = children[None][:1]
    path: list[dict[str, Any]] = [
        {"level": 0, "kind": "system", "node_id": r["node_id"], "title": r["title"],
         "score": None, "expanded": True} for r in frontier]
    reached: list[Scored] = []
    for level in (1, 2, 3):
        scored = sorted((Scored(c, relevance(qv, words, c["embedding"],
                                             f"{c['title']} {c['summary']}"))
                         for p in frontier for c in children[p["node_id"]]),
                        key=lambda s: (-s.score, s.row["node_id"]))
        if not scored:
            break
        floor = max(threshold, scored[0].score - MARGIN)
        keep = [s for s in scored if s.score >= floor][:beam] or scored[:1]
        kept = {s.row["node_id"] for s in keep}
        path += [{"level": level, "kind": LEVEL_NAMES[level], "node_id": s.row["node_id"],
                  "title": s.row["title"], "score": s.score,
                  "expanded": s.row["node_id"] in kept}
                 for s in (scored if level < 3 else keep)]
        if level == 3:
            reached = scored  # every leaf of the kept modules, best first
        frontier = [s.row for s in keep]
    return reached, path


def with_dependencies(rows: Sequence[dict[str, Any]], reached: list[Scored],
                      top: int = LEAF_HOP) -> tuple[list[Scored], list[dict[str, Any]]]:
    """The reached leaves with the dependencies of the ``top`` best inserted after them
    (each once, scored ``HOP_DISCOUNT`` x its leaf), and the hops taken."""
    leaves = {r["node_id"]: r for r in rows if r["level"] == 3}
    seen = {s.row["node_id"] for s in reached}
    extra: list[Scored] = []
    hops: list[dict[str, Any]] = []
    for s in reached[:top]:
        for ceid in (s.row["members"] or [{}])[0].get("depends_on", []):
            node_id = f"N:{ceid}"
            if node_id in seen:
                continue
            seen.add(node_id)
            row = leaves.get(node_id) or {"node_id": node_id, "title": ceid, "summary": "",
                                          "members": [{"ceid": ceid, "name": ceid,
                                                       "label": "Entity"}]}
            extra.append(Scored(row, round(s.score * HOP_DISCOUNT, 6)))
            hops.append({"level": 3, "kind": "dependency", "node_id": node_id,
                         "title": row["title"], "score": extra[-1].score, "expanded": True,
                         "via": s.row["node_id"]})
    return [*reached[:top], *extra, *reached[top:]], hops


def _leaf_hit(s: Scored, with_text: bool) -> Hit:
    member = (s.row["members"] or [{}])[0]
    ceid = str(s.row["node_id"])[2:]
    return Hit(ceid, str(member.get("name", s.row["title"])), str(member.get("label", "Entity")),
               str(s.row["summary"])[:600] if with_text else "", s.score)


async def raptor(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("raptor")
    rows = await load_tree(ctx.settings, ctx.scope)
    if not rows:
        result.note = ("no RAPTOR tree stored for this tenant, clearance and snapshot yet; "
                       "the communities job builds it (python -m gds_jobs communities)")
        return result
    reached, path = walk(rows, await ctx.query_embedding(), ctx.query)
    reached, hops = with_dependencies(rows, reached)
    path += hops
    restricted = ctx.scope.jurisdictions is not None
    hits = [_leaf_hit(s, not restricted) for s in reached]
    if restricted and hits:
        hidden = {r["ceid"] for r in await ctx.reader.rows(
            "temporal/hidden", ctx.scope, {"label": "Entity"}, ceids=[h.id for h in hits])}
        hits = [h for h in hits if h.id not in hidden]
        path = [p for p in path if p["level"] in (0, 3) and p["node_id"][2:] not in hidden]
    result.truncated = len(hits) > ctx.options.top_k
    result.hits = hits[: ctx.options.top_k]
    result.trace = path
    result.facts = [{"raptor_snapshot_version": rows[0]["snapshot_version"]}]
    steps = [p for p in path if p["expanded"] and p["level"] in (1, 2)]
    result.note = "RAPTOR path: " + " -> ".join(
        ["System overview", *(f"{p['kind']} '{p['title']}' ({p['score']:.2f})" for p in steps)])
    return result
