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

from substrate.connectors.infra_kinds import infra_product

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

    def cite_all(self, hop: dict[str, Any], most: int = 3) -> str:
        """The edge's evidence and the other lines that prove it with it (a ConfigMap value
        and the ``envFrom`` line that reads it: ``evidence_refs``)."""
        refs = [str(hop.get("evidence_ref") or "")]
        refs += [str(r) for r in hop.get("evidence_refs") or [] if "#L" in str(r)]
        return "".join(self.cite({**hop, "evidence_ref": r})
                       for r in list(dict.fromkeys(r for r in refs if r))[:most])


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
    check = facts[0].get("check")
    if check is not None and not callers:  # "does checkout call payment?"
        return _checked(facts, cites, check)
    clients = facts[0].get("clients")
    if clients is not None and not callers:  # "where does X store its data?", no datastore
        return _clients(facts, cites, clients)
    groups: dict[str, list[dict[str, Any]]] = {}
    for f in facts:
        groups.setdefault(str((f.get("subject") or {}).get("ceid")), []).append(f)
    first = facts[0].get("subject") or {}
    if first.get("why") != "technology":
        return " ".join(_directed(g, cites, callers) for g in groups.values())
    # the datastores running a technology ("which services use MongoDB?"), each traversed
    lead = f"{first.get('mention')} runs as " + ", ".join(
        name(g[0].get("subject")) for g in groups.values()) + "."
    found = [_directed(g, cites, callers) for g in groups.values()
             if any(f.get("target") for f in g)]
    idle = [name(g[0].get("subject")) for g in groups.values()
            if not any(f.get("target") for f in g)]
    none = ((f"Nothing is recorded as calling or depending on {', '.join(idle)} (checked the "
             "CALLS and DEPENDS_ON edges into each).") if callers else
            f"No dependencies are recorded for {', '.join(idle)}.") if idle else ""
    none += "".join(awaiting(g[0].get("subject") or {}, g[0].get("suggested") or [], cites,
                             named=True)
                    for g in groups.values() if not any(f.get("target") for f in g))
    return " ".join(x.strip() for x in (lead, *found, none) if x)


def _directed(facts: list[dict[str, Any]], cites: Citations, callers: bool) -> str:
    subject = name(facts[0].get("subject"))
    found = [f for f in facts if f.get("target")]
    if not found:
        return no_edges(facts[0].get("subject") or {}, callers) \
            + awaiting(facts[0].get("subject") or {}, facts[0].get("suggested") or [], cites)
    names = {str((f.get("target") or {}).get("ceid")): name(f.get("target")) for f in found}
    direct, indirect = [], []
    for f in found:
        hops = f.get("hops") or []
        refs = "".join(cites.cite_all(h) for h in hops)
        if len(hops) > 1:  # reached through others: named in the direction of the calls
            between = [str(h.get("from" if callers else "to")) for h in hops[:-1]]
            chain = " -> ".join(names.get(c, c.partition(":")[2] or c)
                                for c in (reversed(between) if callers else between))
            indirect.append(f"{name(f.get('target'))} (through {chain})" + refs)
            continue
        via = " -> ".join(str(h.get("type")) for h in hops)
        at = str(hops[-1].get("address") or "") if hops else ""
        bare = at.lower() in {name(f.get("target")).lower(), subject.lower()}  # "at cart"
        via = f"{via} at {at}" if at and via and not bare else via
        direct.append(f"{name(f.get('target'))}" + (f" ({via})" if via else "") + refs)
    verb = "is called directly by" if callers else "depends on"
    text = f"{subject} {verb}: " + listing(direct, "nothing recorded", "; ")
    if indirect:
        text += ("; and indirectly by: " if callers else "; and indirectly on: ") \
            + "; ".join(indirect)
    return text + "."


