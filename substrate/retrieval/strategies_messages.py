"""Who publishes and who consumes a topic, a queue or an integration event (Intent.MESSAGES).

The services' code says it (``connectors.messages``: each service's ``publishes`` and
``consumes``, each name cited at the line that sends or subscribes). One read
(``retrieval/message_flows``) gives every service that sends or receives anything; then:

* a question naming a message ("who publishes OrderStartedIntegrationEvent, and who subscribes
  to it?", "which services consume the orders topic?"): its publishers and consumers. An
  integration event may be named without its suffix ("OrderStarted event");
* else a question naming a service ("which events does payment-processor consume and
  publish?"): what it publishes, with who consumes each, and what it consumes, with who
  publishes each;
* else a question naming a broker ("which services use Kafka, and who publishes vs
  consumes?"): what each service using it publishes and consumes.

Nothing found (no message named, the service's code sends nothing): no facts, and the note
names the family the answer falls back to (the router's runner-up: callers or dependency),
which the rest of the preset answers.
"""

from __future__ import annotations

import re
from typing import Any

from substrate.retrieval import direct
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.router import Intent

MAX_SERVICES = 500
ROLES = ("publishes", "consumes")
_EVENT_SUFFIX = "IntegrationEvent"


def flows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``retrieval/message_flows`` rows as ``{"service", "publishes": {name: ref},
    "consumes": {name: ref}}``."""
    out = []
    for row in rows:
        refs: dict[tuple[str, str], str] = {}
        for entry in row.get("refs") or []:
            role, _, rest = str(entry).partition("|")
            value, _, ref = rest.rpartition("|")
            refs[(role, value)] = ref
        out.append({"service": row["entity"],
                    **{role: {str(n): refs.get((role, str(n)), "") for n in row.get(role) or []}
                       for role in ROLES}})
    return out


def named_messages(question: str, known: list[dict[str, Any]]) -> list[str]:
    """The messages of ``known`` (see :func:`flows`) the question names, in its order: a name
    as a whole word ("orders", not "orders-db"), an integration event also without its
    suffix ("OrderStarted")."""
    found: dict[str, int] = {}
    names = {n for f in known for role in ROLES for n in f[role]}
    for message in sorted(names, key=len, reverse=True):
        forms = [message]
        if message.endswith(_EVENT_SUFFIX) and len(message) > len(_EVENT_SUFFIX):
            forms.append(message[: -len(_EVENT_SUFFIX)])
        for form in forms:
            hit = re.search(rf"(?<![\w.-]){re.escape(form)}(?![\w-])", question, re.I)
            if hit is not None and not any(hit.start() >= s and form.lower() in m.lower()
                                           for m, s in found.items()):
                found[message] = hit.start()
                break
    return sorted(found, key=found.__getitem__)


def _ends(known: list[dict[str, Any]], role: str, message: str) -> list[dict[str, Any]]:
    """``{"service", "evidence_ref"}`` of each service that ``role``s ``message``."""
    return [{"service": f["service"], "evidence_ref": f[role][message]}
            for f in known if message in f[role]]


def _hop(role: str, service: dict[str, Any], message: str, ref: str) -> dict[str, Any]:
    return {"type": role.upper(), "from": service["ceid"], "to": message, "evidence_ref": ref,
            "source": "git", "confidence": 1.0, "hop": 1}


async def message_flows(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("message_flows")
    rows = await ctx.reader.rows("retrieval/message_flows", ctx.scope, limit=MAX_SERVICES)
    known = flows(rows)
    fact = await _fact(ctx, known)
    if fact is None:
        runner_up = next((i for i in ctx.route.secondary
                          if i in (Intent.CALLERS, Intent.DEPENDENCY)), None)
        result.note = str(runner_up or ("callers" if any(
            s["label"] == "Infrastructure" for s in ctx.seeds) else "dependency"))
        return result
    result.facts.append(fact)
    for entry in fact.get("messages") or []:
        for role, key in (("publishes", "publishers"), ("consumes", "consumers")):
            for end in entry[key]:
                result.hops.append(_hop(role, end["service"], entry["name"],
                                        end["evidence_ref"]))
    for f in fact.get("services") or []:
        for role in ROLES:
            for message, ref in f[role].items():
                result.hops.append(_hop(role, f["service"], message, ref))
    for role, by_message in (fact.get("others") or {}).items():  # the subject's counterparts
        for message, ends in by_message.items():
            for end in ends:
                result.hops.append(_hop(role, end["service"], message, end["evidence_ref"]))
    seen: set[str] = set()
    for hop in result.hops:
        if hop["from"] not in seen:
            seen.add(hop["from"])
            service = next(f["service"] for f in known if f["service"]["ceid"] == hop["from"])
            result.hits.append(Hit(service["ceid"], str(service.get("name") or ""), "Service",
                                   str(hop["to"]), 1.0 / len(seen)))
    return result


async def _fact(ctx: SearchContext, known: list[dict[str, Any]]) -> dict[str, Any] | None:
    named = named_messages(ctx.query, known)
    if named:
        return {"messages": [{"name": m, "publishers": _ends(known, "publishes", m),
                              "consumers": _ends(known, "consumes", m)} for m in named]}
    services = [s for s in ctx.seeds if s["label"] == "Service"]
    if services:
        mine = [f for f in known if f["service"]["ceid"] == services[0]["ceid"]]
        if not mine:
            return None
        return {"subject": services[0], "services": mine,
                "others": {role: {m: _ends(known, other, m) for m in mine[0][role]}
                           for role, other in (("publishes", "consumes"),
                                               ("consumes", "publishes"))}}
    brokers = [s for s in ctx.seeds if s["label"] == "Infrastructure"]
    if not brokers:
        return None
    query = direct.DependencyQuery(depth=1, direction="in", types=("CALLS", "DEPENDS_ON"),
                                   min_weight=0.0, limit=direct.MAX_RESULTS).validate()
    rows, _ = await direct.dependencies(ctx.reader, ctx.scope, brokers[0], query)
    users = {str(r["target"]["ceid"]) for r in rows}
    using = [f for f in known if f["service"]["ceid"] in users]
    return {"broker": brokers[0], "services": using} if using else None
