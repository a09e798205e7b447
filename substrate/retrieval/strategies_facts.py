"""Strategies whose facts state the answer with no model, registered into the presets:

* ``window_changes`` (Intent.TEMPORAL): what changed in the question's window ("in March 2024",
  "between X and Y", "since v1.2", "last week") — the snapshot diff of ``temporal.changes``,
  services and dependency/ownership edges first, each change with its commit and date;
* ``edge_history`` (Intent.WHEN): "when did X start/stop calling Y?" — every CALLS/DEPENDS_ON
  edge between the two (closed ones too), with the snapshot (commit, time) that opened and
  closed each validity interval;
* ``attributes`` (Intent.ATTRIBUTES): address, host, port, url, version of a service's
  dependencies, read from the edge properties the connectors set.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from substrate.graph.ontology import load_ontology
from substrate.retrieval import temporal
from substrate.retrieval.attributes import EACH, PER_SERVICE, node_values, wanted
from substrate.retrieval.attributes import rank as rank_attributes
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.history_lifecycle import removed_ever, removed_labels
from substrate.retrieval.registry import STRATEGIES, register
from substrate.retrieval.router import Intent
from substrate.retrieval.time_scope import question_window, snapshots_by_version

MAX_CHANGES = 60
MAX_INTERVALS = 50
STRUCTURAL = ("CALLS", "DEPENDS_ON", "OWNS", "PRIMARY_OWNER", "HOSTS", "SUPERSEDES")
ATTRIBUTE_WORDS = frozenset({"image", "port", "address", "host", "url", "endpoint", "version",
                             "language", "database", "db"})
ATTRIBUTE_KEYS = ("address", "host", "hostname", "port", "url", "uri", "endpoint", "database",
                  "version", "image", "var", "via")


def _rank(entry: dict[str, Any]) -> tuple[int, str]:
    """Services and dependencies appearing or going first, property changes after them, the
    chunks of documents (a README edited: its passages cut again) last."""
    moved = entry["change"] in ("added", "removed")
    if "chunk:" in str(entry["id"]) or entry.get("label") == "Chunk" \
            or entry.get("type") == "HAS_CHUNK":
        return (5, entry["id"])
    if entry["kind"] == "node":
        main = entry["label"] in ("Service", "Infrastructure", "DecisionNode", "Team")
        return (0 if moved and main else 2 if moved else 4, entry["id"])
    return (1 if moved and entry["type"] in STRUCTURAL else 3, entry["id"])


_FOCUS = (
    (re.compile(r"\b(?:decisions?|adrs?|architecture\s+decision)", re.I), {"DecisionNode"}),
    (re.compile(r"\b(?:code\s?owners?|ownership|owners?)\b", re.I),
     {"OWNS", "PRIMARY_OWNER", "Team", "Developer"}),
    (re.compile(r"\b(?:services?|datastores?|databases?|dependenc(?:y|ies))\b", re.I),
     {"Service", "Infrastructure", "CALLS", "DEPENDS_ON"}),
)


def _focus(question: str) -> set[str] | None:
    """The labels/edge types a "what changed" question is about, None for everything."""
    if _WHICH_SERVICES.search(question) and _change_asked(question):
        return {"Service"}  # "which services were added in October?": the services themselves
    for rx, labels in _FOCUS:
        if rx.search(question):
            return labels
    return None


_WHICH_SERVICES = re.compile(r"\b(?:which|what|any|list)\s+(?:new\s+)?services?\b", re.I)
_ASKED_CHANGE = (("added", re.compile(r"\b(?:added|introduced|created|new|appeared)\b", re.I)),
                 ("removed", re.compile(r"\b(?:removed|deleted|dropped|retired|decommissioned)"
                                        r"\b", re.I)))


def _change_asked(question: str) -> str | None:
    """"added" or "removed" when the question asks for only one kind of change."""
    kinds = [kind for kind, rx in _ASKED_CHANGE if rx.search(question)]
    return kinds[0] if len(kinds) == 1 else None


async def window_changes(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("window_changes")
    window = await question_window(ctx)
    if window is None:
        labels = removed_labels(ctx.query)  # "which services were removed?": ever
        if labels is not None:
            return await removed_ever(ctx, labels, result)
        result.note = "the question names no time window"
        return result
    start, end, phrase = window
    _, snaps, entries = await temporal.changes(ctx.settings, ctx.reader, ctx.scope, start, end,
                                               load_ontology(), strict=False, pool=ctx.pool)
    entries = sorted((e for e in entries if e["change"] != "transient" and not _internal(e)),
                     key=_rank)
    focus = _focus(ctx.query)
    if focus is not None:  # "which decisions were added", "what changed in code ownership"
        kept = [e for e in entries if (e.get("label") or e.get("type")) in focus]
        entries = kept or entries
    asked, others = _change_asked(ctx.query), 0
    if asked is not None and focus is not None:  # "which services were added": only those
        kept = [e for e in entries if e["change"] == asked]
        others, entries = len(entries) - len(kept), kept
    about = [s for s in ctx.seeds if s["label"] in ABOUT_LABELS
             and s.get("why") == "name in the question"]
    if about:  # "what changed in the frontend in 2023?": its own changes and its edges'
        ids = {s["ceid"] for s in about}
        kept = [e for e in entries if _touches(e, ids)]
        others, entries = others + len(entries) - len(kept), kept
    result.truncated = len(entries) > MAX_CHANGES
    shown = entries[:MAX_CHANGES]
    for rank, e in enumerate(shown):
        if e["kind"] == "edge" and e["hop"]:
            result.hops.append({**e["hop"], "hop": 1})
        result.hits.append(Hit(e["id"], str(e.get("name") or e["id"]),
                               str(e.get("label") or e.get("type") or ""), e["change"],
                               1.0 / (1 + rank)))
    result.facts.append({"window": {"from": start.isoformat(), "to": end.isoformat(),
                                    "phrase": phrase},
                         "snapshots": len(snaps), "changes": shown, "total": len(entries),
                         "asked": asked if focus is not None else None, "others": others,
                         "about": [str(s.get("name") or s["ceid"]) for s in about]})
    return result


ABOUT_LABELS = ("Service", "Infrastructure", "Team", "Module")
# how a page is stored (its chunks, their order and similarity, community membership): no
# change a reader asked about ("62 changes" in June 2019 were 47 chunk edges of 6 new ADRs)
INTERNAL_TYPES = frozenset({"HAS_CHUNK", "SEQUENCE", "SIMILAR_TO", "IN_COMMUNITY"})


def _internal(entry: dict[str, Any]) -> bool:
    return entry.get("type") in INTERNAL_TYPES or entry.get("label") in ("Chunk", "Community")


def _touches(entry: dict[str, Any], ids: set[str]) -> bool:
    """Is the change about one of ``ids``: the entity itself, or an edge from or to it?"""
    if entry["kind"] == "node":
        return str(entry["id"]) in ids
    hop = entry.get("hop") or {}
    if hop:
        return hop.get("from") in ids or hop.get("to") in ids
    key = str(entry["id"])
    src = key.split("-[", 1)[0]
    dst = key.split("]->", 1)[1].rsplit("@", 1)[0] if "]->" in key else ""
    return src in ids or dst in ids


def _names(seed: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys([str(seed.get("name") or ""), seed["ceid"].split(":", 1)[-1]]))


async def edge_history(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("edge_history")
    ends = [s for s in ctx.seeds if s["label"] in ("Service", "Infrastructure")]
    names: list[dict[str, Any]] = []
    for s in ends:
        if all(s.get("name") != n.get("name") for n in names):
            names.append(s)
    if not names:
        result.note = "the question names no service"
        return result
    subject = names[0]
    if len(names) > 1:
        obj, objects = names[1], _names(names[1])
    else:  # the other end may be gone from the graph now ("start depending on MinIO")
        words = [w for w in re.findall(r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]", ctx.query)
                 if w.lower() not in {n.lower() for n in _names(subject)}]
        obj, objects = None, list(dict.fromkeys([*words, *(w.lower() for w in words)]))
    rows = await ctx.reader.rows("retrieval/edge_history", ctx.scope, subjects=_names(subject),
                                 objects=objects, limit=MAX_INTERVALS)
    if obj is None:
        if not rows:
            result.note = "the question names one service and no other end it ever had"
            return result
        other = rows[0]["hop"]["to"]
        obj = {"ceid": other, "name": other.split(":", 1)[-1], "label": "Entity"}
        rows = [r for r in rows if r["hop"]["to"] == other]
    versions = {int(r["hop"]["valid_from_v"]) for r in rows}
    versions |= {int(r["valid_to_v"]) for r in rows if r["valid_to_v"] is not None}
    snaps = await snapshots_by_version(ctx.settings, ctx.scope.tenant, sorted(versions))
    intervals = []
    for r in rows:
        closed = r["valid_to_v"] is not None and int(r["valid_to_v"]) <= ctx.scope.version
        intervals.append({"hop": r["hop"], "opened": snaps.get(int(r["hop"]["valid_from_v"])),
                          "closed": snaps.get(int(r["valid_to_v"])) if closed else None})
        result.hops.append({**r["hop"], "hop": 1})
    result.facts.append({"subject": subject, "object": obj, "intervals": intervals})
    return result


FIRST_SEEN_LABELS = ("Service", "Infrastructure", "Team", "Developer", "DecisionNode")


def named_seed(seed: dict[str, Any]) -> bool:
    """A seed the question names: any but an ADR, which is linked by a fuzzy name unless the
    question gives its number ("ADR 46": the mention is its id, ``adr:0046``)."""
    return seed["label"] in FIRST_SEEN_LABELS and (
        seed["label"] != "DecisionNode" or str(seed.get("mention") or "") == seed["ceid"])


async def first_seen(ctx: SearchContext, fused: list[Hit]) -> StrategyResult | None:
    """"When did X first appear / when was the ADR on Y added / when did T become the owner":
    the snapshot that opened the entity's first validity interval (and, for an owner, its
    first ownership edge). The entity is the first one the question names, else the best
    ranked ADR. None when neither is there."""
    named = [s["ceid"] for s in ctx.seeds if named_seed(s)]  # else an ADR by relevance
    # "@user" / "@org/team" as an ownership file writes them (see connectors/codeowners.py)
    named += [f"team:{h.split('/')[-1]}" if "/" in h else f"dev:{h}"
              for h in re.findall(r"(?<![\w@])@([\w.-]+(?:/[\w.-]+)?)", ctx.query)]
    ranked = [h.id for h in fused if h.label == "DecisionNode"]
    order = list(dict.fromkeys([*named, *ranked]))[:3]
    # a name that was a service in one period and infrastructure in another is one thing
    order += [f"{p}:{c.split(':', 1)[1]}" for c in order[:1]
              for p in ("service", "infra") if c.split(":", 1)[0] in ("service", "infra")]
    order = list(dict.fromkeys(order))
    if not order:
        return None
    rows = {r["entity"]["ceid"]: r for r in await ctx.reader.rows(
        "retrieval/entity_history", ctx.scope, ceids=order)}
    row = next((rows[c] for c in order if c in rows and rows[c]["iv_from"]), None)
    if row is None:
        return None
    same = [r for c, r in rows.items() if r["iv_from"] and r["entity"].get("name")
            == row["entity"].get("name") and c.split(":", 1)[0] in ("service", "infra")]
    edge = row["owner_edge"]
    owner = row["entity"]["label"] in ("Team", "Developer") and edge is not None
    version = int(edge["valid_from_v"]) if owner else min(
        int(v) for r in (same or [row]) for v in r["iv_from"])
    snaps = await snapshots_by_version(ctx.settings, ctx.scope.tenant, [version])
    result = StrategyResult("first_seen")
    refs = [str(r) for r in row["provenance"] if "#L" in str(r)]
    hop = edge if owner else {"type": "DEFINED", "from": row["entity"]["ceid"],
                              "to": row["entity"]["ceid"], "evidence_ref": refs[0] if refs
                              else None, "source": "git", "confidence": 1.0}
    result.hops.append({**hop, "hop": 1})
    result.facts.append({"subject": row["entity"], "snapshot": snaps.get(version),
                         "as_owner": owner, "hop": hop, "date": row.get("date")})
    return result


def attribute_values(props: dict[str, Any]) -> dict[str, Any]:
    """The edge properties that state an attribute, known keys first."""
    known = {k: props[k] for k in ATTRIBUTE_KEYS if props.get(k) not in (None, "", [])}
    other = {k: v for k, v in sorted(props.items())
             if k not in known and k not in ("evidence_refs", "inferred") and v not in (None, "")}
    return {**known, **other}


async def attributes(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("attributes")
    # a module too: a folder with a build file no service claims (an internal tool, a lambda)
    services = [s for s in ctx.seeds if s["label"] in ("Service", "Infrastructure", "Module")]
    # "what image does persistence use?" in TeaStore, which has a service called image: a
    # name that is also the attribute asked for is the subject only when nothing else is
    services.sort(key=lambda s: str(s.get("name") or "").lower() in ATTRIBUTE_WORDS)
    # "what port does redis listen on?" with redis and notify-api-redis-v70 both running
    # Redis: the datastore the question names by its own name, not the first running it
    services.sort(key=lambda s: s.get("why") == "technology"
                  and str(s.get("name") or "").lower() != str(s.get("mention") or ""))
    asked = [k for k in PER_SERVICE if k in wanted(ctx.query)]
    if not services and asked and EACH.search(ctx.query):  # "what language is each written in"
        return await each_service(ctx, asked[0], result)
    if not services:
        result.note = "no service named in the question"
        return result
    subject = services[0]
    rows = await ctx.reader.rows("retrieval/edge_attributes", ctx.scope, ceid=subject["ceid"],
                                 limit=100)
    props = await ctx.reader.rows("retrieval/entity_props", ctx.scope,
                                  ceids=[s["ceid"] for s in services[:2]])
    nodes = {r["entity"]["ceid"]: r["props"] for r in props}
    stated = rank_attributes(ctx.query, services[:2], rows, nodes)
    for rank, c in enumerate(stated):
        end = (c.get("edge") or {}).get("target") or c.get("node") or subject
        result.hits.append(Hit(end["ceid"], str(end["name"]), str(end["label"]), c["value"],
                               1.0 / (1 + rank)))
        if c.get("edge") is not None:
            result.hops.append({**c["edge"]["hop"], "hop": 1})
            continue
        for ref in dict.fromkeys(r for r in c.get("refs") or [] if "#L" in r):
            # the entity's own attribute (its image, port, description...): where it is stated
            result.hops.append({"type": "DEFINED", "from": end["ceid"], "to": end["ceid"],
                                "evidence_ref": ref, "source": "git", "confidence": 1.0,
                                "hop": 1})
    result.facts.append({"subject": subject, "stated": stated,
                         "attributes": [attribute_values(r["props"]) for r in rows[:20]]})
    return result


MAX_SERVICES = 200


async def each_service(ctx: SearchContext, attr: str, result: StrategyResult
                       ) -> StrategyResult:
    """One attribute of every service (its language, image, port), each at its line; the
    services stating none are named too."""
    rows = await ctx.reader.rows("retrieval/service_values", ctx.scope, limit=MAX_SERVICES)
    stated, silent = [], []
    for row in rows:
        values = [v for v in node_values(row["entity"], row["props"]) if v["attr"] == attr]
        if not values:
            silent.append(row["entity"])
            continue
        stated.append(values[0])
        for ref in (r for r in values[0].get("refs") or [] if "#L" in r):
            result.hops.append({"type": "ATTRIBUTE", "from": row["entity"]["ceid"],
                                "to": str(values[0]["value"]), "evidence_ref": ref,
                                "source": "git", "confidence": 1.0, "hop": 1})
            break
    for rank, value in enumerate(stated):
        node = value["node"]
        result.hits.append(Hit(node["ceid"], str(node.get("name") or ""), "Service",
                               str(value["value"]), 1.0 / (1 + rank)))
    result.facts.append({"each": attr, "stated": stated, "silent": silent,
                         "truncated": len(rows) >= MAX_SERVICES})
    return result


def iso_date(value: str | None) -> str:
    """``2020-04-06T23:14:28+00:00`` -> ``2020-04-06``."""
    if not value:
        return "an unknown date"
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return value[:10]


def install() -> None:
    register("window_changes", window_changes, Intent.TEMPORAL)
    register("edge_history", edge_history, Intent.WHEN)
    register("vector", STRATEGIES["vector"], Intent.WHEN)  # the ADR a "when" question names
    register("attributes", attributes, Intent.ATTRIBUTES)


install()
