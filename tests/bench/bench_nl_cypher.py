"""NL→Cypher execution accuracy and latency (RSN-01: p95 < 1 s including execution) of the
embedded translator over ``tests/questions/*.jsonl`` (expected rows written by reading the
graphs' sources). Needs the stack with the demo loaded (``substrate up``)."""

from __future__ import annotations

import asyncio
import statistics

from substrate.retrieval.scope import ReadScope
from substrate.services import open_services
from substrate.settings import Settings
from tests.support.nl_questions import Outcome, evaluate, load

ROUNDS = 3


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run() -> list[Outcome]:
    settings = Settings.from_env()
    services = open_services(settings)
    scope = ReadScope("acme", 2**53 - 2, ("public", "internal"), False)
    items = load()
    outcomes: list[Outcome] = []
    try:
        for _ in range(ROUNDS):
            outcomes = [await evaluate(services, scope, item) for item in items]
            latencies = [o.ms for o in outcomes]
    finally:
        await services.aclose()
    print(f"latency ms over {len(latencies)} questions (last of {ROUNDS} rounds): "
          f"p50 {statistics.median(latencies):.0f}, p95 {_pct(latencies, 0.95):.0f}, "
          f"max {max(latencies):.0f}")
    return outcomes


def main() -> None:
    outcomes = asyncio.run(_run())
    for group, keep in (("all", lambda o: True), ("use-case shapes", lambda o: o.use_case),
                        ("other shapes", lambda o: not o.use_case)):
        chosen = [o for o in outcomes if keep(o)]
        claimed = [o for o in chosen if o.status != "abstained"]
        right = sum(o.status == "right" for o in claimed)
        wrong = sum(o.status == "wrong" for o in claimed)
        print(f"{group}: {len(chosen)} questions, answered {len(claimed)}, right {right} "
              f"({100 * right / max(1, len(claimed)):.0f}% of claimed, "
              f"{100 * right / max(1, len(chosen)):.0f}% of all), wrong {wrong}")
    for o in outcomes:
        if o.status != "right":
            print(f"  {o.status}: {o.qid} {o.question!r}: got {o.got} expected {o.expected}")


if __name__ == "__main__":
    main()
