""""When" answers no single edge holds, read from the change log of a replayed history:

* ``file_first_seen``: "when was the ui compose file / the tracing overlay / CODEOWNERS
  added?" — the question's words are matched against the file paths the graph's evidence
  cites (path segments and name parts: ``src/ui/docker-compose.yml`` is "ui", "docker",
  "compose"); the answer is the first snapshot whose changes cite the best matching path,
  with that citation;
* ``value_switch``: "when did orders switch to PostgreSQL / start using OpenSearch?" where the
  other end is no entity of its own but a value — the first snapshot in which one of the
  subject's CALLS/DEPENDS_ON edges, an entity at their other end or the subject itself took
  a value naming it (an address ``jdbc:postgresql://orders-db``, an image ``postgres:16``)
  that it did not hold before, cited by the line that states the new value.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.history_lifecycle import (
    REMOVAL_CUE,
    named_owner_entities,
    owned_subject,
    owner_change,
    owner_cue,
    past_named,
    removal,
)
from substrate.retrieval.scope import pg_connection
from substrate.retrieval.strategies_facts import first_seen, named_seed
from substrate.retrieval.temporal_diff import snapshot_ref
from substrate.settings import Settings

MAX_PATHS = 20000
FILE_CUE = re.compile(r"\b(?:files?|overlays?|manifests?|dockerfiles?|makefiles?)\b", re.I)
SWITCH = re.compile(r"\b(?:switch(?:ed|es)?|mov(?:e|ed|es)|migrat(?:e|ed|es)|chang(?:e|ed|es)"
                    r"|port(?:ed)?|convert(?:ed)?)\s+(?:over\s+)?(?:from\s+\S+\s+)?to\s+"
                    r"(?P<to>[\w.+-]+)"
                    r"|\b(?:start(?:ed|s)?|began|begin)\s+(?:using|to\s+use|on)\s+(?P<use>[\w.+-]+)"
                    r"|\badopt(?:ed|s)?\s+(?P<adopt>[\w.+-]+)", re.I)
_STOP = frozenset(re.findall(r"\w+", """a an the of in on at to for and or by with from into
when was were is are did do does has have had been be first added add created create introduced
introduce appear appeared appears start started begin began what which who why how file files
its it this that ever"""))
_SPLIT = re.compile(r"[/._\-\s|]+")
_EXTENSIONS = frozenset({"yml", "yaml", "json", "md", "toml", "txt", "cfg", "ini", "j2"})

FIRST_CITING_SQL = """
SELECT s.version, s.tenant_id, s.valid_at, s.source, s.note,
       substring(c.after::text from %(rx)s) AS ref
FROM change_log c JOIN snapshots s ON s.version = c.snapshot_version
WHERE c.tenant_id = %(tenant)s AND s.tenant_id = %(tenant)s AND s.version <= %(v)s
  AND c.after::text LIKE %(like)s
ORDER BY s.valid_at, s.version, c.id
LIMIT 1
"""
EDGE_KEYS_SQL = """
SELECT DISTINCT c.element_id FROM change_log c
WHERE c.tenant_id = %(tenant)s AND c.element_kind = 'edge' AND c.snapshot_version <= %(v)s
  AND (c.element_id LIKE %(calls)s OR c.element_id LIKE %(depends)s)
"""
FIRST_VALUE_SQL = """
SELECT s.version, s.tenant_id, s.valid_at, s.source, s.note, c.element_kind, c.element_id,
       c.after
FROM change_log c JOIN snapshots s ON s.version = c.snapshot_version
WHERE c.tenant_id = %(tenant)s AND s.tenant_id = %(tenant)s AND s.version <= %(v)s
  AND c.element_id = ANY(%(ids)s) AND c.op IN ('add', 'update')
  AND c.after::text ILIKE %(term)s
  AND (c.before IS NULL OR c.before::text NOT ILIKE %(term)s)