def _checked(facts: list[dict[str, Any]], cites: Citations, check: dict[str, Any]) -> str:
    """Yes with the edges that reach what was asked about, or no with what was checked (the
    subject's dependencies, each at its line)."""
    subject = facts[0].get("subject") or {}
    mine = [f for f in facts if (f.get("subject") or {}).get("ceid") == subject.get("ceid")]
    found = [f for f in mine if f.get("target") and str(f["target"]["ceid"]) in check["found"]]
    if found:
        return "Yes: " + _directed(found, cites, callers=False)
    asked = listing(check["asked"], "what was asked", " or ")
    through = check.get("through") or []
    if through:  # no direct edge, but reached through other services
        chains = []
        for f in through:
            hops = f.get("hops") or []
            between = " -> ".join(str(h.get("to")).partition(":")[2] or str(h.get("to"))
                                  for h in hops[:-1])
            chains.append(f"{name(f.get('target'))} (through {between})"
                          + "".join(cites.cite_all(h) for h in hops))
        return (f"Not directly: no CALLS or DEPENDS_ON edge from {name(subject)} to {asked} "
                f"is recorded, but {name(subject)} reaches " + "; ".join(chains) + ".")
    shared = check.get("shared") or []
    if shared:  # no edge either way, but one broker between them (a producer, a consumer)
        via = "; ".join(f"{name(f.get('other'))} and {name(subject)} both use "
                        f"{name(f.get('target'))}" + "".join(cites.cite_all(h) for h in f["hops"])
                        for f in shared)
        head = (f"No direct call: no CALLS or DEPENDS_ON edge from {name(subject)} to {asked} "
                f"is recorded, but {via}, a message broker")
        known = [f["messages"] for f in shared if f.get("messages") is not None]
        if not known:
            return (f"{head} through which messages may pass between them (which of them "
                    "publishes is not recorded).")
        passed = [m for k in known for m in k["flows"]]
        if not passed:
            return (f"{head}; as their code says, nothing one of them publishes is consumed "
                    "by the other.")
        return f"{head}; as their code says, " + "; ".join(_passed(m, cites) for m in passed) \
            + "."
    return (f"No: no CALLS or DEPENDS_ON edge from {name(subject)} to {asked} "
            "is recorded. " + _directed(mine, cites, callers=False))


def _passed(flow: dict[str, Any], cites: Citations) -> str:
    """"payment publishes orders[1], which dispatch consumes[2]"."""
    sent, got = flow["refs"]
    return (f"{name(flow['from'])} publishes {flow['message']}"
            + cites.cite({"evidence_ref": sent, "type": "PUBLISHES",
                          "from": flow["from"].get("ceid"), "to": flow["message"],
                          "source": "git"})
            + f", which {name(flow['to'])} consumes"
            + cites.cite({"evidence_ref": got, "type": "CONSUMES",
                          "from": flow["to"].get("ceid"), "to": flow["message"],
                          "source": "git"}))


def _clients(facts: list[dict[str, Any]], cites: Citations, clients: list[dict[str, str]]
             ) -> str:
    """No datastore among the subject's dependencies (each listed, as what was checked), and
    the datastore clients its build declares, each at its line."""
    subject = facts[0].get("subject") or {}
    mine = [f for f in facts if f.get("target")
            and (f.get("subject") or {}).get("ceid") == subject.get("ceid")]
    checked = (" " + _directed(mine, cites, callers=False)) if mine else ""
    text = (f"No datastore is recorded among the dependencies of {name(subject)} (checked its "
            f"CALLS and DEPENDS_ON edges).{checked}")
    if not clients:
        return text
    declared = "; ".join(c["product"] + cites.cite({
        "evidence_ref": c["evidence_ref"], "type": "ATTRIBUTE", "from": subject.get("ceid"),
        "to": c["product"]}) for c in clients)
    return (f"{text} Its build declares clients for: {declared} (what it can store data in; "
            "which instance it reaches is not recorded).")


def no_edges(subject: dict[str, Any], callers: bool) -> str:
    if callers:
        return (f"Nothing is recorded as calling or depending on {name(subject)} "
                "(checked the CALLS and DEPENDS_ON edges into it).")
    return (f"No dependencies are recorded for {name(subject)} "
            "(checked its CALLS and DEPENDS_ON edges).")


_SUGGESTED_BY = {"naming": "by name"}


def awaiting(subject: dict[str, Any], suggested: list[dict[str, Any]], cites: Citations,
             named: bool = False) -> str:
    """The edges the verification queue holds for a subject with none recorded, said as
    suggestions (not facts of the graph), each cited where it was found; ``named``: the
    subject named (one of several in the answer)."""
    if not suggested:
        return ""
    items = []
    for s in suggested:
        why = _SUGGESTED_BY.get(str(s.get("via")), str(s.get("via") or "inferred"))
        ref = cites.cite({"from": subject.get("ceid"), "to": s["target"].get("ceid"),
                          "type": s["type"],
                          "evidence_ref": s["evidence_ref"], "source": "verification_queue"})
        items.append(f"{name(s['target'])} ({s['type']}, {why}, confidence "
                     f"{float(s['confidence']):.2f}; queue item {s['queue_id']}){ref}")
    about = f" for {name(subject)}" if named else ""
    return (f" Suggested{about}, awaiting verification (not in the graph until a reviewer "
            "approves it: `substrate queue approve ID`): " + "; ".join(items) + ".")


