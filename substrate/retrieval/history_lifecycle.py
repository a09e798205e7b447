""""When" answers about an entity's life rather than one of its edges, read from the
validity intervals a replayed history left on the graph:

* ``owner_change``: "when did the owner of checkout change?", "when did payments take over
  checkout?", "when did checkout move to the payments team?" — the snapshots at which the set
  of OWNS/PRIMARY_OWNER claims into the entity changed (a claim whose line only moved, closed
  and reopened at one snapshot, is no change), each gained and lost owner cited by its edge;
* ``removal``: "when was legacy-coupons removed / retired / decommissioned?" — the snapshot
  that closed the entity's last validity interval, cited where it was defined before. The
  entity may be gone from the graph now, so names the gazetteer (live names only) cannot see
  are looked up among every entity the tenant ever held (``past_named``).
"""

from __future__ import annotations

import re
from typing import Any

from substrate.graph.records import slug
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.time_scope import snapshots_by_version

MAX_CLAIMS = 200
OWNED_LABELS = ("Service", "Infrastructure", "Module", "Repository")
OWNER_CUE = re.compile(r"\b(?:own(?:s|ed|er|ers|ership|ing)?|took\s+over|take[ns]?\s+over"
                       r"|handed\s+(?:over|off)|hand(?:s|ed)?\s+(?:over|off)\s+to"
                       r"|transferr?(?:ed|s)?|reassign(?:ed)?|maintainers?)\b", re.I)
MOVE_TO_TEAM = re.compile(r"\b(?:mov(?:e|ed|es)|went|go(?:es)?)\s+(?:over\s+)?to\s+", re.I)
REMOVAL_CUE = re.compile(r"\b(?:remov(?:e|ed|al)|delet(?:e|ed|ion)|retir(?:e|ed|ement)"
                         r"|decommission(?:ed|ing)?|sunset(?:ted)?|shut\s+down|turned\s+off"
                         r"|(?:went|go|gone)\s+away|disappear(?:ed|s)?"
                         r"|stop(?:ped)?\s+(?:existing|running|being\s+deployed))\b", re.I)
LOSS_CUE = re.compile(r"\b(?:stop(?:ped|s)?|no\s+longer|lost|lose|loses|ceased?|gave\s+up"
                      r"|give\s+up|hand(?:ed|s)?\s+(?:over|off))\b", re.I)
_WORD = re.compile(r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]")
_KINDS = ("service", "infra", "team")
_ENDLESS = 2**53 - 1  # an open validity interval's end (a JavaScript-safe integer)


def owner_cue(query: str, seeds: list[dict[str, Any]]) -> bool:
    """An ownership "when" question: owner words, or a move to a team the question names."""
    if OWNER_CUE.search(query):
        return True
    return bool(MOVE_TO_TEAM.search(query)) and any(s["label"] == "Team" for s in seeds)


def owned_subject(seeds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The service, datastore or module whose owners are asked about: not one whose name is
    only the beginning of a team's the question names ("payments" names the team, not
    payment)."""
    teams = [str(s.get("name") or "").lower() for s in seeds if s["label"] == "Team"]
    ends = [s for s in seeds if s["label"] in OWNED_LABELS]
    kept = [s for s in ends if not any(t.startswith(str(s.get("name") or "").lower())
                                       for t in teams)]
    chosen = kept or ends
    return chosen[0] if chosen else None


def _valid(row: dict[str, Any], version: int, current: int) -> bool:
    start, end = int(row["hop"]["valid_from_v"]), row.get("valid_to_v")
    if end is None or int(end) > current:  # open, or closed after the version read
        return start <= version
    return start <= version < int(end)


def _claims(rows: list[dict[str, Any]], version: int, current: int) -> dict[tuple[str, str],
                                                                             dict[str, Any]]:
    """(owner, edge type) -> the row of that claim valid at ``version``."""
    return {(r["owner"]["ceid"], r["hop"]["type"]): r for r in rows
            if _valid(r, version, current)}


def _source_events(rows: list[dict[str, Any]], current: int) -> list[dict[str, Any]]:
    versions = {int(r["hop"]["valid_from_v"]) for r in rows}
    versions |= {int(r["valid_to_v"]) for r in rows
                 if r.get("valid_to_v") is not None and int(r["valid_to_v"]) <= current}
    ordered, events = sorted(versions), []
    before = _claims(rows, ordered[0], current)
    for version in ordered[1:]:
        now = _claims(rows, version, current)
        gained = [now[k] for k in now if k not in before]
        lost = [before[k] for k in before if k not in now]
        if gained or lost:
            events.append({"version": version, "gained": gained, "lost": lost})
        before = now
    return events


def owner_events(rows: list[dict[str, Any]], current: int) -> tuple[int | None,
                                                                    list[dict[str, Any]]]:
    """The first version any claim held, and each later version at which the set of
    (owner, type) claims of one source changed: ``{"version", "gained": [row],
    "lost": [row]}``, oldest first. A claim closed and reopened at one version (its line
    moved) is no change, and neither is a source's first statement (an org catalog loaded
    after the repository's history states its owners once, it does not change them)."""
    rows = [r for r in rows if int(r["hop"]["valid_from_v"]) <= current]
    if not rows:
        return None, []
    by_source: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_source.setdefault(str(row["hop"].get("source") or ""), []).append(row)
    merged: dict[int, dict[str, Any]] = {}
    for claims in by_source.values():
        for event in _source_events(claims, current):
            into = merged.setdefault(event["version"], {"version": event["version"],
                                                        "gained": [], "lost": []})
            into["gained"] += event["gained"]
            into["lost"] += event["lost"]
    first = min(int(r["hop"]["valid_from_v"]) for r in rows)
    return first, [merged[v] for v in sorted(merged)]


