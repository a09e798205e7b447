"""Graph strategies: local GraphRAG (RSN-04), dependencies, callers, ownership, memory."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

import psycopg

from substrate.connectors.infra_kinds import KINDS
from substrate.graph.verification import suggested_edges
from substrate.retrieval import direct, owned_paths
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.mentions import listed_together
from substrate.retrieval.router import asks_where_stored, asks_whether
from substrate.retrieval.scope import pg_connection
from substrate.retrieval.strategies_messages import MAX_SERVICES as MAX_MESSAGE_SERVICES
from substrate.retrieval.strategies_messages import flows

SUGGESTED_DEADLINE_S = 1.0  # the queue's read for a subject with no edge: skipped past it


def _hit(entity: dict[str, Any], score: float, text: str = "") -> Hit:
    return Hit(entity["ceid"], str(entity.get("name") or entity["ceid"]),
               str(entity.get("label") or ""), text or str(entity.get("name") or ""), score)


def numbered(hops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hops of one path, each with its position (1 = adjacent to the seed)."""
    return [{**h, "hop": i + 1} for i, h in enumerate(hops)]


async def local_graphrag(ctx: SearchContext) -> StrategyResult:
    """Seeded traversal over CALLS/DEPENDS_ON/IMPORTS/OWNS/HOSTS, 1..max_hops, pruned by weight."""
    result = StrategyResult("local_graphrag")
    seeds = ctx.seed_ids()
    if not seeds:
        result.note = "no linked entities to seed on"
        return result
    depth = min(ctx.route.depth or ctx.options.max_hops, 3)
    limit = ctx.options.top_k * 5
    rows = await ctx.reader.rows(
        "retrieval/local_graph", ctx.scope, {"depth": depth}, seeds=seeds,
        min_weight=ctx.options.min_weight, limit=limit + 1,
    )
    result.truncated = len(rows) > limit
    for rank, row in enumerate(rows[:limit]):
        result.hits.append(_hit(row["target"], 1.0 / (1 + rank)))
        result.hops.extend(numbered(row["hops"]))
    return result


async def _directed(ctx: SearchContext, name: str, direction: str,
                    default_depth: int) -> StrategyResult:
    result = StrategyResult(name)
    services = [s for s in ctx.seeds if s["label"] in ("Service", "Infrastructure")]
    if not services:
        result.note = "no service named in the question"
        return result
    query = direct.DependencyQuery(
        depth=min(ctx.route.depth or default_depth, 3), direction=direction,
        types=("CALLS", "DEPENDS_ON"), min_weight=ctx.options.min_weight,
        limit=min(ctx.options.top_k * 5, direct.MAX_RESULTS),
    ).validate()
    used = [s for s in services if s.get("why") == "technology"]  # every datastore running it
    for service in used if services[0].get("why") == "technology" else services[:1]:
        rows, cut = await direct.dependencies(ctx.reader, ctx.scope, service, query)
        result.truncated |= cut
        clients: list[dict[str, str]] | None = None
        if direction == "out" and asks_where_stored(ctx.query):
            stores = await _stores_first(ctx, rows)
            if stores is None:  # no datastore among them: the clients its build declares
                clients = await _data_clients(ctx, service)
            else:
                rows = stores
        check = await relation_check(ctx, service, services, rows) \
            if direction == "out" and asks_whether(ctx.query) else None
        if check is not None and not check["found"] and check["named"] and query.depth < 3:
            # no direct edge to what was named: reached through others? (said so, as such)
            deeper, _ = await direct.dependencies(ctx.reader, ctx.scope, service,
                                                  replace(query, depth=3))
            check["through"] = [{"subject": service, "target": r["target"], "depth": r["depth"],
                                 "hops": r["hops"]} for r in deeper
                                if str(r["target"]["ceid"]) in check["named"]]
            if not check["through"]:  # a producer and a consumer of one broker?
                check["shared"] = await _shared_brokers(ctx, services, check["named"], rows,
                                                        query)
        for rank, row in enumerate(rows):
            result.hits.append(_hit(row["target"], 1.0 / (1 + rank)))
            result.hops.extend(numbered(row["hops"]))
            result.facts.append({"subject": service, "target": row["target"],
                                 "depth": row["depth"], "hops": row["hops"]})
        if not rows:  # looked up and found nothing: the answer says so, and what waits
            waiting = await suggested(ctx, service, direction)
            result.facts.append({"subject": service, "target": None, "depth": 0, "hops": [],
                                 "suggested": waiting})
            if waiting:  # a reviewer's decision changes the answer: it is not cached
                result.pending = "verification"
        if check is not None or clients is not None:  # said first: yes or no ("does
            # checkout call payment?"), or no datastore but these clients ("where does ...")
            first = next(i for i, f in enumerate(result.facts) if f["subject"] is service)
            said = {"check": check} if check is not None else {"clients": clients}
            result.facts[first] = {**result.facts[first], **said}
    return result