def handle(owner: dict[str, Any]) -> str:
    """An owner as its ownership file wrote it (``@org/team``, ``@user``), else its name."""
    written = str(owner.get("handle") or "")
    return written if written.startswith("@") or "@" in written else name(owner)


def _subject(entity: dict[str, Any] | None) -> str:
    """A module (a path) by its name and path when they differ: "registrar (src/registrar/)"."""
    label, path = name(entity), str((entity or {}).get("path") or "").strip("/")
    return f"{label} ({path}/)" if path and path not in label else label


def owners(fact: dict[str, Any], cites: Citations) -> str:
    subject = _subject(fact.get("subject"))
    lines = []
    for owner in fact.get("owners") or []:
        claims = owner.get("claims") or []
        refs = "".join(dict.fromkeys(cites.cite(c) for c in claims))
        tag = " (primary)" if any(c.get("primary") for c in claims) else ""
        lines.append(f"{handle(owner)}{tag}{refs}")
    if not lines:  # cite where the entity is defined: that is what was checked
        defined = "".join(cites.cite({"evidence_ref": ref, "type": "DEFINED", "from": subject,
                                      "to": subject, "source": "git"})
                          for ref in (fact.get("defined_at") or [])[:1])
        checked = "".join(cites.cite({"evidence_ref": ref, "type": "RULE", "from": subject,
                                      "to": subject, "source": "git"})
                          for ref in fact.get("rules_checked") or [])
        return (f"No owner is recorded for {subject}{defined}: no OWNS or PRIMARY_OWNER edge "
                f"reaches it (checked CODEOWNERS rules{checked}, ownership files and declared "
                "owners).")
    text = f"{subject} is owned by " + listing(lines, "nobody recorded") + "."
    return text + (f" Note: {fact['note']}." if fact.get("note") else "")


def owners_overview(fact: dict[str, Any], cites: Citations) -> str:
    """"Who are the code owners?": each owner with how much it owns, the first few named."""
    rows = fact.get("overview") or []
    if not rows:
        return ("No owner is recorded at this snapshot: no OWNS or PRIMARY_OWNER edge (checked "
                "CODEOWNERS rules, ownership files and declared owners).")
    parts = []
    for row in rows:
        owned, examples = int(row.get("owned") or 0), row.get("examples") or []
        named = ", ".join(f"{_subject(e['entity'])}{cites.cite(e['hop'])}" for e in examples)
        more = f" and {owned - len(examples)} more" if owned > len(examples) else ""
        parts.append(f"{handle(row['owner'])} owns {owned}: {named}{more}")
    head = f"{len(rows)} owner(s) recorded" + (" (the largest listed)" if fact.get("truncated")
                                               else "")
    return f"{head}: " + "; ".join(parts) + "."


OVERVIEW_LISTED = 25  # services, infrastructure and callers an overview names