def pick_event(events: list[dict[str, Any]], named: set[str], initial: set[str],
               lost: bool = False) -> dict[str, Any] | None:
    """The latest change that gave a named owner its claim (``lost``: that took it away);
    None when a named owner has held one from the start; else the latest change (None:
    there was none)."""
    side = "lost" if lost else "gained"
    for event in reversed(events):
        if any(r["owner"]["ceid"] in named for r in event[side]):
            found: dict[str, Any] = event
            return found
    if named & initial and not lost:
        return None
    return events[-1] if events else None


def named_owners(query: str, seeds: list[dict[str, Any]]) -> set[str]:
    """Teams and people the question names: linked ones and ``@org/team`` / ``@user``."""
    named = {s["ceid"] for s in seeds if s["label"] in ("Team", "Developer")}
    named |= {f"team:{h.split('/')[-1]}" if "/" in h else f"dev:{h}"
              for h in re.findall(r"(?<![\w@])@([\w.-]+(?:/[\w.-]+)?)", query)}
    return named


async def owner_change(ctx: SearchContext, subject: dict[str, Any]) -> StrategyResult:
    result = StrategyResult("owner_history")
    rows = await ctx.reader.rows("retrieval/owner_history", ctx.scope, ceids=[subject["ceid"]],
                                 limit=MAX_CLAIMS)
    first, events = owner_events(rows, ctx.scope.version)
    words = {w.lower() for w in _WORD.findall(ctx.query)}
    named = named_owners(ctx.query, ctx.seeds) | {  # "mchen", a person no seed links
        r["owner"]["ceid"] for r in rows
        if str(r["owner"].get("name") or "").lower() in words
        or r["owner"]["ceid"].split(":", 1)[-1] in words}
    initial = {r["owner"]["ceid"] for r in rows if int(r["hop"]["valid_from_v"]) == first}
    event = pick_event(events, named, initial, lost=bool(LOSS_CUE.search(ctx.query)))
    born = min((int(i) for r in rows for i in r.get("subject_from") or []), default=first)
    unowned = born is not None and first is not None and born < first
    versions = [v for v in [first, born, *(e["version"] for e in events)] if v is not None]
    snaps = await snapshots_by_version(ctx.settings, ctx.scope.tenant, versions)
    for row in ((event["gained"] + event["lost"]) if event else
                list(_claims(rows, ctx.scope.version, ctx.scope.version).values())):
        result.hops.append({**row["hop"], "hop": 1})
    result.facts.append({
        "subject": subject, "first": snaps.get(first) if first is not None else None,
        "event": None if event is None else {**event, "snapshot": snaps.get(event["version"])},
        "others": [snaps.get(e["version"]) for e in events if e is not event],
        "named": sorted(named & initial) if event is None else [],
        "unowned_since": snaps.get(born) if unowned and born is not None else None,
        "current": list(_claims(rows, ctx.scope.version, ctx.scope.version).values())})
    return result


_QUESTION_WORDS = frozenset((
    "when", "was", "were", "did", "does", "the", "and", "who", "what", "which", "service",
    "services", "team", "removed", "deleted", "retired", "decommissioned", "gone", "away",
    "stop", "stopped", "date", "commit", "our", "from", "with"))


def candidate_ceids(query: str, kinds: tuple[str, ...] = _KINDS) -> list[str]:
    """The ids the question's words would have as a service, datastore or team (``kinds``)."""
    words = [slug(w) for w in _WORD.findall(query)
             if len(w) > 2 and w.lower() not in _QUESTION_WORDS]
    return [f"{kind}:{w}" for w in dict.fromkeys(words) if w for kind in kinds]


async def past_named(ctx: SearchContext) -> list[dict[str, Any]]:
    """Entity lifetimes for the seeds the question names, else for the ones its words name
    among everything the tenant ever held (an entity removed since is no seed)."""
    named = [s["ceid"] for s in ctx.seeds if s["label"] in ("Service", "Infrastructure",
                                                              "Team")]
    rows = await ctx.reader.rows("retrieval/entity_lifetime", ctx.scope,
                                 ceids=named or candidate_ceids(ctx.query))
    order = {c: i for i, c in enumerate(named or candidate_ceids(ctx.query))}
    return sorted(rows, key=lambda r: order.get(r["entity"]["ceid"], len(order)))


