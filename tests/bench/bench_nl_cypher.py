"""NL→Cypher execution accuracy and latency (RSN-01: p95 < 1 s including execution) of the
embedded translator over ``tests/questions/*.jsonl`` (expected rows written by reading the
graphs' sources, not by running the translator): the demo organisation (tenant ``acme``, needs
``substrate up``) and devset repositories, each replayed with its first-parent history into a
fresh tenant (no embedder: the graph is what is queried) and deleted after.

Reports, per dataset and overall, per shape group (the eight use-case shapes RSN-UC-01..08 vs
the others): questions, answered (not abstained), right, wrong, accuracy of claimed and of all;
latency p50/p95 (last of ``ROUNDS`` rounds); and the confidence each answer would carry in
``/search`` (``nl_cypher.assumptions.confidence``): wrong answers at or above ``HIGH`` (0.7,
the issue's target is none) and a table of confidence band vs right/wrong.
``BENCH_NL_DATASETS=demo,retail`` narrows it.
Writes ``$SUBSTRATE_HOME/bench/nl_cypher.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from substrate.retrieval.nl_cypher.assumptions import HIGH
from substrate.retrieval.scope import ReadScope
from substrate.services import open_services
from substrate.settings import Settings
from tests.bench.stats import percentile
from tests.support.nl_questions import Outcome, evaluate, load

ROUNDS = 3
# dataset -> (question file, devset repository replayed into a tenant, or None: the demo)
DATASETS: dict[str, tuple[str, str | None]] = {
    "demo": ("demo_acme.jsonl", None),
    "retail": ("devset_retail.jsonl", "retail-store-sample-app"),
    "boa": ("devset_boa.jsonl", "bank-of-anthos"),
    "fac": ("devset_fac.jsonl", "fac"),
    "mgg": ("devset_mgg.jsonl", "manage.get.gov"),
}
GROUPS: tuple[tuple[str, Callable[[Outcome], bool]], ...] = (
    ("all", lambda o: True), ("use-case shapes", lambda o: o.use_case),
    ("other shapes", lambda o: not o.use_case))


def _pct(values: list[float], q: float) -> float:
    return percentile(values, q) if values else 0.0


def replay_devset(settings: Settings, repo_name: str) -> str:
    """The repository's first-parent history replayed into a fresh tenant (its name)."""
    from substrate.connectors.git_ingest import ingest_git
    from substrate.db import neo4j_driver
    from substrate.graph.writer import GraphWriter
    from tests.support.devset_qa import clone

    repo = clone(repo_name, settings.home / "bench" / "devset")
    tenant = f"t-nl-{repo_name.replace('.', '-')}-{secrets.token_hex(3)}"
    driver = neo4j_driver(settings)
    try:
        ingest_git(GraphWriter(settings, driver, None), repo, history=True, tenant=tenant,
                   progress=lambda _m: None)
    finally:
        driver.close()
    return tenant


def drop_tenant(settings: Settings, tenant: str) -> None:
    from substrate.db import neo4j_driver
    from tests.bench.bench_ingest import delete_tenant

    driver = neo4j_driver(settings)
    try:
        delete_tenant(settings, driver, tenant)
    finally:
        driver.close()


async def _evaluate(settings: Settings, tenant: str, items: list[dict[str, Any]]
                    ) -> list[Outcome]:
    services = open_services(settings)
    scope = ReadScope(tenant, 2**53 - 2, ("public", "internal"), False)
    outcomes: list[Outcome] = []
    try:
        for _ in range(ROUNDS):
            outcomes = [await evaluate(services, scope, item) for item in items]
    finally:
        await services.aclose()
    return outcomes


def run_dataset(settings: Settings, name: str) -> list[Outcome]:
    filename, repo = DATASETS[name]
    items = load(filename)
    tenant = "acme" if repo is None else replay_devset(settings, repo)
    try:
        return asyncio.run(_evaluate(settings, tenant, items))
    finally:
        if repo is not None:
            drop_tenant(settings, tenant)


