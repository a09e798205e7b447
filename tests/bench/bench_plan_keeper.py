"""What the plan keeper spares a request (issue 12): the direct endpoints' reads on the demo
tenant, each read once so that the keeper knows it, then ``ROUNDS`` times:

* ``cold``: Neo4j's query caches cleared (``db.clearQueryCaches()``, as a restart of Neo4j or
  a stale plan leaves them for that query), then the read, timed;
* ``kept``: the caches cleared, one :meth:`PlanKeeper.refresh`, then the read, timed;
* ``warm``: the read again at once (its plan cached), timed.

In-process (``GraphReader`` on the async driver, as the gateway reads), against the running
stack. Writes ``$SUBSTRATE_HOME/bench/plan_keeper.json`` and prints a line per template.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from substrate.retrieval.graph_queries import GraphReader
from substrate.retrieval.scope import resolve_scope
from substrate.services import open_services
from substrate.settings import Settings
from tests.bench.bench_endpoints import DIRECT, TENANT

ROUNDS = 3


async def _clear(reader: GraphReader) -> None:
    async with reader.driver.session() as session:
        await (await session.run("CALL db.clearQueryCaches()")).consume()


async def _timed_read(reader: GraphReader, template: str, scope: Any, ctx: dict[str, Any],
                      params: dict[str, Any]) -> float:
    started = time.perf_counter()
    await reader.rows(template, scope, ctx, **params)
    return (time.perf_counter() - started) * 1000


async def measure(settings: Settings) -> list[dict[str, Any]]:
    services = open_services(settings, check_templates=False)
    try:
        reader = GraphReader(services.async_driver, services.cypher, 0.0)
        scope = await resolve_scope(settings, TENANT)
        out = []
        for path, template, ctx, params, _, _ in DIRECT:
            await reader.rows(template, scope, ctx, **params)  # the keeper knows it now
            cold, kept, warm, refresh = [], [], [], []
            for _ in range(ROUNDS):
                await _clear(reader)
                cold.append(await _timed_read(reader, template, scope, ctx, params))
                await _clear(reader)
                started = time.perf_counter()
                await reader.plans.refresh()
                refresh.append((time.perf_counter() - started) * 1000)
                kept.append(await _timed_read(reader, template, scope, ctx, params))
                warm.append(await _timed_read(reader, template, scope, ctx, params))
            out.append({"endpoint": path.split("?")[0], "template": template,
                        "cold_ms": round(statistics.median(cold), 1),
                        "kept_ms": round(statistics.median(kept), 1),
                        "warm_ms": round(statistics.median(warm), 1),
                        "refresh_round_ms": round(statistics.median(refresh), 1),
                        "queries_kept": len(reader.plans.remembered())})
            await reader.aclose()
            reader = GraphReader(services.async_driver, services.cypher, 0.0)
        return out
    finally:
        await services.aclose()


def main() -> None:
    settings = Settings.from_env()
    rows = asyncio.run(measure(settings))
    out = settings.home / "bench" / "plan_keeper.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "plan_keeper", "tenant": TENANT, "rounds": ROUNDS,
                               "templates": rows,
                               "measured_at": datetime.now(UTC).isoformat(timespec="seconds")},
                              indent=2))
    for r in rows:
        print(f"{r['endpoint']:14s} {r['template']:30s} first read after the caches were "
              f"cleared {r['cold_ms']:7.1f} ms; after a keeper round {r['kept_ms']:6.1f} ms "
              f"(the round {r['refresh_round_ms']:.1f} ms); cached {r['warm_ms']:.1f} ms")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
