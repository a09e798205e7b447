"""Counterfactual overhead on UC-01 and UC-05: the same /search with and without
``options.counterfactual`` at several budgets, uncached (the entry a response names is deleted
after it, as in bench_endpoints), p50/p95 over HTTP; and the largest budget that keeps the p50
under 2x the plain request.

Run: ``.substrate/venv/bin/python -m tests.bench.bench_counterfactual``; needs ``substrate up``.
Writes ``$SUBSTRATE_HOME/bench/counterfactual.json`` and prints the figures.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from substrate.retrieval.ask import api_key
from substrate.settings import Settings
from tests.bench.bench_endpoints import TENANT, CacheGuard, percentiles, timed_requests

QUESTIONS = (
    ("RSN-UC-01", "What does PaymentService depend on?"),
    ("RSN-UC-05", "Why was the decision made to authorise payments asynchronously?"),
)
BUDGETS = (4, 16, 64, 256)


def run() -> dict[str, Any]:
    settings = Settings.from_env()
    guard = CacheGuard(settings)
    headers = {"x-tenant": TENANT}
    key = api_key(settings)
    if key:
        headers["authorization"] = f"Bearer {key}"
    base = f"http://{settings.gateway_host}:{settings.gateway_port}"
    rows = []
    with httpx.Client(base_url=base, timeout=120, headers=headers) as client:
        for uc, question in QUESTIONS:
            def ask(cf: Any, q: str = question) -> httpx.Response:
                return client.post("/search", json={"query": q,
                                                    "options": {"counterfactual": cf}})
            plain = percentiles(timed_requests(lambda: ask(None), guard))
            row: dict[str, Any] = {"use_case": uc, "question": question, "plain": plain,
                                   "budgets": []}
            for budget in BUDGETS:
                sample = ask({"budget": budget}).json()
                lat = percentiles(timed_requests(lambda b=budget: ask({"budget": b}), guard))  # type: ignore[misc]
                cf = sample["counterfactual"]
                row["budgets"].append({
                    "budget": budget, "latency": lat,
                    "ratio_p50": round(lat["p50_ms"] / plain["p50_ms"], 2),
                    "recomputations": cf["recomputations"], "truncated": cf["truncated"],
                    "evidence_items": len(cf["evidence_removal"])})
            under = [b["budget"] for b in row["budgets"] if b["ratio_p50"] < 2.0]
            row["largest_budget_under_2x"] = max(under) if under else None
            rows.append(row)
    return {"benchmark": "counterfactual_overhead", "tenant": TENANT, "rows": rows,
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds")}


def main(argv: list[str] | None = None) -> None:
    figures = run()
    out = Settings.from_env().home / "bench" / "counterfactual.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    for row in figures["rows"]:
        print(f"{row['use_case']} plain p50 {row['plain']['p50_ms']} ms p95 "
              f"{row['plain']['p95_ms']} ms  | largest budget under 2x: "
              f"{row['largest_budget_under_2x']}")
        for b in row["budgets"]:
            print(f"   budget {b['budget']:>3}: p50 {b['latency']['p50_ms']:>7} ms  p95 "
                  f"{b['latency']['p95_ms']:>7} ms  x{b['ratio_p50']}  "
                  f"({b['recomputations']} recomputations of {b['evidence_items']} evidence, "
                  f"truncated {b['truncated']})")
    print(f"-> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