def system_overview(fact: dict[str, Any], cites: Citations) -> str:
    """"What are the main components of this system?": services (language, what their README
    says), infrastructure, who calls or uses whom, what is depended on most."""
    services, infra = fact.get("services") or [], fact.get("infrastructure") or []
    modules = fact.get("modules") or []
    if not services and not infra and not modules:
        return "No service, infrastructure or module of code is held at this snapshot."

    def service(e: dict[str, Any]) -> str:
        ceid = e["entity"]["ceid"]
        said = (cites.cite({"type": "DEFINED", "from": ceid, "to": ceid, "source": "git",
                            "evidence_ref": e["description_ref"]})
                if e.get("description_ref") else "")
        lang = f" ({e['language']})" if e.get("language") else ""
        return f"{name(e['entity'])}{lang}" + (f": {e['summary']}{said}" if e.get("summary")
                                               else "")

    def component(e: dict[str, Any]) -> str:
        """"carts-db (database: mongo)": its kind and the product its image runs."""
        what, product = e.get("kind") or e.get("image"), infra_product(e.get("image"))
        what = f"{what}: {product}" if e.get("kind") and product else what
        return f"{name(e['entity'])}" + (f" ({what})" if what else "")

    def more(items: list[Any]) -> str:
        return f" and {len(items) - OVERVIEW_LISTED} more" if len(items) > OVERVIEW_LISTED else ""

    text = (f"The system holds {len(services)} service(s) and {len(infra)} infrastructure "
            "component(s)" + (f", and {len(modules)} module(s) of code that no deployment "
                              "names" if modules else "") + ".")
    projects = fact.get("projects") or []
    if projects:  # what the README says the whole is, first
        text = " ".join(f"{p.get('title') or name(p['entity'])}: {p['summary'].rstrip('.')}."
                        + (cites.cite({"type": "DEFINED", "from": p["entity"]["ceid"],
                                       "to": p["entity"]["ceid"], "source": "git",
                                       "evidence_ref": p["description_ref"]})
                           if p.get("description_ref") else "")
                        for p in projects[:OVERVIEW_LISTED]) + " " + text
    if services:
        text += (" Services: " + "; ".join(service(e) for e in services[:OVERVIEW_LISTED])
                 + more(services) + ".")
    if modules:
        text += (" Modules: " + "; ".join(service(e) for e in modules[:OVERVIEW_LISTED])
                 + more(modules) + ".")
    if infra:
        text += (" Infrastructure: " + ", ".join(component(e) for e in infra[:OVERVIEW_LISTED])
                 + more(infra) + ".")
    by_source: dict[str, list[dict[str, Any]]] = {}
    for link in fact.get("links") or []:
        by_source.setdefault(link["from"]["ceid"], []).append(link)
    if by_source:
        calls = [f"{name(ls[0]['from'])} -> " + ", ".join(
                     f"{name(x['to'])}{cites.cite(x['hop'])}" for x in ls)
                 for ls in list(by_source.values())[:OVERVIEW_LISTED]]
        text += " Connections: " + "; ".join(calls) + more(list(by_source)) + "."
    names = {e["entity"]["ceid"]: name(e["entity"]) for e in services + infra + modules}
    most = sorted((fact.get("fan_in") or {}).items(), key=lambda x: (-x[1], x[0]))[:3]
    if most:
        text += (" Depended on most: " + ", ".join(f"{names.get(c, c)} ({n})" for c, n in most)
                 + ".")
    return text


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
    written = str(fact.get("status_text") or "")
    if written and written.lower() != status.lower():  # as written, then normalised
        status = f"{written} ({status})"
    status_ref = cites.cite({"evidence_ref": fact["status_ref"], "type": "STATUS",
                             "from": adr.get("ceid"), "to": status, "source": "git"}) \
        if fact.get("status_ref") else ""
    # the later record named even when the status says "Superseded 0019": its title tells
    # what replaced this one ("Use bash and go")
    later = list(fact.get("superseded_by") or [])
    in_force = [x for x in later if x.get("status") in (None, "accepted", "superseded")]
    if in_force:  # only the later record says so
        status_ref += "; superseded by " + ", ".join(
            f"{x['entity'].get('ceid')} \"{name(x['entity'])}\"{cites.cite(x['hop'])}"
            for x in in_force)
    for x in (x for x in later if x not in in_force):  # a proposal, not yet in force
        status_ref += (f"; {x['entity'].get('ceid')} \"{name(x['entity'])}\" "
                       f"({x.get('status')}) would supersede it{cites.cite(x['hop'])}")
    head = (f"{adr.get('ceid', 'The ADR')} \"{name(adr)}\" (status {status}{status_ref}"
            f", dated {fact.get('date') or 'undated'})")
    old = fact.get("replaces")
    if old:  # answered in place of the record it superseded, which matched the question
        head += (f", which superseded {old['adr'].get('ceid')} \"{name(old['adr'])}\""
                 f"{cites.cite(old['hop'])}")
    quotes = []
    for q in fact.get("quotes") or []:
        ref = cites.cite({"evidence_ref": q["evidence_ref"], "type": "QUOTES",
                          "from": adr.get("ceid"), "to": q["section"], "source": "git"})
        quotes.append((f"{q['section']}: " if q["section"] else "") + f"\"{q['text']}\"{ref}")
    if not quotes:
        return f"{head} was retrieved, but it has no Context, Decision or Consequences text."
    return f"{head}. " + listing(quotes, "", " ")


def page(fact: dict[str, Any], cites: Citations) -> str:
    """A README or documentation page's sentences closest to a question no family took
    (:mod:`page_quotes`), each under its heading, cited at its lines."""
    doc, path = fact.get("document") or {}, str(fact.get("path") or "")
    title = name(doc)
    head = path if title in (path, path.rsplit("/", 1)[-1]) else f"{path} (\"{title}\")"
    quotes = []
    for q in fact.get("quotes") or []:
        ref = cites.cite({"evidence_ref": q["evidence_ref"], "type": "QUOTES",
                          "from": doc.get("ceid"), "to": q["section"] or path, "source": "git"})
        quotes.append((f"{q['section']}: " if q["section"] else "") + f"\"{q['text']}\"{ref}")
    return f"{head} says: " + listing(quotes, "nothing", " ") + "."


