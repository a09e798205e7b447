"""Deterministic, extractive community summaries built from ``gds/entity_facts`` rows.

Nothing is generated: every sentence is put together from graph facts (members, the edges
between them, what they lean on outside, owners, incidents), in a fixed order, so the same
snapshot always gives the same text (and the same embedding).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Facts = Mapping[str, Any]  # one row of gds/entity_facts
MAX_LISTED = 12
MAX_DESCRIPTION = 160
PASSIVE = {"CALLS": "called by", "DEPENDS_ON": "depended on by", "IMPORTS": "imported by",
           "HOSTS": "hosts"}


@dataclass(frozen=True)
class Summary:
    title: str
    text: str
    members: list[dict[str, Any]] = field(default_factory=list)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _listing(items: Sequence[str], limit: int = MAX_LISTED) -> str:
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"{len(items) - limit} more")
    return ", ".join(shown)


def _short(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def fan_in(facts: Facts) -> int:
    """How many distinct entities depend on this one."""
    return len({h["other"]["ceid"] for h in facts["dependents"]})


def _members(rows: Sequence[Facts]) -> list[Facts]:
    return sorted(rows, key=lambda f: (-fan_in(f), f["member"]["name"], f["member"]["ceid"]))


def _member_lines(rows: Sequence[Facts]) -> list[str]:
    services = [f for f in rows if f["member"]["label"] == "Service"]
    others = [f for f in rows if f["member"]["label"] != "Service"]
    lines = []
    if services:
        described = [f["member"]["name"] + (f" ({_short(f['description'])})"
                                            if f["description"] else "") for f in services]
        lines.append("Services: " + _listing(described) + ".")
    if others:
        named = [f["member"]["name"] + (f" ({f['kind']})" if f["kind"] else "") for f in others]
        lines.append("Infrastructure: " + _listing(named) + ".")
    return lines


def _names(names: set[str], limit: int = 5) -> str:
    ordered = sorted(names)
    more = f" and {len(ordered) - limit} more" if len(ordered) > limit else ""
    return ", ".join(ordered[:limit]) + more


def _dependency_lines(rows: Sequence[Facts], inside: set[str]) -> list[str]:
    internal: dict[tuple[str, str], set[str]] = defaultdict(set)  # (target, type) -> sources
    outside: dict[str, set[str]] = defaultdict(set)
    users: dict[str, set[str]] = defaultdict(set)
    for f in rows:
        name = f["member"]["name"]
        for h in f["dependents"]:
            if h["other"]["ceid"] not in inside:
                users[name].add(h["other"]["name"])
        for h in f["depends_on"]:
            if h["other"]["ceid"] in inside:
                internal[(h["other"]["name"], h["hop"]["type"])].add(name)
            else:
                outside[h["other"]["name"]].add(name)
    lines = []
    if internal:  # the most depended-upon targets first
        ranked = sorted(internal.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        lines.append("Key dependencies: " + _listing(
            [f"{t} ({PASSIVE.get(k, 'used by')} {_names(u)})" for (t, k), u in ranked]) + ".")
    if outside:
        ranked_out = sorted(outside.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        lines.append("Relies outside the community on: " + _listing(
            [f"{o} (used by {_names(u)})" for o, u in ranked_out]) + ".")
    if users:
        ranked_out = sorted(users.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        lines.append("Used from outside the community: " + _listing(
            [f"{m} (by {_names(u)})" for m, u in ranked_out]) + ".")
    return lines


def _owner_lines(rows: Sequence[Facts]) -> list[str]:
    owned: dict[str, set[str]] = defaultdict(set)
    primary: dict[str, set[str]] = defaultdict(set)
    unowned = []
    for f in rows:
        if f["member"]["label"] != "Service":
            continue
        if not f["owners"]:
            unowned.append(f["member"]["name"])
        for h in f["owners"]:
            owned[h["other"]["name"]].add(f["member"]["name"])
            if h["hop"]["type"] == "PRIMARY_OWNER":
                primary[h["other"]["name"]].add(f["member"]["name"])
    lines = []
    if owned:
        parts = [f"{o} owns {', '.join(sorted(s))}"
                 + (f" (primary for {', '.join(sorted(primary[o]))})" if primary[o] else "")
                 for o, s in sorted(owned.items())]
        lines.append("Owners: " + "; ".join(parts) + ".")
    if unowned:
        lines.append("No recorded owner: " + _listing(sorted(unowned)) + ".")
    return lines


def _incident_lines(rows: Sequence[Facts]) -> list[str]:
    seen: dict[str, dict[str, Any]] = {}
    for f in rows:
        for h in f["incidents"]:
            inc = seen.setdefault(h["other"]["ceid"], {**h, "CAUSED_BY": set(), "AFFECTED": set()})
            inc[h["hop"]["type"]].add(f["member"]["name"])
    parts = []
    for _, inc in sorted(seen.items(), key=lambda kv: (str(kv[1]["date"] or ""), kv[0])):
        when = ", ".join(str(x) for x in (inc["date"], inc["severity"]) if x)
        text = inc["other"]["name"] + (f" ({when})" if when else "")
        if inc["CAUSED_BY"]:
            text += " caused by " + ", ".join(sorted(inc["CAUSED_BY"]))
        if inc["AFFECTED"]:
            text += ("," if inc["CAUSED_BY"] else "") + " affecting " + ", ".join(
                sorted(inc["AFFECTED"]))
        parts.append(text)
    return ["Incidents: " + "; ".join(parts[:MAX_LISTED]) + "."] if parts else []


def build_summary(rows: Sequence[Facts]) -> Summary:
    """Title, paragraph and member list of one community from its members' facts."""
    ordered = _members(rows)
    inside = {f["member"]["ceid"] for f in ordered}
    names = [f["member"]["name"] for f in ordered if f["member"]["label"] == "Service"]
    names += [f["member"]["name"] for f in ordered if f["member"]["label"] != "Service"]
    title = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    services = sum(1 for f in ordered if f["member"]["label"] == "Service")
    head = (f"A community of {_plural(services, 'service')} and "
            f"{_plural(len(ordered) - services, 'infrastructure component')}.")
    lines = [head, *_member_lines(ordered), *_dependency_lines(ordered, inside),
             *_owner_lines(ordered), *_incident_lines(ordered)]
    members = [{**f["member"], "fan_in": fan_in(f)} for f in ordered]
    return Summary(title, " ".join(lines), members)
