"""A :class:`Plan` → parameterised Cypher, rendered from ``cypher/nl/select.cypher.j2``."""

from __future__ import annotations

from typing import Any

from substrate.cypher import CypherLibrary
from substrate.retrieval.nl_cypher.plan import Plan


def to_cypher(library: CypherLibrary, plan: Plan) -> tuple[str, dict[str, Any]]:
    text = library.get("nl/select").render(**plan.context())
    return text.strip(), dict(plan.params)