STORE_KINDS = frozenset({"database", "cache", "search", "storage"})  # kinds that keep data
BROKER_KINDS = frozenset({"queue"})  # kinds through which services exchange messages


async def _shared_brokers(ctx: SearchContext, named: list[dict[str, Any]], others: list[str],
                          rows: list[dict[str, Any]], query: direct.DependencyQuery
                          ) -> list[dict[str, Any]]:
    """The message brokers the subject (``rows``: its dependencies) and a named entity both
    depend on: "does payment call dispatch?" has no edge, but both use rabbitmq. Each with the
    subject's hop and the other's (``hops``)."""
    props = await _infra_props(ctx, rows)
    mine = {str(r["target"]["ceid"]): r for r in rows
            if props.get(str(r["target"]["ceid"]), {}).get("kind") in BROKER_KINDS}
    shared: list[dict[str, Any]] = []
    for other in (s for s in named if s["ceid"] in others and mine):
        theirs, _ = await direct.dependencies(ctx.reader, ctx.scope, other, query)
        shared += [{"other": other, "target": r["target"],
                    "hops": [*mine[str(r["target"]["ceid"])]["hops"], *r["hops"]]}
                   for r in theirs if str(r["target"]["ceid"]) in mine]
    if shared:  # what passes between them, as their code says (connectors.messages)
        rows = await ctx.reader.rows("retrieval/message_flows", ctx.scope,
                                     limit=MAX_MESSAGE_SERVICES)
        sent = {str(f["service"]["ceid"]): f for f in flows(rows)}
        for entry in shared:
            entry["messages"] = passing(sent, str(named[0]["ceid"]), str(entry["other"]["ceid"]))
    return shared


def passing(sent: dict[str, dict[str, Any]], a: str, b: str) -> dict[str, Any] | None:
    """What ``a``'s code publishes that ``b``'s consumes and the other way round (``sent``:
    ceid -> its messages, ``strategies_messages.flows``): ``{"flows": [{"from", "to",
    "message", "refs"}]}``, empty flows when both send or receive something but nothing
    passes between them; None when either sends and receives nothing recorded."""
    if a not in sent or b not in sent:
        return None
    out = []
    for src, dst in ((a, b), (b, a)):
        for message, ref in sent[src]["publishes"].items():
            if message in sent[dst]["consumes"]:
                out.append({"from": sent[src]["service"], "to": sent[dst]["service"],
                            "message": message, "refs": [ref, sent[dst]["consumes"][message]]})
    return {"flows": out}


async def _stores_first(ctx: SearchContext, rows: list[dict[str, Any]]
                        ) -> list[dict[str, Any]] | None:
    """The rows whose target keeps data (an ``Infrastructure`` of a :data:`STORE_KINDS`
    kind); None when none does."""
    props = await _infra_props(ctx, rows)
    stores = {c for c, p in props.items() if p.get("kind") in STORE_KINDS}
    return [r for r in rows if r["target"]["ceid"] in stores] or None


async def _data_clients(ctx: SearchContext, subject: dict[str, Any]) -> list[dict[str, str]]:
    """The datastore clients the subject's build declares (``connectors.data_clients``),
    each with the line declaring it: ``[{"product", "evidence_ref"}]``."""
    found = await ctx.reader.rows("retrieval/entity_props", ctx.scope, ceids=[subject["ceid"]])
    props = found[0]["props"] if found else {}
    refs = {value: ref for kind, value, ref in (str(r).split("|", 2) for r in
            props.get("attribute_refs") or [] if str(r).count("|") >= 2)
            if kind == "data_clients"}
    return [{"product": str(p), "evidence_ref": refs.get(str(p), "")}
            for p in props.get("data_clients") or []]


async def _infra_props(ctx: SearchContext, rows: list[dict[str, Any]]
                       ) -> dict[str, dict[str, Any]]:
    """``ceid -> props`` of the rows' ``Infrastructure`` targets (one read; none without)."""
    infra = sorted({str(r["target"]["ceid"]) for r in rows
                    if r["target"].get("label") == "Infrastructure"})
    found = await ctx.reader.rows("retrieval/entity_props", ctx.scope, ceids=infra) \
        if infra else []
    return {str(f["entity"]["ceid"]): {**f["props"], "name": f["entity"].get("name")}
            for f in found}