async def named_owner_entities(ctx: SearchContext) -> list[dict[str, Any]]:
    """Teams and people the question's words name, linked or not (the gazetteer holds no
    people): "when did abroddrick become an owner?"."""
    ceids = [s["ceid"] for s in ctx.seeds if s["label"] in ("Team", "Developer")]
    ceids += candidate_ceids(ctx.query, ("team", "dev"))
    rows = await ctx.reader.rows("retrieval/entity_lifetime", ctx.scope,
                                 ceids=list(dict.fromkeys(ceids)))
    return [r["entity"] for r in rows if r["iv_from"]]


def lifetime(iv_from: list[int], iv_to: list[int], current: int) -> tuple[int | None,
                                                                           int | None]:
    """The version the entity first appeared at and the one that removed it (None: it is
    there at ``current``), among intervals begun by ``current``."""
    spans = [(int(a), int(b) if b is not None else _ENDLESS)
             for a, b in zip(iv_from, iv_to, strict=False) if int(a) <= current]
    if not spans:
        return None, None
    first = min(a for a, _ in spans)
    last_end = max(b for _, b in spans)
    return first, (last_end if last_end <= current else None)


async def removal(ctx: SearchContext) -> StrategyResult | None:
    """When the entity the question names was removed (or that it was not); None when the
    question names nothing the tenant ever held."""
    rows = [r for r in await past_named(ctx) if r["iv_from"]]
    if not rows:
        return None
    lives = [(r, *lifetime(r["iv_from"], r["iv_to"], ctx.scope.version)) for r in rows]
    lives = [life for life in lives if life[1] is not None]
    if not lives:
        return None
    row, first, removed = next((life for life in lives if life[2] is not None), lives[0])
    snaps = await snapshots_by_version(ctx.settings, ctx.scope.tenant,
                                       [v for v in (first, removed) if v is not None])
    refs = [str(r) for r in row["provenance"] if "#L" in str(r)]
    hop = {"type": "REMOVED" if removed is not None else "DEFINED",
           "from": row["entity"]["ceid"], "to": row["entity"]["ceid"],
           "evidence_ref": refs[0] if refs else None, "source": "git", "confidence": 1.0}
    result = StrategyResult("removal")
    if refs:
        result.hops.append({**hop, "hop": 1})
    result.facts.append({"subject": row["entity"],
                         "first": snaps.get(first) if first is not None else None,
                         "removed": snaps.get(removed) if removed is not None else None,
                         "hop": hop})
    return result


# "which services were removed?", "what datastores have been decommissioned?": no one name, no
# window: every one removed over the replayed history
_REMOVED_WHICH = re.compile(
    r"\b(?:which|what|any|list(?:\s+the)?)\s+(?:\w+\s+)?(?P<what>services?|datastores?|databases?"
    r"|components?|infrastructure)\s+(?:were|was|have\s+been|has\s+been|got)\s+"
    r"(?:ever\s+)?(?:removed|deleted|dropped|retired|decommissioned|shut\s+down)\b", re.I)
REMOVED_LIST = 50


def removed_labels(question: str) -> list[str] | None:
    """The labels a "which services were removed?" question lists; None for another one."""
    m = _REMOVED_WHICH.search(question)
    if m is None:
        return None
    what = m.group("what").lower()
    if what.startswith("service"):
        return ["Service"]
    if what.startswith("component"):
        return ["Service", "Infrastructure"]
    return ["Infrastructure"]


async def removed_ever(ctx: SearchContext, labels: list[str], result: StrategyResult
                       ) -> StrategyResult:
    """Every entity of ``labels`` removed over the history, the latest removal first, each
    with when it was defined and removed and the line that defined it."""
    rows = await ctx.reader.rows("retrieval/removed_entities", ctx.scope, labels=labels,
                                 limit=REMOVED_LIST * 4)
    lives = [(r, *lifetime(r["iv_from"], r["iv_to"], ctx.scope.version)) for r in rows
             if r["iv_from"]]
    lives = [life for life in lives if life[1] is not None and life[2] is not None]
    lives.sort(key=lambda life: (-int(life[2] or 0), life[0]["entity"]["ceid"]))
    result.truncated = len(lives) > REMOVED_LIST
    lives = lives[:REMOVED_LIST]
    snaps = await snapshots_by_version(ctx.settings, ctx.scope.tenant, sorted(
        {int(v) for _, a, b in lives for v in (a, b) if v is not None}))
    gone = []
    for rank, (row, first, removed) in enumerate(lives):
        refs = [str(r) for r in row["provenance"] if "#L" in str(r)]
        hop = {"type": "REMOVED", "from": row["entity"]["ceid"], "to": row["entity"]["ceid"],
               "evidence_ref": refs[0] if refs else None, "source": "git", "confidence": 1.0}
        if refs:
            result.hops.append({**hop, "hop": 1})
        result.hits.append(Hit(row["entity"]["ceid"], str(row["entity"].get("name") or ""),
                               str(row["entity"].get("label") or ""), "removed",
                               1.0 / (1 + rank)))
        gone.append({"subject": row["entity"], "first": snaps.get(int(first or 0)),
                     "removed": snaps.get(int(removed or 0)), "hop": hop})
    result.facts.append({"removed_ever": gone, "labels": labels,
                         "truncated": result.truncated})
    return result
