"""The real graph reader, noting the templates it runs (to count a request's Neo4j reads)."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import ReadScope


class Recorder(GraphReader):
    """The real reader, noting the templates it ran (``rows`` and ``plain_rows``)."""

    def __init__(self, reader: GraphReader) -> None:
        super().__init__(reader.driver, reader.cypher)
        self.bookmarks = reader.bookmarks
        self.ran: list[str] = []

    async def rows(self, template_name: str, scope: ReadScope, ctx: dict[str, Any] | None = None,
                   **params: Any) -> list[dict[str, Any]]:
        self.ran.append(template_name)
        return await super().rows(template_name, scope, ctx, **params)

    async def plain_rows(self, template_name: str, scope: ReadScope,
                         ctx: dict[str, Any] | None = None, **params: Any,
                         ) -> list[dict[str, Any]]:
        self.ran.append(template_name)
        return await super().plain_rows(template_name, scope, ctx, **params)