def decisions_mentioning(fact: dict[str, Any], cites: Citations) -> str:
    """"Which decisions mention X": each record naming it, at the first line that does."""
    term, records = fact.get("term"), fact.get("records") or []
    if not records:
        return (f"No decision record mentions {term} (searched the title and text of every "
                "record at this snapshot, whole words only).")
    items = [f"{r['adr'].get('ceid')} \"{name(r['adr'])}\" ({r.get('status') or 'unknown'}"
             f"{', ' + str(r['date']) if r.get('date') else ''}): \"{r.get('line')}\""
             f"{cites.cite(r['hop'])}" for r in records]
    total = int(fact.get("total") or len(records))
    more = f" ({total - len(records)} more not listed)" if total > len(records) else ""
    return (f"{total} decision record(s) mention {term}{more}: " + "; ".join(items) + ".")


def decisions_by_date(fact: dict[str, Any], cites: Citations) -> str:
    """"The most recent decision": the newest (or oldest) records by date, each cited at its
    title line; one asked for, the ones before it follow."""
    records, many = fact.get("records") or [], int(fact.get("asked") or 1)
    if not records:
        return "No decision record is held at this snapshot."
    word = "oldest" if fact.get("oldest") else "most recent"

    def item(r: dict[str, Any]) -> str:
        date = (f", dated {r['date']}" if r.get("own_date") else
                f", first seen {r['date']}" if r.get("date") else ", undated")
        return (f"{r['adr'].get('ceid')} \"{name(r['adr'])}\" ({r.get('status') or 'unknown'}"
                f"{date}){cites.cite(r['hop'])}")

    if many == 1:
        rest = records[1:]
        text = f"The {word} decision record is {item(records[0])}."
        if rest:
            text += (" Before it: " if word == "most recent" else " After it: ") \
                + "; ".join(item(r) for r in rest) + "."
        return text
    shown = records[:many]
    return (f"The {len(shown)} {word} decision records (of {fact.get('total')}): "
            + "; ".join(item(r) for r in shown) + ".")


OWNER_EDGES = ("OWNS", "PRIMARY_OWNER")  # their start as the ownership file writes it
STATED_KEYS = ("image", "kind", "status", "address", "url", "host", "port", "ports", "version",
               "handle", "pattern")
_VALUE_CHARS = 60


def _value(v: Any) -> str:
    text = ", ".join(str(x) for x in v) if isinstance(v, list) else str(v)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def what_changed(e: dict[str, Any], most: int = 2) -> str:
    """The facts a changed element now states differently, as ``key before -> after``
    (an edge's properties, a node's image/kind/status/address ...), at most ``most``."""
    keys = dict(e.get("changed_keys") or {})
    props = keys.pop("props", None)
    if isinstance(props, dict):  # an edge: its own properties before and after
        old, new = dict(props.get("before") or {}), dict(props.get("after") or {})
        keys.update({k: {"before": old.get(k), "after": new.get(k)} for k in set(old) | set(new)
                     if old.get(k) != new.get(k)})
    parts = []
    for k in STATED_KEYS:
        d = keys.get(k)
        if not isinstance(d, dict) or d.get("before") == d.get("after"):
            continue
        was, now = d.get("before"), d.get("after")
        if isinstance(was, list) and len(was) > 3 or isinstance(now, list) and len(now) > 3:
            continue
        parts.append(f"{k} {_value(was) if was not in (None, '', []) else 'unset'} -> "
                     f"{_value(now) if now not in (None, '', []) else 'unset'}")
    return f" ({'; '.join(parts[:most])})" if parts else ""


def changed_lines(refs: list[str], snap: dict[str, Any], only: bool = False) -> list[str]:
    """``refs`` with the lines the snapshot's own commit wrote first (a ref cites the commit
    its line comes from): they show the change itself. ``only``: just those."""
    commit = str(snap.get("commit") or "")
    refs = [r for r in dict.fromkeys(refs) if "#L" in r]
    own = [r for r in refs if commit and len(r.rsplit("@", 1)[-1]) >= 7
           and commit.startswith(r.rsplit("@", 1)[-1])]
    return own if only else own + [r for r in refs if r not in own]