ORDER BY s.valid_at, s.version, c.element_kind = 'edge' DESC, c.id
LIMIT 1
"""
_REF_KINDS = ("image", "address", "url", "host", "port")  # the value, before a variable name


async def _fetch(settings: Settings, sql: str, params: dict[str, Any]
                 ) -> list[tuple[Any, ...]]:
    async with pg_connection(settings) as conn:
        return list(await (await conn.execute(sql, params)).fetchall())


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def path_words(path: str) -> list[str]:
    return [w for w in _SPLIT.split(path.lower()) if w]


def question_words(query: str) -> list[str]:
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9][\w.-]*", query)]
    return [w for w in dict.fromkeys(words) if w not in _STOP and len(w) > 1]


def best_path(query: str, paths: list[str]) -> str | None:
    """The path that the question's words name best: most words matched (a word matches a
    path segment or a part of the file name, a plural its singular), then the path with the
    fewest other parts, then the shortest. None when no path matches any word."""
    words = question_words(query)
    best: tuple[int, int, int, str] | None = None
    for path in paths:
        parts = path_words(path)
        hit = {w for w in words if w in parts or w.rstrip("s") in parts
               or any(p in parts for p in path_words(w) if len(path_words(w)) > 1)}
        if not hit:
            continue
        extra = len([p for p in parts if p not in _EXTENSIONS]) - len(hit)
        key = (-len(hit), extra, len(path), path)
        best = key if best is None or key < best else best
    return best[3] if best else None


def names_file(query: str, paths: list[str]) -> bool:
    """Whether the question asks about a file: a file word ("file", "overlay", "manifest"),
    or a word that is a cited file's whole name ("CODEOWNERS", "Dockerfile")."""
    if FILE_CUE.search(query):
        return True
    names = {p.rsplit("/", 1)[-1].lower() for p in paths}
    return any(w in names for w in question_words(query))


async def _paths(ctx: SearchContext) -> list[str]:
    rows = await ctx.reader.rows("retrieval/evidence_paths", ctx.scope, limit=MAX_PATHS)
    return [str(r["path"]).rsplit("|", 1)[-1] for r in rows]


async def file_first_seen(ctx: SearchContext, entity_named: bool) -> StrategyResult | None:
    """The first snapshot citing the file the question names; None when the question names
    no file (an entity it names is a file only when a file word says so)."""
    paths = list(dict.fromkeys(await _paths(ctx)))
    if not (FILE_CUE.search(ctx.query) or (not entity_named and names_file(ctx.query, paths))):
        return None
    path = best_path(ctx.query, paths)
    if path is None:
        return None
    esc = re.escape(path)
    rows = await _fetch(ctx.settings, FIRST_CITING_SQL, {
        "tenant": ctx.scope.tenant, "v": ctx.scope.version,
        "like": f'%"{_like(path)}#L%', "rx": f'"({esc}#L[0-9]+(?:-L?[0-9]+)?@[0-9a-f]+)"'})
    if not rows:
        return None
    version, tenant, valid_at, source, note, ref = rows[0]
    snap = snapshot_ref({"version": version, "tenant_id": tenant, "valid_at": valid_at,
                         "source": source, "note": note})
    hop = {"type": "DEFINED", "from": path, "to": path, "evidence_ref": ref,
           "source": source, "confidence": 1.0}
    result = StrategyResult("file_history")
    result.hops.append({**hop, "hop": 1})
    result.facts.append({"path": path, "snapshot": snap, "hop": hop})
    return result


def switch_term(query: str) -> str | None:
    """The value a "switch to / start using / adopt Y" question names (Y), else None."""
    m = SWITCH.search(query)
    if m is None:
        return None
    term = (m["to"] or m["use"] or m["adopt"] or "").strip(".?!,").lower()
    return None if term in _STOP or len(term) < 3 else term


def stem(term: str) -> str:
    """A prefix that the written forms share ("postgresql" -> "postgres", "mysql")."""
    return term[: max(5, len(term) - 2)] if len(term) > 5 else term


def _refs_naming(after: dict[str, Any], term: str) -> list[str]:
    """The evidence of a changed element that states the value naming ``term``."""
    props = after.get("props") if isinstance(after.get("props"), dict) else after
    refs = [str(r) for r in (props or {}).get("attribute_refs") or []]
    own = [str(after.get("evidence_ref") or "")]
    own += [str(r) for r in (props or {}).get("evidence_refs") or []]
    naming = sorted((r for r in refs if term in r.lower()), key=lambda r: (
        r.split("|", 1)[0] not in _REF_KINDS, r))
    naming = [r.rsplit("|", 1)[-1] for r in naming]
    return [r for r in dict.fromkeys([*own, *naming, *(r.rsplit("|", 1)[-1] for r in refs)])
            if "#L" in r]


