"""Question answering on the devset repositories (issue 8): the 140-question set of
``tests/data/devset_qa/`` (gold read from the bundles, not from the product) asked through the
running stack's gateway.

For each repository of ``../shared/devset`` (cloned under ``$SUBSTRATE_HOME/bench/devset``):
its first-parent history is replayed with ``substrate ingest git --history`` into a fresh
tenant (the whole history by default; ``BENCH_QA_WINDOW=N`` replays only the last N
first-parent commits, questions about earlier facts then fail), then every question of the
repository is asked with ``POST /search`` (admin key, ``X-Tenant``) and scored:

* exact answer: the answer text states the gold (entities / value / date / ADR + rationale
  phrases / "no owner recorded"), see ``tests/support/devset_qa.py``;
* evidence: a cited ``evidence_ref`` is a gold ``path#Lline`` or resolves in the bundle to a
  line holding the gold token;
* answered with no model: a non-empty answer while no chat/explain/cypher/scout endpoint is
  configured (or the configured one failed and the composed answer stood).

Reported per family and repository and overall; the replay time of each repository too.
Tenants are deleted after (``BENCH_QA_KEEP=1`` keeps them and prints their names).
Run: ``.substrate/venv/bin/python -m tests.bench.bench_devset_qa [--repos fac,...]
[--family decisions,when] [--ids fac-040,...] [--tenant fac=t-qa-fac-abc123]`` (``--tenant``
asks a tenant kept by an earlier run, ``BENCH_QA_KEEP=1``, instead of replaying again).
Writes ``$SUBSTRATE_HOME/bench/devset_qa.json`` and ``devset_qa.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from substrate.settings import ENV_DEFAULTS, PROJECT_ROOT, Settings
from tests.support.devset_qa import REPOS, Scored, clone, load, score, summarise
from tests.support.gateway_client import gateway

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
WINDOW = int(os.environ.get("BENCH_QA_WINDOW", "0"))
MODEL_ENV = ("CHAT_URL", "MODEL_CYPHER_URL", "MODEL_EXPLAIN_URL", "MODEL_SCOUT_URL")


def model_configured() -> bool:
    return any(os.environ.get(k, ENV_DEFAULTS.get(k, "")) for k in MODEL_ENV)


def window_since(repo: Path, n: int) -> str | None:
    """The commit time of the N-th last first-parent commit (None: the whole history)."""
    if n <= 0:
        return None
    out = subprocess.run(["git", "-C", str(repo), "log", "--first-parent", "--format=%cI",
                          f"-{n}"], capture_output=True, text=True, check=True)
    times = out.stdout.split()
    return times[-1] if times else None


def replay(repo: Path, tenant: str, since: str | None = None,
           until: str | None = None) -> float:
    """``substrate ingest git --history`` into ``tenant``; seconds taken."""
    args = [str(CLI), "ingest", "git", str(repo), "--history"]
    args += (["--since", since] if since else []) + (["--until", until] if until else [])
    started = time.perf_counter()
    result = subprocess.run(args, env={**os.environ, "SUBSTRATE_TENANT": tenant},
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"replay of {repo.name} failed: {result.stderr[-1500:]}")
    return time.perf_counter() - started


def ask(settings: Settings, tenant: str, items: list[dict[str, Any]], repo: Path,
        ) -> list[Scored]:
    """Every question through POST /search, scored against its gold."""
    with_model = model_configured()
    out = []
    with gateway(settings, headers={"X-Tenant": tenant}, timeout=120) as client:
        for item in items:
            started = time.perf_counter()
            r = client.post("/search", json={"query": item["question"]})
            ms = (time.perf_counter() - started) * 1000
            body: dict[str, Any] = r.json() if r.status_code == 200 else {
                "answer": "", "citations": [], "error": r.text[:300]}
            out.append(score(item, body, repo, with_model, ms))
    return out


def drop(settings: Settings, tenant: str) -> None:
    from substrate.db import neo4j_driver
    from tests.bench.bench_ingest import delete_tenant

    driver = neo4j_driver(settings)
    try:
        delete_tenant(settings, driver, tenant)
    finally:
        driver.close()


def selected(name: str, families: Collection[str], ids: Collection[str]) -> list[dict[str, Any]]:
    """The repository's questions, only those of ``families`` / ``ids`` when given."""
    return [q for q in load(name) if (not families or q["family"] in families)
            and (not ids or q["id"] in ids)]