PRODUCTS = tuple(p for names in KINDS.values() for p in names)  # "postgres", "redis", ...
# the kinds of datastore a yes/no question may ask about ("does cart use a cache?")
_ASKED_KINDS = (
    (re.compile(r"\bcaches?\b|\bcaching\b", re.I), {"cache"}),
    (re.compile(r"\b(?:databases?|dbs?)\b", re.I), {"database"}),
    (re.compile(r"\bdata\s?stores?\b", re.I), set(STORE_KINDS)),
    (re.compile(r"\b(?:message\s+)?(?:queues?|brokers?)\b", re.I), {"queue"}),
    (re.compile(r"\bsearch\s+(?:engines?|index(?:es)?)\b", re.I), {"search"}),
    (re.compile(r"\b(?:object\s+stores?|buckets?|blob\s+stor\w+)\b", re.I), {"storage"}),
)


async def relation_check(ctx: SearchContext, subject: dict[str, Any],
                         named: list[dict[str, Any]], rows: list[dict[str, Any]]
                         ) -> dict[str, Any] | None:
    """Whether ``rows`` (the subject's dependencies) reach what the question names beside the
    subject: another entity, or a kind of datastore ("a cache"). ``None`` when it names none.
    ``asked``: the names and kinds asked about; ``found``: the targets that match;
    ``named``: the ids of the entities named."""
    others = {str(s["ceid"]): str(s.get("name") or s["ceid"]) for s in named
              if s["ceid"] != subject["ceid"]}
    kinds: set[str] = set()
    words: list[str] = []
    for rx, asked in _ASKED_KINDS:
        said = rx.search(ctx.query)
        if said is not None:
            kinds |= asked
            word = said.group(0).lower()
            words.append(f"{'an' if word[0] in 'aeiou' else 'a'} {word}")
    # a product named and not linked to an entity ("does cart use valkey?")
    products = [p for p in PRODUCTS if re.search(rf"\b{p}", ctx.query, re.I)
                and not any(p in o.lower() for o in others.values())]
    if not others and not kinds and not products:
        return None
    found = {str(r["target"]["ceid"]) for r in rows if str(r["target"]["ceid"]) in others}
    if kinds or products:
        found |= {c for c, p in (await _infra_props(ctx, rows)).items()
                  if p.get("kind") in kinds
                  or any(w in f"{p.get('image') or ''} {p.get('name')}".lower()
                         for w in products)}
    return {"asked": [*others.values(), *words, *products], "found": sorted(found),
            "named": sorted(others)}


async def suggested(ctx: SearchContext, subject: dict[str, Any], direction: str
                    ) -> list[dict[str, Any]]:
    """What the verification queue holds for a subject with no edge recorded (a store named
    after it, "carts-db" of "carts"): each suggested edge whose other end the reader may see,
    with its evidence, confidence, why it was suggested and its queue id. Not in the graph
    until a reviewer approves it; a failed read says nothing (the answer stands without)."""
    try:
        async with asyncio.timeout(SUGGESTED_DEADLINE_S), \
                pg_connection(ctx.settings, ctx.pool) as conn:
            found = await suggested_edges(conn, ctx.scope.tenant, str(subject["ceid"]),
                                          ["CALLS", "DEPENDS_ON"], direction == "out")
    except (psycopg.Error, OSError, TimeoutError):
        return []
    if not found:
        return []
    other = {edge.dst if direction == "out" else edge.src for _, edge in found}
    seen = {str(r["entity"]["ceid"]): r["entity"] for r in await ctx.reader.rows(
        "retrieval/entity_props", ctx.scope, ceids=sorted(other))}
    return [{"target": seen[end], "type": edge.type, "evidence_ref": edge.evidence_ref,
             "confidence": edge.confidence, "via": edge.props.get("via"), "queue_id": item_id}
            for item_id, edge in found
            if (end := edge.dst if direction == "out" else edge.src) in seen]


async def dependencies(ctx: SearchContext) -> StrategyResult:
    return await _directed(ctx, "dependencies", "out", 1)


async def callers(ctx: SearchContext) -> StrategyResult:
    return await _directed(ctx, "callers", "in", 1)


async def defined_at(ctx: SearchContext, ceid: str) -> list[str]:
    """The ``path#Lline@commit`` refs where the entity is defined (its provenance)."""
    rows = await ctx.reader.rows("retrieval/entity_props", ctx.scope, ceids=[ceid])
    refs = [str(r) for row in rows for r in row["props"].get("provenance") or []]
    return [r for r in refs if "#L" in r]


