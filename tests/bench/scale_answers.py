"""Are the answers right at size? ``bench_scale`` asks UC-01 (what does S depend on), UC-02
(who owns S) and UC-07 (who calls S directly) through ``/search`` about services drawn at
random, and compares each answer with the generated organisation itself: the generator is
the source, so the gold answers do not come from the product.

An answer is right when it names every expected entity (a team by its handle, a developer or
a service by its name), or, when more than ``LISTED`` are expected, at least ``LISTED`` of
them (the answers list that many and say how many more there are)."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from typing import Any

import httpx

from substrate.scale.generator import Org

LISTED = 10
DEPENDS = ("CALLS", "DEPENDS_ON")
OWNS = ("OWNS", "PRIMARY_OWNER")


def truths(org: Org) -> dict[str, dict[str, set[str]]]:
    """use case -> service ceid -> the names its answer must give."""
    shown = {n.ceid: str(n.props.get("handle") or n.props.get("name") or n.ceid)
             for n in org.nodes()}
    out: dict[str, dict[str, set[str]]] = {uc: defaultdict(set)
                                           for uc in ("RSN-UC-01", "RSN-UC-02", "RSN-UC-07")}
    for e in org.edges():
        if e.type in DEPENDS:
            out["RSN-UC-01"][e.src].add(shown[e.dst])
            if e.src.startswith("service:"):
                out["RSN-UC-07"][e.dst].add(shown[e.src])
        elif e.type in OWNS:
            out["RSN-UC-02"][e.dst].add(shown[e.src])
    return out


def question(use_case: str, name: str) -> str:
    return {"RSN-UC-01": f"What does {name} depend on?",
            "RSN-UC-02": f"Who owns the {name} service?",
            "RSN-UC-07": f"Find all services calling {name} directly"}[use_case]


def named(answer: str, expected: set[str]) -> set[str]:
    """The expected names ``answer`` gives as whole names (not inside a longer one)."""
    return {x for x in expected
            if re.search(r"(?<![\w/-])" + re.escape(x) + r"(?![\w-])", answer)}


def check(client: httpx.Client, org: Org, per_use_case: int, seed: int) -> dict[str, Any]:
    """Ask each use case about ``per_use_case`` random services that have an answer."""
    rng = random.Random(seed)
    gold = truths(org)
    names = {n.ceid: str(n.props.get("name")) for n in org.nodes() if n.label == "Service"}
    out: dict[str, Any] = {"per_use_case": {}, "misses": []}
    for uc, by_service in gold.items():
        services = sorted(s for s in by_service if s in names)
        right = 0
        for ceid in rng.sample(services, min(per_use_case, len(services))):
            expected = by_service[ceid]
            q = question(uc, names[ceid])
            response = client.post("/search", json={"query": q})
            answer = str(response.json().get("answer") or "") if response.status_code == 200 \
                else ""
            found = named(answer, expected)
            if len(found) >= min(len(expected), LISTED):
                right += 1
            else:
                out["misses"].append({"use_case": uc, "question": q, "status":
                                      response.status_code, "expected": sorted(expected)[:20],
                                      "found": len(found), "answer": answer[:300]})
        out["per_use_case"][uc] = {"asked": min(per_use_case, len(services)), "right": right}
    return out
