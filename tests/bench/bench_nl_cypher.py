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

When the ``cypher`` model role is configured (``MODEL_CYPHER_URL``, or the ``explain`` role /
``CHAT_URL`` it falls back to: ``substrate.llm.roles.role_config``), the same questions also go
through the ``nl_cypher`` strategy with the model forced (``NL_CYPHER_TRANSLATOR=model``:
Text2Cypher prompt, guard, scope, EXPLAIN, one repair; ``MODEL_ROUNDS`` round, the endpoint's
time included) and are scored the same way, beside the embedded translator; when it is not
configured the bench says so.

RSN-01 end to end: each demo question is also asked through ``POST /search`` of the running
gateway (tenant ``acme``; the query cache kept out as in ``bench_endpoints``: the entry a
response names is deleted); for those the embedded translator answered, ``SEARCH_REPEATS``
timed requests each give p50/p95 of the whole read path (HTTP, auth, router, strategies,
fusion, answer, evidence bundle).
Writes ``$SUBSTRATE_HOME/bench/nl_cypher.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from substrate.llm.roles import RoleConfig, role_config
from substrate.retrieval.ask import api_key
from substrate.retrieval.nl_cypher.assumptions import HIGH
from substrate.retrieval.scope import ReadScope
from substrate.services import open_services
from substrate.settings import Settings
from tests.bench.bench_endpoints import CacheGuard
from tests.bench.stats import latency, percentile
from tests.support.nl_questions import Outcome, evaluate, evaluate_model, load

ROUNDS = 3
MODEL_ROUNDS = 1  # a model endpoint's calls cost time and money: one round
SEARCH_REPEATS = 3
Judge = Callable[[Any, ReadScope, dict[str, Any]], Awaitable[Outcome]]
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


async def _evaluate(settings: Settings, tenant: str, items: list[dict[str, Any]],
                    judge: Judge = evaluate, rounds: int = ROUNDS) -> list[Outcome]:
    services = open_services(settings)
    scope = ReadScope(tenant, 2**53 - 2, ("public", "internal"), False)
    outcomes: list[Outcome] = []
    try:
        for _ in range(rounds):
            outcomes = [await judge(services, scope, item) for item in items]
    finally:
        await services.aclose()
    return outcomes


def cypher_endpoint(settings: Settings) -> RoleConfig | None:
    """The configured ``cypher`` model role, or None."""
    config = role_config(settings, "cypher")
    return config if config.configured else None


def model_forced(settings: Settings) -> Settings:
    return replace(settings, env={**settings.env, "NL_CYPHER_TRANSLATOR": "model"})


def run_translators(settings: Settings, name: str, items: list[dict[str, Any]] | None = None,
                    with_model: bool = True) -> dict[str, list[Outcome]]:
    """Outcomes per translator (``embedded``, and ``model`` when the role is configured) over
    one dataset (all its questions unless ``items``), on one replayed tenant."""
    filename, repo = DATASETS[name]
    chosen = load(filename) if items is None else items
    tenant = "acme" if repo is None else replay_devset(settings, repo)
    try:
        out = {"embedded": asyncio.run(_evaluate(settings, tenant, chosen))}
        if with_model and cypher_endpoint(settings) is not None:
            out["model"] = asyncio.run(_evaluate(model_forced(settings), tenant, chosen,
                                                 evaluate_model, MODEL_ROUNDS))
        return out
    finally:
        if repo is not None:
            drop_tenant(settings, tenant)


def run_dataset(settings: Settings, name: str) -> list[Outcome]:
    """The embedded translator's outcomes over one dataset."""
    return run_translators(settings, name, with_model=False)["embedded"]


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


def _section(label: str, outcomes: list[Outcome]) -> dict[str, Any]:
    figs = figures(outcomes) | {"confidence": confidence_figures(outcomes)}
    for group, _ in GROUPS:
        print(_line(f"{label} / {group}", figs[group]))
    print(_conf_line(f"{label} / confidence", figs["confidence"]))
    return figs