def _change_line(e: dict[str, Any], cites: Citations) -> str:
    snap = e.get("snapshot") or {}
    commit = (snap.get("commit") or "")[:8]
    when = str(snap.get("valid_at") or "")[:10]
    at = f" in {commit} on {when}" if commit else (f" on {when}" if when else "")
    if e.get("kind") == "edge":
        hop = e.get("hop") or {}
        first = changed_lines([str(r) for r in e.get("evidence") or []], snap)[:1]
        ref = cites.cite({**hop, "evidence_ref": first[0]}) if hop and first else \
            (cites.cite(hop) if hop else "")
        props = (e.get("after") or e.get("before") or {}).get("props") or {}
        start = str(props.get("handle") or "") if e.get("type") in OWNER_EDGES else ""
        start = start if "@" in start else str(e.get("from"))
        rule = str(props.get("pattern") or "") if e.get("type") in OWNER_EDGES else ""
        rule = f" (rule {rule})" if rule and e.get("change") != "changed" else ""
        return (f"{e.get('change')} {start} -{e.get('type')}-> {e.get('to')}{rule}"
                f"{what_changed(e)}{at}{ref}")
    stated = [str(r).rsplit("|", 1)[-1] for r in (e.get("after") or {}).get("attribute_refs")
              or []] if e.get("change") == "changed" else []
    evidence = changed_lines(stated, snap, only=True)[:2]  # the lines the change wrote
    evidence = evidence or [str(r) for r in e.get("evidence") or [] if "#" in str(r)][:1]
    ref = "".join(cites.cite({"evidence_ref": r, "type": "CHANGED", "from": e.get("id"),
                              "to": e.get("id"), "source": snap.get("source")})
                  for r in evidence)
    ident = str(e.get("id") or "")
    named = f"{ident} \"{e.get('name')}\"" if ident and e.get("name") not in (None, ident) \
        and e.get("label") == "DecisionNode" else str(e.get("name") or ident)
    written = str(((e.get("after") or e.get("before") or {}).get("handle")) or "")
    named = written if e.get("label") in ("Team", "Developer") and "@" in written else named
    return f"{e.get('change')} {e.get('label')} {named}{what_changed(e)}{at}{ref}"


def window(fact: dict[str, Any], cites: Citations) -> str:
    w = fact.get("window") or {}
    span = f"between {str(w.get('from'))[:10]} and {str(w.get('to'))[:10]}"
    changes = fact.get("changes") or []
    about = " and ".join(fact.get("about") or [])
    if not changes and about:
        return (f"Nothing changed for {about} {span} ({fact.get('others', 0)} other change(s) "
                f"in {fact.get('snapshots', 0)} snapshot(s) of that window).")
    if about:
        span = f"to {about} {span}"
    if not changes and fact.get("asked") and fact.get("others"):
        return (f"Nothing of that kind was {fact['asked']} {span} ({fact['others']} other "
                f"change(s) in {fact.get('snapshots', 0)} snapshot(s) of that window).")
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


def switched(fact: dict[str, Any], cites: Citations) -> str:
    """"When did X switch to Y": the snapshot whose change first stated a value naming Y."""
    hop = fact.get("hop") or {}
    if not fact.get("term") or not fact.get("snapshot"):
        return (f"No change of {name(fact.get('subject'))} to the value the question names is "
                "recorded in the history (checked its CALLS and DEPENDS_ON edges, their other "
                "ends and itself).")
    ref = cites.cite(hop) if hop.get("evidence_ref") else ""
    other = str(hop.get("to") or "its dependency").split(":", 1)[-1]
    where = "itself" if fact.get("element") == (fact.get("subject") or {}).get("ceid") \
        else ("its edge to " if fact.get("kind") == "edge" else "") + other
    return (f"{name(fact.get('subject'))} switched to {fact.get('term')} on "
            f"{_snap(fact.get('snapshot'))}: the first change that gave {where} a value "
            f"naming {fact.get('term')}{ref}.")


def file_added(fact: dict[str, Any], cites: Citations) -> str:
    """"When was <file> added": the first snapshot whose changes cite the file."""
    if not fact.get("path") or not fact.get("snapshot"):
        return "No file the question names is cited by any change of the replayed history."
    ref = cites.cite(fact.get("hop") or {})
    return (f"{fact.get('path')} was added on {_snap(fact.get('snapshot'))}: the first "
            f"change of the replayed history citing it{ref}.")