async def _path_subject(ctx: SearchContext, service: dict[str, Any] | None,
                        ) -> dict[str, Any] | None:
    """The module (a path no service stands for) the question asks about, if any."""
    modules = await ctx.reader.rows("retrieval/owned_paths", ctx.scope, limit=2000)
    found = owned_paths.best_module(ctx.query, [{**m["entity"], **m} for m in modules])
    return found if owned_paths.prefer_module(ctx.query, found, service) else None


async def ownership(ctx: SearchContext) -> StrategyResult:
    """Owners of the service, infrastructure or path (module) the question names; nobody
    recorded is said with what was checked: where the subject is defined and the path rules
    in effect."""
    result = StrategyResult("owns_traversal")
    if owned_paths.asks_overview(ctx.query):  # "who are the code owners (of this repo)?":
        return await _owners_overview(ctx, result)  # no subject, whatever "code" links to
    named = [s for s in ctx.seeds if s["label"] in ("Service", "Infrastructure", "Module")]
    service = next((s for s in named if s["label"] in ("Service", "Module")), None)
    module = await _path_subject(ctx, service or (named[0] if named else None))
    subject = ({k: module[k] for k in ("ceid", "name", "label", "path")} if module is not None
               else service or (named[0] if named else None))
    if subject is None:
        result.note = "no service or path named in the question"
        return result
    # "who owns ad, and who owns checkout?": each service listed, in the question's order
    listed = listed_together(ctx.query, named) if module is None else []
    subjects = listed[:MAX_SUBJECTS] if len(listed) > 1 else [subject]
    for one in subjects:
        await _owners_of(ctx, result, one, module)
    return result


MAX_SUBJECTS = 5  # services one ownership question may list


async def _owners_of(ctx: SearchContext, result: StrategyResult, subject: dict[str, Any],
                     module: dict[str, Any] | None) -> None:
    """The owners of one subject, as a fact of ``result``, their edges as its hops."""
    rows = await ctx.reader.rows("retrieval/ownership", ctx.scope, ceid=subject["ceid"])
    # the path rules in effect (all the tenant's rule lines): read only when no owner is found
    rules = [] if rows else await ctx.reader.rows("retrieval/ownership_rules", ctx.scope,
                                                  limit=500)
    if not rows and module is not None and not module.get("live"):  # the path's rule came
        # later (or went): the rules in effect at the question's time decide
        rows = owned_paths.covering_rows(rules, str(module["path"]), module.get("kind") == "file")
    merged = direct.merge_owners(rows)
    if not rows:  # nobody recorded: cite where the subject is defined and the rules checked
        merged["defined_at"] = await defined_at(ctx, subject["ceid"])
        merged["rules_checked"] = owned_paths.rules_checked(rules)
    for rank, owner in enumerate(merged["owners"]):
        result.hits.append(_hit(owner, 1.0 / (1 + rank)))
    result.hops += [{**r["hop"], "hop": 1} for r in rows]
    result.facts.append({"subject": subject, **merged})


OVERVIEW_OWNERS = 12  # owners an overview lists (the largest first)
OVERVIEW_EXAMPLES = 3  # what each of them owns, named


async def _owners_overview(ctx: SearchContext, result: StrategyResult) -> StrategyResult:
    rows = await ctx.reader.plain_rows("retrieval/owners_overview", ctx.scope,
                                       examples=OVERVIEW_EXAMPLES, limit=OVERVIEW_OWNERS + 1)
    result.truncated = len(rows) > OVERVIEW_OWNERS
    rows = rows[:OVERVIEW_OWNERS]
    for rank, row in enumerate(rows):
        result.hits.append(_hit(row["owner"], 1.0 / (1 + rank)))
        result.hops += [{**e["hop"], "hop": 1} for e in row["examples"]]
    result.facts.append({"overview": rows, "truncated": result.truncated})
    return result


async def memory(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("memory")
    services = [s for s in ctx.seeds if s["label"] == "Service"]
    if not services:
        result.note = "no service named in the question"
        return result
    limit = ctx.options.top_k * 3
    rows = await ctx.reader.rows("retrieval/memory", ctx.scope, ceid=services[0]["ceid"],
                                 limit=limit + 1)
    result.truncated = len(rows) > limit
    for rank, row in enumerate(rows[:limit]):
        text = str(row["props"].get("summary") or row["props"].get("text") or row["item"]["name"])
        result.hits.append(_hit(row["item"], 1.0 / (1 + rank), text[:600]))
        result.hops.append({**row["hop"], "hop": 1})
        result.facts.append({"subject": services[0], **row})
    return result
