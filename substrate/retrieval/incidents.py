"""RSN-UC-06: "what changed in the three days before <incident>?".

1. The incident: a FailurePattern linked from the question's entities (of the time the
   question names, if it names one and one is); otherwise the one whose name, id and
   affected / causing entities share the most words with the question (2 points per word of
   its name or id, 1 per word naming a linked entity, 3 per question entity it is linked to).
   When the question gives a date ("... before the 2026-09-17 outage", "last Friday's
   incident") only incidents of that time count, read by their day (however old); without
   one, the newest ``INCIDENT_ROWS``. No match at all: the most recent.
2. Its time: the ``date`` (or ``occurred_at``) property; a bare date means the end of that day.
3. The window: "N days/hours/weeks before" in the question, else 3 days — the diff of the
   tenant's snapshots in ``(time - window, time]`` (:mod:`substrate.retrieval.temporal_diff`).
   When the question names no span and no snapshot falls in those 3 days, the answer says
   so and gives the latest changes before the incident instead: the window then starts 3
   days before the last snapshot before it (a quiet week before an outage is common; the
   changes before the quiet are what the question is after).
4. The ranking: graph distance from the change (a node, or either end of an edge) to the
   nearest Service/Infrastructure the incident AFFECTED or was CAUSED_BY (0 = that entity),
   over the relationships that existed in the window; then changes from a snapshot whose note
   cites a PR the incident names as a cause; then the latest first. Chunk-level changes
   (document text pieces) are left out: their document's change stands for them.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from substrate.graph.ontology import load_ontology
from substrate.retrieval import temporal_diff as td
from substrate.retrieval.context import SearchContext
from substrate.retrieval.temporal import Window, changes
from substrate.retrieval.timephrases import TimeScope

DEFAULT_WINDOW = timedelta(days=3)
MAX_DISTANCE = 3
LARGE_WINDOW = 2_000  # changes recorded in a window beyond which only the near ones are read
NEAR_CAP = 1_000  # "near": within MAX_DISTANCE hops, or fewer when a level brings more nodes
TARGET_LABELS = ("Service", "Infrastructure")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "fourteen": 14, "thirty": 30}
_UNITS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1),
          "month": timedelta(days=30)}
_WINDOW = re.compile(r"\b(\d{1,3}|" + "|".join(_NUMBERS) + r")\s+(hour|day|week|month)s?\s+"
                     r"(?:before|prior\s+to|leading\s+up\s+to|ahead\s+of|preceding)\b", re.I)
_STOP = frozenset({
    "what", "which", "changed", "change", "changes", "before", "after", "prior", "the", "and",
    "for", "with", "that", "this", "days", "day", "hours", "hour", "weeks", "week", "month",
    "months", "incident", "incidents", "outage", "outages", "failure", "last", "since",
    "during", "into", "from", "was", "were", "did", "does", "happened", "leading", "ahead",
    "preceding", "there", *_NUMBERS})
_WORD = re.compile(r"[a-z0-9]+")


_ONE = re.compile(r"\b(?:the|a|an|one)\s+(hour|day|week|month|fortnight)\s+(?:before|prior\s+to"
                  r"|leading\s+up\s+to|ahead\s+of|preceding)\b", re.I)


def window_length(question: str) -> timedelta:
    one = _ONE.search(question)  # "in the week before the incident"
    if one is not None:
        unit = one.group(1).lower()
        return timedelta(weeks=2) if unit == "fortnight" else _UNITS[unit]
    m = _WINDOW.search(question)
    if not m:
        return DEFAULT_WINDOW
    n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1).lower()]
    return max(1, n) * _UNITS[m.group(2).lower()]


def incident_time(text: Any) -> tuple[datetime, bool] | None:
    """(instant, was a bare date) of an incident's date property, or None."""
    value = str(text or "").strip()
    if not value:
        return None
    try:
        if len(value) == 10:
            day = datetime.fromisoformat(value).date()
            return datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC), True
        instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (instant if instant.tzinfo else instant.replace(tzinfo=UTC)), False


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def _targets(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [link["target"] for link in row["links"]]


def _score(row: dict[str, Any], words: set[str], seeds: set[str]) -> int:
    own = _words(f"{row['incident']['name']} {row['incident']['ceid']}")
    linked = _words(" ".join(f"{t['name']} {t['ceid']}" for t in _targets(row)))
    return (2 * len(words & own) + len(words & linked)
            + 3 * len(seeds & {t["ceid"] for t in _targets(row)}))


def _span(scope: TimeScope) -> tuple[datetime | None, datetime | None]:
    """The time the question places the incident in (a day around an end-only bound)."""
    day = timedelta(days=1)
    if scope.start or scope.end:
        return scope.start or (scope.end - day if scope.end else None), scope.end
    if scope.as_of:
        return scope.as_of - day, scope.as_of
    return None, None


@dataclass
class IncidentDiff:
    incident: dict[str, Any]
    when: datetime
    date_only: bool
    why: str
    length: timedelta
    window: Window
    snapshots: list[dict[str, Any]]
    ranked: list[dict[str, Any]]
    # the default window when no snapshot fell in it: ``window`` then ends at the incident
    # and starts the same span before the latest snapshot before it
    quiet: Window | None = None
    # a large window (``LARGE_WINDOW``): the changes it records, of which only those within
    # ``depth`` hops of the incident's services were read
    recorded: int | None = None
    depth: int | None = None


INCIDENT_ROWS = 500  # the newest incidents a question that names no date chooses among


async def _incidents(ctx: SearchContext, **only: Any) -> list[dict[str, Any]]:
    """Dated incidents, newest first: ``ceids=[...]`` only those, ``days=(lo, hi)`` only
    those of a day in ``[lo, hi]`` (ISO dates; a bound may be None)."""
    flags: dict[str, Any] = {"ceids": "ceids" in only, "days": "days" in only}
    params: dict[str, Any] = {"limit": INCIDENT_ROWS, "ceids": only.get("ceids", [])}
    if "days" in only:  # a day either side: an instant's offset may move its ISO day
        lo, hi = only["days"]
        params["day_from"] = (lo - timedelta(days=1)).date().isoformat() if lo else ""
        params["day_to"] = (hi + timedelta(days=1)).date().isoformat() if hi else "9999"
    rows = await ctx.reader.rows("temporal/incidents", ctx.scope, flags, **params)
    return [r for r in rows if incident_time(r["date"])]


async def find_incident(ctx: SearchContext) -> tuple[dict[str, Any], str] | None:
    """Bounded reads: the incidents the question names, else those of the time it names,
    else the newest ``INCIDENT_ROWS``."""
    seeds = {s["ceid"] for s in ctx.seeds}
    asked = sorted(s["ceid"] for s in ctx.seeds if s.get("label") == "FailurePattern")
    named = await _incidents(ctx, ceids=asked) if asked else []
    lo, hi = _span(ctx.route.time)
    if named:  # one of the time the question names, if it names one
        dated = [r for r in named if _within(r, lo, hi)] if lo or hi else named
        if dated:
            return dated[0], "named in the question"
    rows: list[dict[str, Any]] = []
    if lo or hi:
        rows = [r for r in await _incidents(ctx, days=(lo, hi)) if _within(r, lo, hi)]
    if not rows and named:
        return named[0], "named in the question"
    if not rows:
        rows = await _incidents(ctx)
    if not rows:
        return None
    words = _words(ctx.query)
    best = max(rows, key=lambda r: (_score(r, words, seeds), _when(r), r["incident"]["ceid"]))
    if _score(best, words, seeds) == 0:
        return best, "no incident matched the question's words; the most recent one"
    return best, "best match of the question's words and entities"


def _within(row: dict[str, Any], lo: datetime | None, hi: datetime | None) -> bool:
    return (lo is None or lo <= _when(row)) and (hi is None or _when(row) <= hi)


def _when(row: dict[str, Any]) -> datetime:
    found = incident_time(row["date"])
    assert found is not None
    return found[0]


def _cites(snapshot: dict[str, Any], prs: set[str]) -> bool:
    """Does the snapshot's note (a commit subject) cite one of the incident's PRs?"""
    note = str(snapshot.get("note") or "")
    return any(re.search(rf"#{n}\b", note) for n in prs)


async def incident_diff(ctx: SearchContext) -> IncidentDiff | None:
    found = await find_incident(ctx)
    if found is None:
        return None
    row, why = found
    when, date_only = incident_time(row["date"]) or (datetime.now(UTC), False)
    length = window_length(ctx.query)
    targets = [t["ceid"] for t in _targets(row) if t["label"] in TARGET_LABELS]
    near: dict[str, int] = {}

    async def reach(window: Window) -> None:
        """All but the last level of the distance search, while the changes are read; only
        when the window has a snapshot newer than its start (else likely nothing changed)."""
        if targets and window.v_to > window.v_from:
            near.update(await td.distances(ctx.reader, ctx.scope, targets, window.v_from,
                                           window.v_to, MAX_DISTANCE - 1))

    narrowed: dict[str, Any] = {}

    async def narrow(window: Window, snaps: list[dict[str, Any]]) -> Collection[str] | None:
        """A window recording more than ``LARGE_WINDOW`` changes: only the changes near the
        incident's services are read (the answer lists the nearest first anyway)."""
        recorded = sum(int(s["changed_nodes"] or 0) + int(s["changed_edges"] or 0)
                       for s in snaps)
        narrowed.clear()
        if recorded <= LARGE_WINDOW or not targets or window.v_to <= window.v_from:
            return None
        found = await td.distances(ctx.reader, ctx.scope, targets, window.v_from,
                                   window.v_to, MAX_DISTANCE, cap=NEAR_CAP)
        narrowed.update(recorded=recorded, dist=found, depth=max(found.values()))
        return found.keys()

    async def read(start: datetime) -> tuple[Window, list[dict[str, Any]], list[dict[str, Any]]]:
        window, snaps, entries = await changes(
            ctx.settings, ctx.reader, ctx.scope, start, when, load_ontology(), strict=False,
            pool=ctx.pool, alongside=reach, narrow=narrow)
        return window, snaps, [e for e in entries
                               if not any(x.startswith("chunk:") for x in td.touched(e))]

    window, snaps, entries = await read(when - length)
    quiet = None
    if (not entries and not _WINDOW.search(ctx.query) and window.last_at is not None
            and window.last_at <= window.start):  # no snapshot in the window: the latest
        quiet = window  # changes before the incident, the same span before the last one
        window, snaps, entries = await read(window.last_at - length)
    ends = {x for e in entries for x in td.touched(e)}
    if narrowed:
        dist = narrowed["dist"]
    else:
        dist = await td.distances(ctx.reader, ctx.scope, targets, window.v_from, window.v_to,
                                  MAX_DISTANCE, ends, near or None) if targets and ends else {}
    prs = {t["ceid"].split(":", 1)[1] for t in _targets(row) if t["label"] == "PullRequest"}
    cited = {int(s["version"]): _cites(s, prs) for s in snaps}
    ranked = sorted(entries, key=lambda e: _rank_key(e, dist, cited))
    facts = [{"change": e, "distance": td.distance_of(e, dist),
              "cited_cause": cited.get(_version(e), False), "summary": describe(e),
              "rank": rank} for rank, e in enumerate(ranked, 1)]
    return IncidentDiff(row, when, date_only, why, length, window, snaps, facts, quiet,
                        narrowed.get("recorded"), narrowed.get("depth"))


def _version(entry: dict[str, Any]) -> int:
    snap = entry.get("snapshot")
    return int(snap["version"]) if snap else 0


def _rank_key(entry: dict[str, Any], dist: dict[str, int],
              cited: dict[int, bool]) -> tuple[int, bool, float, str]:
    """Nearest first, then changes the incident cites as its cause (``cited``: by snapshot
    version), then the latest."""
    d = td.distance_of(entry, dist)
    snap = entry.get("snapshot")
    stamp = datetime.fromisoformat(snap["valid_at"]).timestamp() if snap else 0.0
    return (MAX_DISTANCE + 1 if d is None else d, not cited.get(_version(entry), False),
            -stamp, entry["id"])


def _kv(values: Any) -> dict[str, str] | None:
    if not isinstance(values, list) or not all(isinstance(v, str) and "=" in v for v in values):
        return None
    return dict(v.split("=", 1) for v in values)


def _key_delta(key: str, change: dict[str, Any]) -> str:
    old, new = _kv(change.get("before")), _kv(change.get("after"))
    if old is None or new is None:
        return key
    parts = [f"{k} {old[k]}→{new[k]}" for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
    parts += [f"+{k}" for k in sorted(new.keys() - old.keys())]
    parts += [f"-{k}" for k in sorted(old.keys() - new.keys())]
    return f"{key}: {', '.join(parts)}" if parts else key


def describe(entry: dict[str, Any]) -> str:
    if entry["kind"] == "node":
        keys = "; ".join(_key_delta(k, v) for k, v in sorted(entry["changed_keys"].items()))
        return (f"{entry['label']} {entry['id']} {entry['change']}"
                + (f" ({keys})" if keys else ""))
    ref = f" [{entry['evidence'][0]}]" if entry["evidence"] else ""
    return f"{entry['type']} {entry['from']} -> {entry['to']} {entry['change']}{ref}"


def _span_text(length: timedelta) -> str:
    if length % timedelta(days=1) == timedelta(0):
        days = length // timedelta(days=1)
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{length // timedelta(hours=1)} hours"


def _gap_text(gap: timedelta) -> str:
    """``2 days 3 hours``, ``5 hours``, ``40 minutes``."""
    days, hours = gap.days, gap.seconds // 3600
    if not days and not hours:
        return f"{max(1, gap.seconds // 60)} minutes"
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{hours} hour{'s' if hours != 1 else ''}"] if hours else []
    return " ".join(parts)


def _snapshot_line(n: int, facts: list[dict[str, Any]], per_snapshot: int) -> str:
    """``n. <commit> (<time>, <subject>; distance d): change; change; ...``"""
    snap = facts[0]["change"]["snapshot"] or {}
    label = (snap.get("commit") or "")[:7] or f"snapshot {snap.get('version')}"
    note = str(snap.get("note") or snap.get("source") or "")
    subject = note.split(" ", 1)[-1] if snap.get("commit") else note
    items = "; ".join(f["summary"] for f in facts[:per_snapshot])
    more = f"; and {len(facts) - per_snapshot} more" if len(facts) > per_snapshot else ""
    dist = facts[0]["distance"]
    cited = ", cited by the incident as its cause" if facts[0]["cited_cause"] else ""
    return (f"{n}. {label} ({snap.get('valid_at')}, {subject}{cited}; distance "
            f"{'>' + str(MAX_DISTANCE) if dist is None else dist}): {items}{more}.")


def incident_note(found: IncidentDiff, per_snapshot: int = 6) -> str:
    """The answer: the incident, then one line per snapshot, best-ranked change first."""
    inc = found.incident["incident"]
    linked = ", ".join(sorted({t["name"] for t in _targets(found.incident)}))
    bare = ", a date without a time: taken as the end of that day" if found.date_only else ""
    head = (f"What changed in the {_span_text(found.length)} before {inc['name']} "
            f"({inc['ceid']}, {found.when.isoformat()}{bare}; linked to "
            f"{linked or 'nothing'}): ")
    if found.quiet is not None and found.window.last_at is not None:
        gap = found.when - found.window.last_at
        head += (f"nothing: no snapshot of the tenant changed the graph between "
                 f"{found.quiet.start.isoformat()} and the incident. The latest change before "
                 f"it was {_gap_text(gap)} earlier; what changed in the "
                 f"{_span_text(found.length)} up to it ({found.window.start.isoformat()} to "
                 f"{found.window.last_at.isoformat()}): ")
    read = "" if found.recorded is None else (
        f"The window records {found.recorded} changes; only those within {found.depth} "
        f"hop{'s' if found.depth != 1 else ''} of the incident's services were read.")
    if not found.ranked and read:
        return head + f"none near the incident's services. {read}"
    if not found.ranked:
        return head + ("nothing: no snapshot of the tenant changed the graph between "
                       f"{found.window.start.isoformat()} and the incident (ask for a longer "
                       "window, e.g. 'in the 7 days before').")
    groups: dict[int, list[dict[str, Any]]] = {}
    for f in found.ranked:
        groups.setdefault(int((f["change"]["snapshot"] or {"version": 0})["version"]), []).append(f)
    lines = [_snapshot_line(n, facts, per_snapshot) for n, facts in enumerate(groups.values(), 1)]
    return (head + f"{len(found.ranked)} change(s) in {len(groups)} snapshot(s), closest to "
            f"the affected services first.{' ' + read if read else ''}\n" + "\n".join(lines))
