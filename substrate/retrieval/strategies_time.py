"""Search strategies for time, intent and epic impact, registered into the presets:

* ``temporal`` (RSN-UC-06, Intent.TEMPORAL): "what changed in the three days before <incident>?"
  — finds the incident, diffs the window before its time and ranks the changes by their graph
  distance to the services the incident affected or was caused by (see ``incident_diff``).
* ``intent`` (RSN-UC-03, Intent.INTENT_MISMATCH): the intent check of each PR the question
  names.
* ``epic_impact`` (RSN-UC-08, Intent.EPIC_IMPACT): the services an epic affects.

Each returns ``facts`` and a ``note`` that the composed answer uses as its text.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from substrate.errors import NotFound
from substrate.retrieval.composers import listing
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.history_lifecycle import removed_labels
from substrate.retrieval.impact import (
    RANKED_EPICS,
    epic_ranking,
    impact_hops,
    ranking_hops,
    ranking_sentence,
    resolve_item,
)
from substrate.retrieval.impact import epic_impact as impact_of
from substrate.retrieval.incidents import incident_diff, incident_note
from substrate.retrieval.intent import check_intent, intent_hops
from substrate.retrieval.registry import register
from substrate.retrieval.router import Intent

_KEY = re.compile(r"\b([A-Z][A-Z0-9]{1,9}-\d{1,6})\b")
# a ranking of the epics, not one epic: "which epic affects the most services?"
_RANKING = re.compile(r"\b(?:most|least|fewest|rank(?:ed|ing)?|top|largest|biggest|widest"
                      r"|smallest)\b", re.I)
_FEWEST = re.compile(r"\b(?:least|fewest|smallest)\b", re.I)
# ... and the epics are what is asked for ("which epic ...", "top 3 epics", "epics by ...")
_EPICS_ASKED = re.compile(r"\b(?:which|what)\s+(?:\w+\s+){0,2}epics?\b"
                          r"|\b(?:top|rank\w*)\s+(?:\d+\s+)?(?:the\s+|our\s+)?epics?\b"
                          r"|\bepics?\s+(?:by|ranked)\b", re.I)
_AFFECTED = re.compile(r"\b(?:services?|systems?|components?|affect\w*|impact\w*|touch\w*)\b",
                       re.I)
_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3}


_INCIDENT_WORDS = re.compile(r"\b(?:incidents?|outages?|post-?mortems?|failures?|downtime"
                             r"|went\s+down|broke|breakage|sev\s*-?\d)\b", re.I)


def about_an_incident(ctx: SearchContext) -> bool:
    """Does the question ask about an incident: it names one, says "incident", "outage", ...,
    or names no window (then the most recent incident is the likeliest anchor)? "Which
    services were added in October 2026?" does not: the window's changes answer it; nor does
    "which services were removed?": every removal of the history answers it."""
    no_window = ctx.route.time.start is None and ctx.route.time.end is None
    return (no_window and removed_labels(ctx.query) is None  # "which services were removed?"
            or bool(_INCIDENT_WORDS.search(ctx.query))  # is about the whole history
            or any(s.get("label") == "FailurePattern" for s in ctx.seeds))


async def temporal(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("temporal")
    if not about_an_incident(ctx):
        result.note = "the question names a window and no incident: the window's changes answer"
        return result
    found = await incident_diff(ctx)
    if found is None:
        result.note = "no incident in the graph matches the question"
        return result
    ranked, truncated = found.ranked, False
    limit = ctx.options.top_k * 5
    if len(ranked) > limit:
        ranked, truncated = ranked[:limit], True
    result.truncated = truncated
    result.hops = [{**link["hop"], "hop": 1} for link in found.incident["links"]]
    for rank, fact in enumerate(ranked):
        change = fact["change"]
        result.facts.append(fact)
        if change["kind"] == "edge" and change["hop"]:
            result.hops.append({**change["hop"], "hop": 1})
        result.hits.append(Hit(change["id"], str(change.get("name") or change["id"]),
                               str(change.get("label") or change.get("type") or ""),
                               fact["summary"], 1.0 / (1 + rank)))
    if not ranked:  # nothing changed: the incident and the empty window are the answer
        result.facts.append({"incident": found.incident["incident"], "changes": 0,
                             "window": {"from": found.window.start.isoformat(),
                                        "to": found.window.end.isoformat()}})
    result.note = incident_note(found)
    return result


async def intent(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("intent")
    numbers = list(ctx.route.pr_numbers) or [
        int(s["ceid"].split(":", 1)[1]) for s in ctx.seeds
        if s["label"] == "PullRequest" and s["ceid"].split(":", 1)[1].isdigit()]
    if not numbers:
        result.note = "no pull request named in the question"
        return result

    async def embed(texts: list[str]) -> list[list[float]]:
        return list(await asyncio.gather(*(ctx.embed_query(t) for t in texts)))

    lines = []
    for number in numbers[:3]:
        try:
            out = await check_intent(ctx.settings, ctx.reader, ctx.scope, number, embed)
        except NotFound:
            result.facts.append({"pr": {"ceid": f"pr:{number}"}, "status": "unknown_pr"})
            lines.append(f"PR #{number} is not in the graph.")
            continue
        result.facts.append(out)
        result.hops += intent_hops(out)
        result.hits.append(Hit(out["pr"]["ceid"], str(out["pr"]["name"]), "PullRequest",
                               str(out["pr"].get("summary") or ""), 1.0))
        lines.append(intent_sentence(out))
    result.note = " ".join(lines)
    return result


def intent_sentence(out: dict[str, Any]) -> str:
    pr = f"{out['pr']['name']} ({out['pr'].get('title') or out['pr']['ceid']})"
    if out["status"] == "no_linked_item":
        return f"{pr} links no project item, so there is nothing to compare it with."
    if out["status"] == "no_change_summary":
        return f"{pr} has no change summary to compare."
    item = out["linked_item"]
    verdict = (f"flagged: similarity {out['score']} is below {out['threshold']}. "
               + out["advisory"] if out["flagged"]
               else f"not flagged: similarity {out['score']} >= {out['threshold']}.")
    return (f"{pr} is linked to {item.get('key') or item['ceid']} \"{item['name']}\" "
            f"[{out['items'][0]['hop']['evidence_ref']}] — {verdict}")


async def _find_item(ctx: SearchContext) -> dict[str, Any] | None:
    for key in _KEY.findall(ctx.query):
        try:
            return await resolve_item(ctx.reader, ctx.scope, key)
        except NotFound:
            continue
    seeded = [s for s in ctx.seeds if s["label"] == "ProjectItem"]
    if seeded:
        return seeded[0]
    rows = await ctx.reader.rows("retrieval/project_items", ctx.scope, limit=1000)
    words = tokens(ctx.query)
    scored = [(len(words & tokens(f"{r['item']['name']} {r['key'] or ''}")),
               r["kind"] == "epic", r["item"]) for r in rows]
    scored = [s for s in scored if s[0] > 0]
    if not scored:
        return None
    best = max(scored, key=lambda s: (s[0], s[1], s[2]["ceid"]))
    return dict(best[2])


def asks_epic_ranking(question: str) -> bool:
    """"Which epic affects the most services?", "top 3 epics by services affected": no one
    epic but all of them, ranked by what they affect (not "which epic has the most issues?",
    nor a question naming its epic: "which services does SHOP-10 affect most?")."""
    return all(p.search(question) is not None for p in (_RANKING, _EPICS_ASKED, _AFFECTED)) \
        and _KEY.search(question) is None


async def epic_impact(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("epic_impact")
    if asks_epic_ranking(ctx.query):
        return await _epics_ranked(ctx, result)
    item = await _find_item(ctx)
    if item is None:
        result.note = "no project item named in the question"
        return result
    depth = min(ctx.route.depth or 1, 2)
    out = await impact_of(ctx.reader, ctx.scope, item["ceid"], depth,
                          limit=min(ctx.options.top_k * 5, 200))
    result.truncated = out["truncated"]
    result.hops = impact_hops(out)
    result.facts = [out]
    for rank, s in enumerate(out["services"]):
        result.hits.append(Hit(s["ceid"], str(s["name"]), str(s["label"]),
                               f"{s['role']} via {s['via']}", 1.0 / (1 + rank)))
    result.note = impact_sentence(out) if out["services"] else (
        f"{item['name']} ({item['ceid']}) links no intent assertion naming a service.")
    return result


async def _epics_ranked(ctx: SearchContext, result: StrategyResult) -> StrategyResult:
    fewest = _FEWEST.search(ctx.query) is not None
    ranked = await epic_ranking(ctx.reader, ctx.scope, fewest,
                                limit=min(ctx.route.top_n or RANKED_EPICS, 50))
    result.facts = [{"epics": ranked, "order": "fewest" if fewest else "most"}]
    result.hops = ranking_hops(ranked)
    for rank, r in enumerate(ranked):
        result.hits.append(Hit(r["item"]["ceid"], str(r["item"]["name"]), "ProjectItem",
                               f"affects {r['count']}", 1.0 / (1 + rank)))
    result.note = ranking_sentence(ranked, fewest)
    return result


def impact_sentence(out: dict[str, Any]) -> str:
    item = out["item"]
    asserted = [s for s in out["services"] if s["role"] == "asserted"]
    refs = sorted({s["hops"][-1]["evidence_ref"] for s in asserted})
    if not asserted:
        text = (f"{item['name']} ({item['ceid']}) names no service directly in an intent "
                "assertion.")
    else:
        text = (f"{item['name']} ({item['ceid']}) affects "
                + ", ".join(s["name"] for s in asserted)
                + f" (asserted by {listing(out['intents'], 'an intent assertion')}"
                + (f" [{', '.join(refs)}]" if refs else "") + ").")
    dependents = [s for s in out["services"] if s["role"] == "dependent"]
    if dependents:
        text += (f" Within {out['depth']} hop(s) these depend on them: "
                 + ", ".join(f"{s['name']} (-> {s['via'].split(':', 1)[-1]})"
                             for s in dependents) + ".")
    return text


def install() -> None:
    register("temporal", temporal, Intent.TEMPORAL)
    register("intent", intent, Intent.INTENT_MISMATCH)
    register("epic_impact", epic_impact, Intent.EPIC_IMPACT)


install()