def _misses(per: dict[str, list[Outcome]], translator: str) -> list[dict[str, Any]]:
    misses = [{"translator": translator, "dataset": n, "id": o.qid, "q": o.question,
               "status": o.status, "got": o.got, "expected": o.expected,
               "confidence": o.confidence, "assumptions": list(o.assumptions)}
              for n, outcomes in per.items() for o in outcomes if o.status != "right"]
    for miss in misses:
        print(f"  {translator} {miss['status']}: {miss['dataset']} {miss['id']} {miss['q']!r}: "
              f"got {miss['got']} expected {miss['expected']} "
              f"(confidence {miss['confidence']})")
    return misses


def bench(settings: Settings, datasets: dict[str, list[dict[str, Any]] | None]
          ) -> dict[str, Any]:
    """Score every dataset (``None``: all its questions) with the embedded translator and,
    when configured, the ``cypher`` endpoint; print the figures and return the report."""
    endpoint = cypher_endpoint(settings)
    runs = {name: run_translators(settings, name, items) for name, items in datasets.items()}
    per = {name: r["embedded"] for name, r in runs.items()}
    report: dict[str, Any] = {"benchmark": "nl_cypher", "rounds": ROUNDS, "datasets": {}}
    for name, outcomes in per.items():
        report["datasets"][name] = _section(name, outcomes)
    report["overall"] = _section("overall", [o for out in per.values() for o in out])
    report["misses"] = _misses(per, "embedded")
    if endpoint is None:
        print("cypher model role: not configured (MODEL_CYPHER_URL unset): "
              "embedded translator only")
        report["model"] = {"configured": False}
        return report
    print(f"cypher model role: {endpoint.model} at {endpoint.url} "
          f"({MODEL_ROUNDS} round, endpoint time included)")
    by_model = {name: r["model"] for name, r in runs.items()}
    report["model"] = {"configured": True, "url": endpoint.url, "model": endpoint.model,
                       "rounds": MODEL_ROUNDS, "datasets": {
                           n: _section(f"model {n}", o) for n, o in by_model.items()}}
    report["model"]["overall"] = _section("model overall",
                                          [o for out in by_model.values() for o in out])
    report["model"]["misses"] = _misses(by_model, "model")
    return report


def search_latency(settings: Settings, items: list[dict[str, Any]]) -> dict[str, Any]:
    """``POST /search`` p50/p95 over the questions the embedded translator answers there."""
    key = api_key(settings)
    if key is None:
        return {"available": False, "reason": "no API key: run `substrate up`"}
    guard, samples, answered = CacheGuard(settings), [], 0
    headers = {"x-tenant": "acme", "authorization": f"Bearer {key}"}
    base = f"http://{settings.gateway_host}:{settings.gateway_port}"
    with httpx.Client(base_url=base, timeout=120, headers=headers) as client:
        for item in items:
            body = client.post("/search", json={"query": item["q"]}).raise_for_status().json()
            guard.after(body, timed=False)
            if body.get("route", {}).get("translator") != "embedded":
                continue
            answered += 1
            for _ in range(SEARCH_REPEATS):
                started = time.perf_counter()
                response = client.post("/search", json={"query": item["q"]})
                samples.append((time.perf_counter() - started) * 1000)
                guard.after(response.raise_for_status().json(), timed=True)
    return {"available": True, "questions": len(items), "answered_by_embedded": answered,
            "cache_hits": guard.hits, **latency(samples, 1)}


def main() -> None:
    settings = Settings.from_env()
    wanted = [d for d in os.environ.get("BENCH_NL_DATASETS", ",".join(DATASETS)).split(",")
              if d]
    report = bench(settings, dict.fromkeys(wanted))
    if "demo" in wanted:
        e2e = search_latency(settings, load(DATASETS["demo"][0]))
        report["search_end_to_end"] = e2e
        print(f"demo / POST /search end to end: {e2e}")
    report |= {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "load_average_1m": round(os.getloadavg()[0], 2)}
    out = Path(settings.home) / "bench" / "nl_cypher.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