async def value_switch(ctx: SearchContext, subject: dict[str, Any]) -> StrategyResult | None:
    """When the subject (its edges, their other ends, itself) first took a value naming the
    term of a "switch to / start using" question; None when nothing ever did."""
    term = switch_term(ctx.query)
    if term is None:
        return None
    ceid, tenant, v = subject["ceid"], ctx.scope.tenant, ctx.scope.version
    keys = [r[0] for r in await _fetch(ctx.settings, EDGE_KEYS_SQL, {
        "tenant": tenant, "v": v, "calls": f"{_like(ceid)}-[CALLS]->%",
        "depends": f"{_like(ceid)}-[DEPENDS_ON]->%"})]
    ends = [k.split("]->", 1)[1].rsplit("@", 1)[0] for k in keys]
    ids = list(dict.fromkeys([*keys, *ends, ceid]))
    rows = await _fetch(ctx.settings, FIRST_VALUE_SQL, {
        "tenant": tenant, "v": v, "ids": ids, "term": f"%{_like(stem(term))}%"})
    if not rows:
        return None
    version, tenant_id, valid_at, source, note, kind, element, after = rows[0]
    data = json.loads(after) if isinstance(after, str) else dict(after or {})
    snap = snapshot_ref({"version": version, "tenant_id": tenant_id, "valid_at": valid_at,
                         "source": source, "note": note})
    refs = _refs_naming(data, stem(term))
    target = element.split("]->", 1)[1].rsplit("@", 1)[0] if kind == "edge" else element
    hop = {"type": "CHANGED", "from": ceid, "to": target, "evidence_ref": refs[0] if refs
           else None, "source": source, "confidence": 1.0}
    result = StrategyResult("value_history")
    if refs:
        result.hops.append({**hop, "hop": 1})
    result.facts.append({"subject": subject, "term": term, "element": element,
                         "kind": kind, "snapshot": snap, "hop": hop})
    return result


def _named_by(term: str, entity: dict[str, Any] | None) -> bool:
    return entity is not None and stem(term) in str(entity.get("name") or "").lower()


async def when_results(ctx: SearchContext, fused: list[Hit],
                       results: dict[str, StrategyResult]) -> dict[str, StrategyResult]:
    """The facts of a "when" question: a change of owners when it asks about owners, else a
    switch to a value no edge names, else the edge history, else when the entity was removed
    when it asks that, else a file's first appearance, else the first appearance of the
    entity (one the graph no longer holds included)."""
    history = results.get("edge_history")
    facts = history.facts if history is not None else []
    term = switch_term(ctx.query)
    subjects = [s for s in ctx.seeds if s["label"] in ("Service", "Infrastructure")]
    asks_owner = owner_cue(ctx.query, ctx.seeds)
    owned = owned_subject(ctx.seeds) if asks_owner else None
    if owned is not None:
        return {**results, "owner_history": await owner_change(ctx, owned)}
    owner = await named_owner_entities(ctx) if asks_owner else []
    if owner:  # "when did abroddrick become an owner?": its first ownership claim
        seen = await first_seen(replace(ctx, seeds=owner[:1]), [])
        if seen is not None:
            return {**results, "first_seen": seen}
    if term is not None and subjects and not (facts and _named_by(term, facts[0].get("object"))):
        switched = await value_switch(ctx, facts[0]["subject"] if facts else subjects[0])
        if switched is not None:
            return {**results, "value_history": switched}
    if facts:
        return results
    if REMOVAL_CUE.search(ctx.query):
        removed = await removal(ctx)
        if removed is not None:
            return {**results, "removal": removed}
    named = any(named_seed(s) for s in ctx.seeds)
    added = await file_first_seen(ctx, named)
    if added is not None:
        return {**results, "file_history": added}
    if not named:  # a name the gazetteer cannot see: an entity the graph no longer holds
        past = [r["entity"] for r in await past_named(ctx) if r["iv_from"]]
        ctx = replace(ctx, seeds=[*past[:1], *ctx.seeds])
    seen = await first_seen(ctx, fused)  # one entity named: when it first appeared
    return results if seen is None else {**results, "first_seen": seen}
