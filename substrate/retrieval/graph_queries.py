"""Run Cypher templates for reads: scope parameters always added, routed as reads."""

from __future__ import annotations

from typing import Any

from neo4j import AsyncDriver, Record

from substrate.cypher import CypherLibrary
from substrate.observability.metrics import CYPHER_SECONDS
from substrate.observability.tracing import NEO4J, TRACER
from substrate.retrieval.bookmarks import ReadBookmarks, ReadSessions
from substrate.retrieval.cypher_run import FETCH_SIZE
from substrate.retrieval.plan_keeper import PlanKeeper
from substrate.retrieval.scope import ReadScope


class GraphReader:
    def __init__(self, driver: AsyncDriver, cypher: CypherLibrary,
                 plan_keep_seconds: float = 0.0) -> None:
        self.driver = driver
        self.cypher = cypher
        # the recent reads, their plans run again in the background (a long-lived gateway)
        self.plans = PlanKeeper(driver, plan_keep_seconds)
        self.bookmarks = ReadBookmarks()  # a scope's snapshot bookmarks, when it has them
        # POST /cypher's and the NL->Cypher strategy's reads (cypher_run.bounded_read)
        self.cypher_sessions = ReadSessions(fetch_size=FETCH_SIZE)

    async def aclose(self) -> None:
        """Stop the plan keeper; close the read sessions kept between reads."""
        await self.plans.stop()
        await self.bookmarks.sessions.aclose()
        await self.cypher_sessions.aclose()

    async def rows(self, template_name: str, scope: ReadScope, ctx: dict[str, Any] | None = None,
                   **params: Any) -> list[dict[str, Any]]:
        return [r.data() for r in await self.records(template_name, scope, ctx, **params)]

    async def plain_rows(self, template_name: str, scope: ReadScope,
                         ctx: dict[str, Any] | None = None, **params: Any
                         ) -> list[dict[str, Any]]:
        """``rows`` of a template that returns maps and values only (no nodes, relationships
        or paths, which ``Record.data`` would turn into maps): the records as they came."""
        return [dict(zip(r.keys(), r, strict=True))
                for r in await self.records(template_name, scope, ctx, **params)]

    async def records(self, template_name: str, scope: ReadScope,
                      ctx: dict[str, Any] | None = None, **params: Any) -> list[Record]:
        template = self.cypher.get(template_name)
        query = template.render(**(ctx or {}))
        with TRACER.start_as_current_span(f"cypher {template_name}", attributes={
                **NEO4J, "db.operation.name": template_name,
                "substrate.template_version": template.version}) as span, \
                CYPHER_SECONDS.labels(template_name).time():
            values = {**scope.params(), **params}
            records = await self.bookmarks.execute(self.driver, query, values, scope.bookmarks)
            self.plans.seen(query, values)
            span.set_attribute("db.response.returned_rows", len(records))
        return records