def figures(outcomes: list[Outcome]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group, keep in GROUPS:
        chosen = [o for o in outcomes if keep(o)]
        claimed = [o for o in chosen if o.status != "abstained"]
        right = sum(o.status == "right" for o in claimed)
        ms = [o.ms for o in chosen]
        out[group] = {"questions": len(chosen), "answered": len(claimed), "right": right,
                      "wrong": sum(o.status == "wrong" for o in claimed),
                      "accuracy_of_claimed": round(right / max(1, len(claimed)), 3),
                      "accuracy_of_all": round(right / max(1, len(chosen)), 3),
                      "p50_ms": round(statistics.median(ms), 1) if ms else 0.0,
                      "p95_ms": round(_pct(ms, 0.95), 1)}
    return out


BANDS = ((0.0, 0.5), (0.5, HIGH), (HIGH, 1.01))


def _band(low: float, high: float) -> str:
    return f"[{low:.1f}, {min(high, 1.0):.1f}{']' if high > 1 else ')'}"


def confidence_figures(outcomes: list[Outcome]) -> dict[str, Any]:
    """Wrong answers with high confidence, and right/wrong per confidence band (answered only)."""
    claimed = [o for o in outcomes if o.status != "abstained"]
    table = {_band(lo, hi): {s: sum(o.status == s for o in claimed if lo <= o.confidence < hi)
                             for s in ("right", "wrong")} for lo, hi in BANDS}
    return {"high": HIGH, "wrong_high_confidence": sum(o.status == "wrong"
                                                       and o.confidence >= HIGH for o in claimed),
            "right_high_confidence": sum(o.status == "right" and o.confidence >= HIGH
                                         for o in claimed),
            "bands": table}


def _conf_line(label: str, c: dict[str, Any]) -> str:
    bands = "; ".join(f"{b} right {v['right']} wrong {v['wrong']}" for b, v in c["bands"].items())
    return (f"{label}: wrong with confidence >= {c['high']}: {c['wrong_high_confidence']} "
            f"(right with it: {c['right_high_confidence']}); {bands}")


def _line(label: str, f: dict[str, Any]) -> str:
    return (f"{label}: {f['questions']} questions, answered {f['answered']}, right {f['right']} "
            f"({100 * f['accuracy_of_claimed']:.0f}% of claimed, "
            f"{100 * f['accuracy_of_all']:.0f}% of all), wrong {f['wrong']}; "
            f"p50 {f['p50_ms']:.0f} ms, p95 {f['p95_ms']:.0f} ms")


def main() -> None:
    settings = Settings.from_env()
    wanted = [d for d in os.environ.get("BENCH_NL_DATASETS", ",".join(DATASETS)).split(",")
              if d]
    per: dict[str, list[Outcome]] = {name: run_dataset(settings, name) for name in wanted}
    report: dict[str, Any] = {"benchmark": "nl_cypher", "rounds": ROUNDS, "datasets": {}}
    for name, outcomes in per.items():
        report["datasets"][name] = figures(outcomes) | {"confidence":
                                                         confidence_figures(outcomes)}
        for group, _ in GROUPS:
            print(_line(f"{name} / {group}", report["datasets"][name][group]))
        print(_conf_line(f"{name} / confidence", report["datasets"][name]["confidence"]))
    everything = [o for outcomes in per.values() for o in outcomes]
    report["overall"] = figures(everything) | {"confidence": confidence_figures(everything)}
    for group, _ in GROUPS:
        print(_line(f"overall / {group}", report["overall"][group]))
    print(_conf_line("overall / confidence", report["overall"]["confidence"]))
    report["misses"] = [{"dataset": n, "id": o.qid, "q": o.question, "status": o.status,
                         "got": o.got, "expected": o.expected, "confidence": o.confidence,
                         "assumptions": list(o.assumptions)}
                        for n, outcomes in per.items() for o in outcomes if o.status != "right"]
    for miss in report["misses"]:
        print(f"  {miss['status']}: {miss['dataset']} {miss['id']} {miss['q']!r}: "
              f"got {miss['got']} expected {miss['expected']} "
              f"(confidence {miss['confidence']})")
    report |= {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "load_average_1m": round(os.getloadavg()[0], 2)}
    out = Path(settings.home) / "bench" / "nl_cypher.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
