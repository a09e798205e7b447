"""Run Cypher templates for reads: scope parameters always added, routed as reads."""

from __future__ import annotations

from typing import Any

from neo4j import AsyncDriver

from substrate.cypher import CypherLibrary
from substrate.retrieval.scope import ReadScope


class GraphReader:
    def __init__(self, driver: AsyncDriver, cypher: CypherLibrary) -> None:
        self.driver = driver
        self.cypher = cypher

    async def rows(self, template_name: str, scope: ReadScope, ctx: dict[str, Any] | None = None,
                   **params: Any) -> list[dict[str, Any]]:
        template = self.cypher.get(template_name)
        query = template.render(**(ctx or {}))
        records, _, _ = await self.driver.execute_query(
            query, {**scope.params(), **params}, routing_="r"
        )
        return [r.data() for r in records]
