"""The plan keeper against Neo4j (issue 12): a refresh runs the gateway's recent reads again
for a tenant that holds nothing, so that their plans are in Neo4j's query cache before the
next request needs them; a read that fails without its tenant is forgotten."""

from __future__ import annotations

import asyncio
import uuid

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings


def test_a_refresh_puts_the_recent_reads_plans_back_and_forgets_a_failing_read(
        stack: Settings) -> None:
    services = open_services(stack, check_templates=False)
    marker = uuid.uuid4().hex  # a query text no other client runs

    async def scenario() -> tuple[list[str], int, int, list[str]]:
        try:
            return await steps()
        finally:
            await services.aclose()

    async def steps() -> tuple[list[str], int, int, list[str]]:
        reader = GraphReader(services.async_driver, services.cypher, 30.0)
        scope = await resolve_scope(stack, stack.tenant)
        assert await reader.rows("retrieval/entity_names", scope, limit=5)
        own = f"// plan keeper test {marker}\nMATCH (s:Service {{tenant_id: $tenant}}) " \
              "RETURN count(s) AS n"
        reader.plans.seen(own, {"tenant": stack.tenant})
        reader.plans.seen("RETURN 1 / $zero AS x", {"tenant": stack.tenant, "zero": 0})
        async with services.async_driver.session() as session:
            await (await session.run("CALL db.clearQueryCaches()")).consume()
        ran = await reader.plans.refresh()
        async with services.async_driver.session() as session:
            result = await session.run("CALL db.clearQueryCaches()")
            message = [r["value"] async for r in result]
        remembered = [q for q, _ in reader.plans.remembered()]
        await reader.aclose()
        return message, ran, reader.plans.stats.forgotten, remembered

    message, ran, forgotten, remembered = asyncio.run(scenario())
    assert ran == 2 and forgotten == 1  # the template and our query ran; 1 / 0 failed
    assert "RETURN 1 / $zero AS x" not in remembered and len(remembered) == 2
    # the cache held the refreshed plans again (other clients may add theirs: at least 2)
    count = int(message[0].split(" of ")[1].split()[0]) if " of " in message[0] else 0
    assert count >= 2, message
