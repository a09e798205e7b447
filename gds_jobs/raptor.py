"""The RAPTOR tree (RSN-05), built by the communities job from the Leiden hierarchy and the
chunk graph, one tree per tenant, clearance level and snapshot (``raptor_nodes``):

* level 0 ``S`` — the system: one summary of the whole structure and its tensions;
* level 1 ``D:<id>`` — a service domain: a final Leiden community (its community summary);
* level 2 ``M:<id>`` — a module cluster: a finest-level Leiden community inside the domain
  (a domain Leiden did not split, or its members left out of every finer community, form one
  module of their own, ``M:<domain id>``);
* level 3 ``N:<ceid>`` — a node: what the graph says about one service or infrastructure
  component plus the passages of the chunk graph (documents, ADRs, post-mortems, notes) that
  mention, explain or report on it.

Summaries are extractive (graph facts and chunk sentences, fixed order: the same snapshot
gives the same tree) or, for the system and domain levels when the ``scout`` model role is
configured, written by that model from the children's summaries. Every node is embedded
with the configured embedder; the query-time walk is ``substrate.retrieval.raptor``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from gds_jobs.communities import StoredCommunity
from gds_jobs.runtime import JobContext
from gds_jobs.summaries import Facts, build_summary, fan_in
from substrate.embeddings import TextEmbedder
from substrate.llm.roles import RoleLLM, Usage, role_config
from substrate.retrieval.scope import ReadScope
from substrate.settings import Settings

MAX_PASSAGE = 280
MAX_PASSAGES = 2
EMBED_CHARS = 700
SYSTEM_ID = "S"
SCOUT_SYSTEM = ("You write one short paragraph summarising part of a software system's "
                "architecture from the summaries given. Use only names that appear in them.")


@dataclass(frozen=True)
class TreeNode:
    node_id: str
    level: int
    parent_id: str | None
    title: str
    summary: str
    members: list[dict[str, Any]] = field(default_factory=list)


def embed_text(node: TreeNode) -> str:
    """What is embedded: the title and the start of the summary (the model reads 256 tokens;
    a shorter input is faster and loses little)."""
    return f"{node.title}. {node.summary}"[:EMBED_CHARS]


def _sentences(text: str, limit: int = MAX_PASSAGE) -> str:
    """The first sentences of a chunk (markdown marks dropped), at most ``limit`` chars."""
    plain = re.sub(r"[#*`>|_]+", " ", text)
    plain = " ".join(plain.split())
    if len(plain) <= limit:
        return plain
    cut = plain[:limit]
    end = max(cut.rfind(". "), cut.rfind("; "))
    return cut[: end + 1] if end > limit // 3 else cut.rstrip() + "…"


def leaf_member(facts: Facts) -> dict[str, Any]:
    """A leaf's member: the entity, its fan-in and what it depends on (the graph hop the
    query-time walk may take from a leaf it reached)."""
    return {**facts["member"], "fan_in": fan_in(facts),
            "depends_on": sorted({h["other"]["ceid"] for h in facts["depends_on"]})}


def leaf_summary(facts: Facts, passages: Sequence[Mapping[str, Any]]) -> str:
    m = facts["member"]
    parts = [f"{m['name']} ({m['label'].lower()}{', ' + facts['kind'] if facts['kind'] else ''})"
             + (f": {' '.join(str(facts['description']).split())}." if facts["description"]
                else ".")]
    deps = sorted({h["other"]["name"] for h in facts["depends_on"]})
    users = sorted({h["other"]["name"] for h in facts["dependents"]})
    owners = sorted({h["other"]["name"] for h in facts["owners"]})
    incidents = sorted({h["other"]["name"] for h in facts["incidents"]})
    for head, names in (("Depends on", deps), ("Used by", users), ("Owned by", owners),
                        ("Incidents", incidents)):
        if names:
            parts.append(f"{head}: {', '.join(names[:10])}" + (" …" if len(names) > 10 else "")
                         + ".")
    parts += [_sentences(str(p["text"])) for p in passages[:MAX_PASSAGES]]
    return " ".join(parts)


def system_summary(domains: Sequence[TreeNode]) -> str:
    """The system node's text from the domain nodes (their titles and members' fan-in)."""
    members = {m["ceid"]: m for d in domains for m in d.members}
    services = sum(1 for m in members.values() if m.get("label") == "Service")
    hubs = sorted(members.values(), key=lambda m: (-int(m.get("fan_in", 0)), m["name"]))[:5]
    lines = [f"The system has {services} services and {len(members) - services} "
             f"infrastructure components in {len(domains)} service domains: "
             + "; ".join(d.title for d in domains) + "."]
    if hubs and int(hubs[0].get("fan_in", 0)) > 0:
        lines.append("Most depended upon: " + ", ".join(
            f"{m['name']} ({m.get('fan_in', 0)} dependents)" for m in hubs) + ".")
    return " ".join(lines)


def system_node(domains: Sequence[TreeNode], settings: Settings | None) -> TreeNode:
    text = system_summary(domains)
    scouted = _scout(settings, "the system", [d.summary for d in domains]) \
        if settings and domains else None
    return TreeNode(SYSTEM_ID, 0, None, "System overview", scouted or text)


def _scout(settings: Settings, title: str, texts: Sequence[str]) -> str | None:
    config = role_config(settings, "scout")
    if not config.configured:
        return None
    prompt = f"Summarise '{title}' from these summaries:\n\n" + "\n\n".join(texts)

    async def ask() -> str:
        llm = RoleLLM(config)
        try:
            return await llm.complete(prompt, Usage(), system=SCOUT_SYSTEM)
        finally:
            await llm.aclose()

    return asyncio.run(ask()).strip() or None


def _modules(domain: StoredCommunity, finer: Sequence[StoredCommunity]) -> list[
        tuple[str, StoredCommunity | None, tuple[str, ...]]]:
    """(node id, community or None, members) of the module clusters inside ``domain``."""
    inside = set(domain.community.members)
    found = [c for c in finer if set(c.community.members) <= inside]
    rest = tuple(sorted(inside - {m for c in found for m in c.community.members}))
    out: list[tuple[str, StoredCommunity | None, tuple[str, ...]]] = [
        (f"M:{c.community.community_id}", c, c.community.members) for c in found]
    if rest:
        out.append((f"M:{domain.community.community_id}", None, rest))
    return out


def tree_nodes(items: Sequence[StoredCommunity], facts: Mapping[str, Facts],
               passages: Mapping[str, Sequence[Mapping[str, Any]]],
               settings: Settings | None = None) -> list[TreeNode]:
    """The whole tree from the stored communities (levels 1 and 2) and the members' facts."""
    domains = sorted((i for i in items if i.community.level == 1),
                     key=lambda i: i.community.community_id)
    finer = [i for i in items if i.community.level == 2]
    out: list[TreeNode] = []
    for d in domains:
        did = f"D:{d.community.community_id}"
        text = (_scout(settings, d.summary.title, [d.summary.text]) if settings else None)
        out.append(TreeNode(did, 1, SYSTEM_ID, d.summary.title, text or d.summary.text,
                            d.summary.members))
        for mid, module, members in _modules(d, finer):
            rows = [facts[m] for m in members if m in facts]
            summary = module.summary if module is not None else build_summary(rows)
            out.append(TreeNode(mid, 2, did, summary.title, summary.text, summary.members))
            out += [TreeNode(f"N:{m}", 3, mid, facts[m]["member"]["name"],
                             leaf_summary(facts[m], passages.get(m, ())), [leaf_member(facts[m])])
                    for m in members if m in facts]
    return [system_node([n for n in out if n.level == 1], settings), *out]


