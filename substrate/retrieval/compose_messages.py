"""The answer to a messages question (``strategies_messages``): who publishes and who
consumes, each service cited at the line of its code that sends or subscribes."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.composers import Citations, listing, name

SOURCE = "as the services' code says"


def _cite(cites: Citations, role: str, service: dict[str, Any], message: str, ref: str) -> str:
    return cites.cite({"evidence_ref": ref, "type": role.upper(), "from": service.get("ceid"),
                       "to": message, "source": "git"}) if ref else ""


def _ends(cites: Citations, role: str, message: str, ends: list[dict[str, Any]]) -> str:
    return listing((name(e["service"])
                    + _cite(cites, role, e["service"], message, e["evidence_ref"])
                    for e in ends), "")


def message_flows(fact: dict[str, Any], cites: Citations) -> str:
    if "messages" in fact:
        return " ".join(_message(m, cites) for m in fact["messages"])
    if "subject" in fact:
        return _service(fact, cites)
    return _broker(fact, cites)


def _message(entry: dict[str, Any], cites: Citations) -> str:
    message = entry["name"]
    published = _ends(cites, "publishes", message, entry["publishers"])
    consumed = _ends(cites, "consumes", message, entry["consumers"])
    if published and consumed:
        return f"{message} is published by {published} and consumed by {consumed} ({SOURCE})."
    if published:
        return (f"{message} is published by {published} ({SOURCE}); no service's code "
                "consuming it is recorded.")
    return (f"{message} is consumed by {consumed} ({SOURCE}); no service's code publishing it "
            "is recorded.")


def _service(fact: dict[str, Any], cites: Citations) -> str:
    subject = fact["subject"]
    mine = fact["services"][0]
    parts = []
    for role, other, verb in (("publishes", "consumes", "consumed by"),
                              ("consumes", "publishes", "published by")):  # who else, each
        items = []
        for message, ref in mine[role].items():
            own = _cite(cites, role, subject, message, ref)
            ends = (fact.get("others") or {}).get(role, {}).get(message) or []
            by = _ends(cites, other, message, ends)
            items.append(f"{message}{own}" + (f" ({verb} {by})" if by else ""))
        if items:
            parts.append(f"{role} {'; '.join(items)}")
    return f"{name(subject)} {' and '.join(parts)} ({SOURCE})."


def _broker(fact: dict[str, Any], cites: Citations) -> str:
    items = []
    for f in fact["services"]:
        said = []
        for role in ("publishes", "consumes"):
            messages = [f"{m}{_cite(cites, role, f['service'], m, ref)}"
                        for m, ref in f[role].items()]
            if messages:
                said.append(f"{role} {', '.join(messages)}")
        items.append(f"{name(f['service'])} {' and '.join(said)}")
    return (f"Of the services using {name(fact['broker'])}, {SOURCE}: " + "; ".join(items)
            + ".")
