"""One extractive composer per question family: the answer stated from the facts, with no model.

Every composer takes its strategy's facts and a ``Citations`` register and returns a sentence
that names the answer, each claim followed by ``[n]`` for its ``path#Lline@commit`` evidence.
A list is only ever rendered through ``listing``, which says what was *not* found instead of
leaving a blank ("X is owned by ." cannot be produced): every composer is walked with empty
inputs by tests/unit/test_composers.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Citation = dict[str, Any]


class Citations:
    def __init__(self) -> None:
        self.items: list[Citation] = []
        self._index: dict[str, int] = {}

    def cite(self, hop: dict[str, Any]) -> str:
        ref = str(hop.get("evidence_ref") or "")
        if not ref:
            return ""
        if ref not in self._index:
            self.items.append({"n": len(self.items) + 1, "evidence_ref": ref,
                               "edge": hop.get("type"), "from": hop.get("from"),
                               "to": hop.get("to"), "source": hop.get("source")})
            self._index[ref] = len(self.items)
        return f"[{self._index[ref]}]"


def listing(items: Iterable[str], empty: str, sep: str = ", ") -> str:
    """``items`` joined, or ``empty`` when there are none (never an empty string)."""
    parts = [i for i in items if i and i.strip()]
    return sep.join(parts) if parts else empty


def name(entity: dict[str, Any] | None) -> str:
    if not entity:
        return "the entity"
    return str(entity.get("name") or entity.get("ceid") or "the entity")


def dependencies(facts: list[dict[str, Any]], cites: Citations, callers: bool) -> str:
    if not facts:
        return "No service named in the question was found, so no dependency was looked up."
    subject = name(facts[0].get("subject"))
    found = [f for f in facts if f.get("target")]
    if not found:
        return no_edges(facts[0].get("subject") or {}, callers)
    parts = []
    for f in found:
        hops = f.get("hops") or []
        refs = "".join(cites.cite(h) for h in hops)
        via = " -> ".join(str(h.get("type")) for h in hops)
        parts.append(f"{name(f.get('target'))}" + (f" ({via})" if via else "") + refs)
    verb = "is called directly by" if callers else "depends on"
    return f"{subject} {verb}: " + listing(parts, "nothing recorded", "; ") + "."


def no_edges(subject: dict[str, Any], callers: bool) -> str:
    if callers:
        return (f"Nothing is recorded as calling or depending on {name(subject)} "
                "(checked the CALLS and DEPENDS_ON edges into it).")
    return (f"No dependencies are recorded for {name(subject)} "
            "(checked its CALLS and DEPENDS_ON edges).")


def owners(fact: dict[str, Any], cites: Citations) -> str:
    subject = name(fact.get("subject"))
    lines = []
    for owner in fact.get("owners") or []:
        claims = owner.get("claims") or []
        refs = "".join(dict.fromkeys(cites.cite(c) for c in claims))
        tag = " (primary)" if any(c.get("primary") for c in claims) else ""
        lines.append(f"{name(owner)}{tag}{refs}")
    if not lines:
        return (f"No owner is recorded for {subject}: no OWNS or PRIMARY_OWNER edge reaches it "
                "(checked CODEOWNERS rules, ownership files and declared owners).")
    text = f"{subject} is owned by " + listing(lines, "nobody recorded") + "."
    return text + (f" Note: {fact['note']}." if fact.get("note") else "")


def memory(facts: list[dict[str, Any]], cites: Citations) -> str:
    if not facts:
        return "No decision or incident is recorded for the service named in the question."
    lines = []
    for f in facts:
        p = f.get("props") or {}
        status = f" — {p['status']}" if p.get("status") else ""
        sup = f", superseded by {', '.join(f['superseded_by'])}" if f.get("superseded_by") \
            else ""
        date = p.get("date") or p.get("occurred_at") or "undated"
        lines.append(f"{f.get('kind')} {name(f.get('item'))} ({date}{status}{sup})"
                     f"{cites.cite(f.get('hop') or {})}")
    return (f"Institutional memory for {name(facts[0].get('subject'))}: "
            + listing(lines, "nothing recorded", "; ") + ".")


def rationale(fact: dict[str, Any], cites: Citations) -> str:
    adr = fact.get("adr") or {}
    status = fact.get("status") or "unknown"
    head = (f"{adr.get('ceid', 'The ADR')} \"{name(adr)}\" (status {status}"
            f", dated {fact.get('date') or 'undated'})")
    quotes = []
    for q in fact.get("quotes") or []:
        ref = cites.cite({"evidence_ref": q["evidence_ref"], "type": "QUOTES",
                          "from": adr.get("ceid"), "to": q["section"], "source": "git"})
        quotes.append(f"{q['section']}: \"{q['text']}\"{ref}")
    if not quotes:
        return f"{head} was retrieved, but it has no Context, Decision or Consequences text."
    return f"{head}. " + listing(quotes, "", " ")


def _change_line(e: dict[str, Any], cites: Citations) -> str:
    snap = e.get("snapshot") or {}
    commit = (snap.get("commit") or "")[:8]
    when = str(snap.get("valid_at") or "")[:10]
    at = f" in {commit} on {when}" if commit else (f" on {when}" if when else "")
    if e.get("kind") == "edge":
        ref = cites.cite(e["hop"]) if e.get("hop") else ""
        return f"{e.get('change')} {e.get('from')} -{e.get('type')}-> {e.get('to')}{at}{ref}"
    evidence = [str(r) for r in e.get("evidence") or [] if "#" in str(r)]
    ref = cites.cite({"evidence_ref": evidence[0], "type": "CHANGED", "from": e.get("id"),
                      "to": e.get("id"), "source": snap.get("source")}) if evidence else ""
    return f"{e.get('change')} {e.get('label')} {e.get('name')}{at}{ref}"


def window(fact: dict[str, Any], cites: Citations) -> str:
    w = fact.get("window") or {}
    span = f"between {str(w.get('from'))[:10]} and {str(w.get('to'))[:10]}"
    changes = fact.get("changes") or []
    if not changes:
        return (f"Nothing changed {span}: no snapshot of the replayed history in that window "
                f"changed the graph ({fact.get('snapshots', 0)} snapshot(s) checked).")
    more = fact.get("total", len(changes)) - len(changes)
    tail = f"; and {more} more" if more > 0 else ""
    return (f"{fact.get('total', len(changes))} change(s) {span} "
            f"({fact.get('snapshots', 0)} snapshot(s)): "
            + listing((_change_line(e, cites) for e in changes), "none", "; ") + tail + ".")


def _snap(snap: dict[str, Any] | None) -> str:
    if not snap:
        return "an unrecorded snapshot"
    note = str(snap.get("note") or "")
    subject = note.split(" ", 1)[1] if " " in note else ""
    commit = (snap.get("commit") or "")[:8]
    return (f"{str(snap.get('valid_at'))[:10]} (commit {commit}"
            + (f" \"{subject[:80]}\"" if subject else "") + ")") if commit \
        else str(snap.get("valid_at"))[:10]


def when(fact: dict[str, Any], cites: Citations) -> str:
    a, b = name(fact.get("subject")), name(fact.get("object"))
    intervals = fact.get("intervals") or []
    if not intervals:
        return (f"No CALLS or DEPENDS_ON edge from {a} to {b} is recorded in the history "
                "(checked every version, closed edges included).")
    first = intervals[0]
    text = (f"{a} started depending on {b} on {_snap(first['opened'])} "
            f"({first['hop'].get('type')}){cites.cite(first['hop'])}.")
    open_now = [i for i in intervals if i["closed"] is None]
    if open_now:
        return text + f" It still does{cites.cite(open_now[-1]['hop'])}."
    last = max(intervals, key=lambda i: str((i["closed"] or {}).get("valid_at")))
    return text + f" It stopped on {_snap(last['closed'])}{cites.cite(last['hop'])}."


def attributes(facts: list[dict[str, Any]], cites: Citations) -> str:
    if not facts:
        return "No service named in the question was found."
    subject = name(facts[0].get("subject"))
    lines = []
    for f in facts:
        if f.get("target") is None:
            continue
        values = f.get("attributes") or {}
        stated = listing((f"{k} {v}" for k, v in values.items()), "no address or port recorded")
        lines.append(f"{name(f['target'])} ({f.get('kind') or f['target'].get('label')}; "
                     f"{stated}){cites.cite(f.get('hop') or {})}")
    if not lines:
        return (f"No dependency with an address, port or version is recorded for {subject} "
                "(checked its CALLS and DEPENDS_ON edges).")
    return f"{subject} uses " + listing(lines, "nothing recorded", "; ") + "."


def fallback(hits: list[Any]) -> str:
    if not hits:
        return "No grounded answer: nothing in the graph matched the question."
    top = listing((f"{h.name} ({h.label})" for h in hits[:5]), "nothing", "; ")
    return f"No family answered this question; the most relevant evidence is: {top}."