def store_tree(settings: Settings, scope: ReadScope, nodes: Sequence[TreeNode],
               embedder: TextEmbedder) -> int:
    vectors = embedder.embed_documents([embed_text(n) for n in nodes])
    with psycopg.connect(settings.postgres_dsn) as conn:
        register_vector(conn)
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("DELETE FROM raptor_nodes WHERE tenant_id = %s AND clearance = %s "
                        "AND snapshot_version = %s",
                        (scope.tenant, scope.clearance[-1], scope.version))
            _insert(cur, scope, nodes, vectors)
    return len(nodes)


def build_tree(ctx: JobContext, scope: ReadScope, items: Sequence[StoredCommunity],
               embedder: TextEmbedder) -> int:
    """Build and store the scope's tree; returns how many tree nodes were stored."""
    wanted = sorted({m for i in items if i.community.level == 1 for m in i.community.members})
    if not wanted:
        return store_tree(ctx.settings, scope, [], embedder)
    facts = {r["member"]["ceid"]: r for r in ctx.rows("gds/entity_facts", scope, ceids=wanted)}
    passages = {r["ceid"]: r["passages"]
                for r in ctx.rows("gds/entity_context", scope, ceids=wanted)}
    nodes = tree_nodes(items, facts, passages, ctx.settings)
    return store_tree(ctx.settings, scope, nodes, embedder)


