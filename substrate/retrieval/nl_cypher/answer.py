"""Answers composed from the NL→Cypher rows (no model): a list, a count or a ranking, each
returned element with the citations of the edges that put it in the answer."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.answer import Citation, Citations
from substrate.retrieval.nl_cypher import rows as row_tools

MAX_LISTED = 25


def _name(e: dict[str, Any]) -> str:
    return str(e.get("name") or e["ceid"])


def compose(fact: dict[str, Any]) -> tuple[str, list[Citation]]:
    cites = Citations()
    columns, rows = fact["columns"], fact["rows"]
    by_entity: dict[str, str] = {}
    for hop in row_tools.evidence(columns, rows):
        ref = cites.cite(hop)
        for end in (str(hop["from"]), str(hop["to"])):
            if ref not in by_entity.get(end, ""):
                by_entity[end] = by_entity.get(end, "") + ref
    mode = fact.get("mode")
    if not rows:  # never "Ranked: ." or "."
        return ("Nothing matched: the translated query ran and returned no rows."), cites.items
    if mode == "count" and rows and columns[:1] == ["count"]:  # count, members (ceids), names
        ceids = rows[0][1] if len(rows[0]) > 1 else []
        members = rows[0][2] if len(rows[0]) > 2 else ceids
        listed = ", ".join(f"{m}{by_entity.get(str(c), '')}"  # each cited where defined
                           for m, c in zip(members[:MAX_LISTED], ceids, strict=False))
        more = " …" if len(members) > MAX_LISTED else ""
        return f"{rows[0][0]}" + (f": {listed}{more}." if members else "."), cites.items
    found = row_tools.entities(columns, rows)
    if mode == "rank":
        parts = [f"{_name(r[0])} ({r[1]})" for r in rows[:MAX_LISTED]]
        return "Ranked: " + "; ".join(parts) + ".", cites.items
    if found:
        parts = [f"{_name(e)}{by_entity.get(e['ceid'], '')}" for e in found[:MAX_LISTED]]
        more = f" and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
        return f"{len(found)} result(s): " + ", ".join(parts) + more + ".", cites.items
    scalars = [", ".join(f"{c}={v}" for c, v in zip(columns, r, strict=False))
               for r in rows[:MAX_LISTED]]
    return "; ".join(scalars) + ".", cites.items