def _stated(c: dict[str, Any], subject: str, cites: Citations) -> str:
    refs = "".join(cites.cite({"evidence_ref": r, "type": "ATTRIBUTE", "from": subject,
                               "to": c["value"], "source": "git"})
                   for r in dict.fromkeys(r for r in c.get("refs") or [] if "#L" in r))
    edge = c.get("edge")
    if edge is not None:
        hop, other = edge.get("hop") or {}, name(edge.get("target"))
        user, used = (subject, other) if edge.get("outgoing") else (other, subject)
        var = (edge.get("props") or {}).get("var")
        how = f"{user} -{hop.get('type', 'CALLS')}-> {used}" + (f", {var}" if var else "")
        return f"{c['attr']} {c['value']} ({how}){refs}"
    if c["attr"] == "description":  # the README's own words
        return f"{str(c['value']).rstrip('.')}{refs}"
    if c["attr"] == "language":
        return f"written in {c['value']}{refs}"
    if c["attr"] == "language_version":
        return f"runs {c['value']}{refs}"
    if c["attr"] == "framework":
        return f"built with {c['value']}{refs}"
    if c["attr"] == "deployment":
        return f"deployed by {c['value']}{refs}"
    if c["attr"] == "kind":  # "a database (aurora-postgresql 15.10)"
        return f"{c['value']}{refs}"
    if c["attr"] == "exposure":
        return f"{c['value']}{refs}"
    what = {"port": "published/listening port", "image": "image",
            "name": f"name ({c.get('var')})"}.get(c["attr"], c["attr"])
    return f"{what} {c['value']} of {name(c.get('node'))}{refs}"


def first_seen(fact: dict[str, Any], cites: Citations) -> str:
    subject = fact.get("subject") or {}
    label = name(subject)
    if subject.get("label") == "DecisionNode":
        label = f"{subject.get('ceid')} \"{name(subject)}\""
    ref = cites.cite(fact.get("hop") or {})
    dated = f" The record itself is dated {fact['date']}." if fact.get("date") else ""
    if fact.get("as_owner"):
        hop = fact.get("hop") or {}
        return (f"{label} first became an owner ({hop.get('type')} {hop.get('to')}) on "
                f"{_snap(fact.get('snapshot'))}{ref}.")
    return f"{label} first appears in the history on {_snap(fact.get('snapshot'))}{ref}.{dated}"


def _claimants(rows: list[dict[str, Any]], cites: Citations) -> str:
    """Owners by handle, each with its claim types and their citations."""
    by_owner: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_owner.setdefault(handle({**row["owner"], "handle": row.get("handle")}),
                            []).append(row["hop"])
    return listing((f"{who} ({', '.join(sorted({str(h.get('type')) for h in hops}))})"
                    + "".join(dict.fromkeys(cites.cite(h) for h in hops))
                    for who, hops in by_owner.items()), "nobody")


def owners_changed(fact: dict[str, Any], cites: Citations) -> str:
    """"When did the owner of X change / did T take over X": the change of its owners."""
    subject, event = name(fact.get("subject")), fact.get("event")
    if event is None:
        current = fact.get("current") or []
        if not current:
            return f"No owner of {subject} is recorded at any time in the history."
        if fact.get("unowned_since"):  # it had no owner first: the first claim is the change
            return (f"{subject} had no recorded owner from {_snap(fact['unowned_since'])} until"
                    f" {_snap(fact.get('first'))}, when {_claimants(current, cites)} became "
                    "its owner(s); no change of its owners is recorded since.")
        held = [r for r in current if r["owner"]["ceid"] in (fact.get("named") or [])]
        if held:  # "when did mchen become an owner of X": from the start
            return (f"{_claimants(held, cites)} has owned {subject} since "
                    f"{_snap(fact.get('first'))}, when it first appears with owners; no "
                    "change of its owners is recorded since.")
        return (f"No change of {subject}'s owners is recorded in the history: "
                f"{_claimants(current, cites)} since {_snap(fact.get('first'))}.")
    text = f"{subject}'s owners changed on {_snap(event.get('snapshot'))}: "
    parts = []
    if event.get("gained"):
        parts.append(f"{_claimants(event['gained'], cites)} became owner(s)")
    if event.get("lost"):
        parts.append(f"{_claimants(event['lost'], cites)} stopped being owner(s)")
    text += "; ".join(parts) + "."
    others = [o for o in fact.get("others") or [] if o]
    if others:
        text += " Its owners also changed on " + ", ".join(
            str(o.get("valid_at"))[:10] for o in others) + "."
    return text


