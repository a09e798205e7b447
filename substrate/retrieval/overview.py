""""What are the main components of this system?", "what is the architecture?": an overview
composed from the graph itself (no community summaries, no model): what the repository's
README says it is, the services with what their READMEs and build files say, the datastores
and other infrastructure, who calls or uses whom, and what is depended on most; every part
cited at the line that states it."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.registry import register
from substrate.retrieval.router import Intent

MAX_ELEMENTS = 500
_ASKS = re.compile(
    r"\barchitecture\b(?!\s+decisions?\b)|\boverview\b|\bbig\s+picture\b"
    r"|\b(?:components|building\s+blocks|parts|pieces|services)\s+(?:of|in|make\s+up)\s+"
    r"(?:the|this|our)\s+(?:system|application|app|platform|product)\b"
    r"|\bconsists?\s+of\b|\bmade\s+(?:up\s+)?of\b|\bhow\s+is\s+.+\s+(?:structured|built|organi[sz]ed)\b"
    r"|\bhow\s+(?:do|does)\s+(?:the\s+)?(?:services|components|parts)\s+(?:fit|connect|work)"
    r"|\bmain\s+(?:components|services|parts|building\s+blocks|modules)\b"
    # "what are the modules and what does each do?", "what are the components?"
    r"|\bwhat\s+(?:are|is)\s+(?:the|our|its)\s+(?:modules|components)\b"
    r"|\b(?:modules|components)\s+(?:of|in)\s+(?:the|this|our)\s+(?:system|repo(?:sitory)?"
    r"|application|app|platform|product|project)\b"
    # "what is this repository for?", "what does this project do?", "describe this repo"
    r"|\bwhat\s+(?:is|does)\s+(?:this|the|our)\s+(?:repo(?:sitory)?|project|codebase|system"
    r"|platform)\s+(?:for|about|do|contain)\b|\bdescribe\s+(?:this|the|our)\s+(?:repo(?:sitory)?"
    r"|project|codebase|system|platform)\b"
    # "what is our tech stack?", "which technologies do we use?": what each element is built on
    r"|\btech(?:nology)?\s+stack\b|\b(?:what|which)\s+technologies\b", re.I)
_NOT = re.compile(r"\brisks?\b|\bwhy\b|\bwhen\b", re.I)


def asks_overview(question: str) -> bool:
    """A question for the system as a whole (not a risk, a rationale or a date)."""
    return _ASKS.search(question) is not None and _NOT.search(question) is None


def _short(text: str | None, width: int = 90) -> str:
    text = " ".join(str(text or "").split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return first if len(first) <= width else first[: width - 1].rstrip() + "…"


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The overview's facts: services, infrastructure, modules of code no deployment names,
    each element's outgoing edges (one per other end) and how many depend on each."""
    services: list[dict[str, Any]] = []
    infra: list[dict[str, Any]] = []
    modules: list[dict[str, Any]] = []
    projects: list[dict[str, Any]] = []  # the repositories, named by their README's title
    links: list[dict[str, Any]] = []
    fan_in: Counter[str] = Counter()
    for row in rows:
        entity = row["entity"]
        element = {"entity": entity, "language": row.get("language"),
                   "summary": _short(row.get("description")), "kind": row.get("kind"),
                   "image": row.get("image"),
                   "description_ref": (str(row["description_ref"]).rsplit("|", 1)[-1]
                                       if row.get("description_ref") else None)}
        if entity["label"] == "Repository":
            titles = [str(a) for a in row.get("aliases") or []]
            if row.get("description"):  # what its README says it is
                projects.append({**element, "title": titles[0] if titles else None,
                                 "summary": " ".join(str(row["description"]).split())})
            continue
        {"Service": services, "Module": modules}.get(entity["label"], infra).append(element)
        seen: set[str] = set()
        for edge in row.get("out") or []:
            to = edge["to"]["ceid"]
            if to in seen or to == entity["ceid"]:
                continue
            seen.add(to)
            fan_in[to] += 1
            links.append({"from": entity, "to": edge["to"], "hop": edge["hop"]})
    return {"projects": projects, "services": services, "infrastructure": infra,
            "modules": modules, "links": links, "fan_in": dict(fan_in)}


async def system_overview(ctx: SearchContext) -> StrategyResult:
    result = StrategyResult("system_overview")
    if not asks_overview(ctx.query):
        result.note = "not a question about the system as a whole"
        return result
    rows = await ctx.reader.plain_rows("retrieval/system_overview", ctx.scope,
                                       limit=MAX_ELEMENTS)
    fact = summarise(rows)
    fact["truncated"] = result.truncated = len(rows) >= MAX_ELEMENTS
    most = sorted(fact["fan_in"].items(), key=lambda x: (-x[1], x[0]))
    names = {e["entity"]["ceid"]: e["entity"] for e in fact["services"] + fact["infrastructure"]}
    for rank, (ceid, _) in enumerate(most[:10]):
        entity = names.get(ceid, {"ceid": ceid, "name": ceid, "label": "Entity"})
        result.hits.append(Hit(ceid, str(entity.get("name")), str(entity.get("label")),
                               "depended on", 1.0 / (1 + rank)))
    result.hops = [{**link["hop"], "hop": 1} for link in fact["links"]]
    result.facts.append(fact)
    return result


register("system_overview", system_overview, Intent.STRATEGIC_RISKS, Intent.FREE_TEXT)