def run_repo(settings: Settings, name: str, families: Collection[str] = (),
             ids: Collection[str] = (), kept: str | None = None,
             ) -> tuple[dict[str, Any], list[Scored]]:
    repo = clone(name, settings.home / "bench" / "devset")
    since = window_since(repo, WINDOW)
    if kept is not None:  # a tenant replayed by an earlier run (BENCH_QA_KEEP=1)
        scored = ask(settings, kept, selected(name, families, ids), repo)
        return {"repository": name, "since": since, "replay_seconds": 0.0,
                "tenant": kept, **summarise(scored)}, scored
    tenant = f"t-qa-{name.replace('.', '-')}-{secrets.token_hex(3)}"
    try:
        seconds = replay(repo, tenant, since)
        scored = ask(settings, tenant, selected(name, families, ids), repo)
    finally:
        if os.environ.get("BENCH_QA_KEEP") == "1":
            print(f"kept tenant {tenant}", flush=True)
        else:
            drop(settings, tenant)
    row = {"repository": name, "since": since, "replay_seconds": round(seconds, 1),
           **summarise(scored)}
    return row, scored


def markdown(figures: dict[str, Any]) -> str:
    head = ("| scope | questions | exact answer | evidence | exact + evidence | answered | "
            "answered, no model |\n|---|---|---|---|---|---|---|\n")

    def line(label: str, b: dict[str, Any]) -> str:
        return (f"| {label} | {b['questions']} | {b['exact_answer_accuracy']:.0%} | "
                f"{b['evidence_accuracy']:.0%} | {b['exact_with_evidence']:.0%} | "
                f"{b['answered']:.0%} | {b['answered_no_model']:.0%} |\n")
    text = (f"# Devset question answering ({figures['measured_at']})\n\n"
            f"Model endpoint configured: {figures['model_configured']}; window: "
            f"{figures['window_commits'] or 'full history'}.\n\n" + head)
    text += line("**overall**", figures["overall"])
    text += "".join(line(f, b) for f, b in figures["families"].items())
    text += "\n| repository | replay s | questions | exact | evidence |\n|---|---|---|---|---|\n"
    for r in figures["repositories"]:
        o = r["overall"]
        text += (f"| {r['repository']} | {r['replay_seconds']} | {o['questions']} | "
                 f"{o['exact_answer_accuracy']:.0%} | {o['evidence_accuracy']:.0%} |\n")
    return text


def run(repos: list[str], families: Collection[str] = (), ids: Collection[str] = (),
        kept: dict[str, str] | None = None) -> dict[str, Any]:
    settings = Settings.from_env()
    rows, scored = [], []
    for name in repos:
        if ids and not selected(name, families, ids):
            continue
        row, got = run_repo(settings, name, families, ids, (kept or {}).get(name))
        print(json.dumps({k: row[k] for k in ("repository", "replay_seconds", "overall")}),
              flush=True)
        rows.append(row)
        scored += got
    return {"benchmark": "devset_qa", "window_commits": WINDOW,
            "model_configured": model_configured(), **summarise(scored),
            "repositories": rows,
            "questions": [asdict(s) for s in scored],
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "load_average_1m": round(os.getloadavg()[0], 2)}


def split(text: str) -> set[str]:
    return {t.strip() for t in text.split(",") if t.strip()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repos", default=",".join(REPOS))
    p.add_argument("--family", default="", help="only these families (comma-separated)")
    p.add_argument("--ids", default="", help="only these question ids (comma-separated)")
    p.add_argument("--tenant", action="append", default=[], metavar="REPO=TENANT",
                   help="ask a tenant kept by an earlier run instead of replaying REPO")
    args = p.parse_args(argv if argv is not None else sys.argv[1:])
    kept = dict(t.split("=", 1) for t in args.tenant)
    figures = run([r for r in args.repos.split(",") if r], split(args.family),
                  split(args.ids), kept)
    out = Settings.from_env().home / "bench" / "devset_qa.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(figures))
    print(markdown(figures))
    print(f"-> {out}")


if __name__ == "__main__":
    main()