_COPY_KEPT = """
INSERT INTO raptor_nodes (tenant_id, clearance, snapshot_version, node_id, level, parent_id,
  title, summary, members, embedding)
SELECT tenant_id, clearance, %(v)s, node_id, level, parent_id, title, summary, members, embedding
FROM raptor_nodes r
WHERE tenant_id = %(tenant)s AND clearance = %(clearance)s AND snapshot_version = %(from)s
  AND level > 0
  AND NOT (level = 1 AND node_id = ANY(%(gone)s))
  AND NOT (level = 2 AND parent_id = ANY(%(gone)s))
  AND NOT (level = 3 AND (substr(node_id, 3) = ANY(%(affected)s) OR parent_id IN (
    SELECT m.node_id FROM raptor_nodes m
    WHERE m.tenant_id = %(tenant)s AND m.clearance = %(clearance)s
      AND m.snapshot_version = %(from)s AND m.level = 2 AND m.parent_id = ANY(%(gone)s))))
"""
_DOMAINS = ("SELECT node_id, title, summary, members FROM raptor_nodes WHERE tenant_id = %s "
            "AND clearance = %s AND snapshot_version = %s AND level = 1 ORDER BY node_id")


def update_tree(ctx: JobContext, scope: ReadScope, previous: int,
                items: Sequence[StoredCommunity], touched: Sequence[str],
                affected: Sequence[str], embedder: TextEmbedder) -> int:
    """Incremental: the tree of snapshot ``previous`` without the subtrees of the ``touched``
    domains and the ``affected`` nodes, plus the subtrees of the new communities ``items``
    and a new system node; returns how many tree nodes were written (new ones)."""
    wanted = sorted({m for i in items if i.community.level == 1 for m in i.community.members})
    facts = {r["member"]["ceid"]: r for r in ctx.rows("gds/entity_facts", scope, ceids=wanted)}
    passages = {r["ceid"]: r["passages"]
                for r in ctx.rows("gds/entity_context", scope, ceids=wanted)}
    fresh = [n for n in tree_nodes(items, facts, passages) if n.level > 0]
    level = scope.clearance[-1]
    vectors = embedder.embed_documents([embed_text(n) for n in fresh])
    with psycopg.connect(ctx.settings.postgres_dsn) as conn:
        register_vector(conn)
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("DELETE FROM raptor_nodes WHERE tenant_id = %s AND clearance = %s "
                        "AND snapshot_version = %s", (scope.tenant, level, scope.version))
            cur.execute(_COPY_KEPT, {"v": scope.version, "tenant": scope.tenant,
                                     "clearance": level, "from": previous,
                                     "gone": [f"D:{d}" for d in touched],
                                     "affected": list(affected)})
            _insert(cur, scope, fresh, vectors)
            domains = [TreeNode(r[0], 1, SYSTEM_ID, r[1], r[2], r[3]) for r in cur.execute(
                _DOMAINS, (scope.tenant, level, scope.version)).fetchall()]
            top = system_node(domains, None)
            _insert(cur, scope, [top], embedder.embed_documents([embed_text(top)]))
    return len(fresh) + 1


def _insert(cur: psycopg.Cursor[Any], scope: ReadScope, nodes: Sequence[TreeNode],
            vectors: Sequence[Sequence[float]]) -> None:
    cur.executemany(
        "INSERT INTO raptor_nodes (tenant_id, clearance, snapshot_version, node_id, level, "
        "parent_id, title, summary, members, embedding) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [(scope.tenant, scope.clearance[-1], scope.version, n.node_id, n.level, n.parent_id,
          n.title, n.summary, Jsonb(n.members), np.asarray(v, dtype=np.float32))
         for n, v in zip(nodes, vectors, strict=True)])