def removed(fact: dict[str, Any], cites: Citations) -> str:
    """"When was X removed": the snapshot that ended its last validity interval."""
    subject, hop = name(fact.get("subject")), fact.get("hop") or {}
    ref = cites.cite(hop) if hop.get("evidence_ref") else ""
    if fact.get("removed") is None:
        return (f"{subject} has not been removed: it is in the graph at the current snapshot, "
                f"defined{ref} since {_snap(fact.get('first'))}.")
    return (f"{subject} was removed on {_snap(fact.get('removed'))}; it had been defined"
            f"{ref} since {_snap(fact.get('first'))}.")


def removed_ever(fact: dict[str, Any], cites: Citations) -> str:
    """"Which services were removed?": each one gone over the history, the latest first,
    with when it was removed and since when it had been defined (at its defining line)."""
    gone = fact.get("removed_ever") or []
    labels = fact.get("labels") or []
    kind = {("Service",): "service", ("Infrastructure",): "infrastructure component"}.get(
        tuple(labels), "component")
    if not gone:
        return (f"No {kind} was removed over the replayed history: every {kind} ever defined "
                "is still in the graph at this snapshot.")
    items = []
    for g in gone:
        ref = cites.cite(g["hop"]) if (g.get("hop") or {}).get("evidence_ref") else ""
        items.append(f"{name(g.get('subject'))} (removed {_snap(g.get('removed'))}; defined"
                     f"{ref} since {_snap(g.get('first'))})")
    more = " (the latest listed)" if fact.get("truncated") else ""
    return f"{len(gone)} {kind}(s) removed over the history{more}: " + "; ".join(items) + "."


def each_service(fact: dict[str, Any], cites: Citations) -> str:
    """"What language is each service written in?": every service's value, at its line."""
    attr = str(fact.get("each"))
    items = []
    for value in fact.get("stated") or []:
        node = value.get("node") or {}
        refs = [r for r in value.get("refs") or [] if "#L" in r][:1]
        cite = "".join(cites.cite({"evidence_ref": r, "type": "ATTRIBUTE",
                                   "from": node.get("ceid"), "to": str(value["value"]),
                                   "source": "git"}) for r in refs)
        items.append(f"{name(node)}: {value['value']}{cite}")
    silent = [name(e) for e in fact.get("silent") or []]
    if not items:
        return (f"No service's {attr} is stated in the sources read ({len(silent)} service(s) "
                "checked: their READMEs, build files, Dockerfiles and manifests).")
    text = f"{attr.capitalize()} of each service: " + "; ".join(items) + "."
    if silent:
        text += f" Not stated for: {', '.join(silent)}."
    return text


def attributes(facts: list[dict[str, Any]], cites: Citations) -> str:
    if facts and facts[0].get("each"):
        return each_service(facts[0], cites)
    if not facts:
        return "No service named in the question was found."
    subject = name(facts[0].get("subject"))
    stated = facts[0].get("stated") or []
    if not stated:
        return (f"No address, port or image answering this is recorded for {subject} "
                "(checked its CALLS and DEPENDS_ON edges in both directions and its own "
                "image, ports, environment, description and language).")
    first, rest = stated[0], stated[1:]
    if first.get("instead_of") == "description":  # "what does X do?" and no README says
        return (f"No description of {subject} is recorded; what the sources state about it: "
                + listing((_stated(c, subject, cites) for c in stated), "nothing", "; ") + ".")
    text = f"{subject}: {_stated(first, subject, cites)}."
    if rest:
        text += " Also recorded: " + listing((_stated(c, subject, cites) for c in rest),
                                             "nothing else", "; ") + "."
    return text


NO_MATCH = "No grounded answer: nothing in the graph matched the question."
NO_FAMILY = "No family answered this question"


def fallback(hits: list[Any]) -> str:
    if not hits:
        return NO_MATCH
    top = listing((f"{h.name} ({h.label})" for h in hits[:5]), "nothing", "; ")
    return f"{NO_FAMILY}; the most relevant evidence is: {top}."


def unknown_names(names: list[str], text: str) -> str:
    """A fallback answer (``text``) to a question naming something the graph does not hold:
    says so first ("who owns the cart service?" where no cart exists)."""
    said = listing((f"\"{n}\"" for n in names), "nothing", " or ")
    return (f"Nothing named {said} is known at this snapshot (no entity's name, alias or id "
            f"matches it). {text}")


def fell_back(text: str) -> bool:
    """Is ``text`` the answer of no family (:func:`fallback`)?"""
    return text == NO_MATCH or text.startswith(NO_FAMILY)
