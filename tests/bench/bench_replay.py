"""History replay speed on the devset repositories, with and without the path filter.

For each bundle of ``../shared/devset`` (cloned under ``$SUBSTRATE_HOME/bench/devset``):

* the first ``WINDOW`` first-parent commits replayed without the filter and with it, each
  into a fresh tenant (like for like: commits/s and the share of commits parsed);
* the whole first-parent history replayed with the filter (commits/s), unless
  ``BENCH_REPLAY_FULL=0``.

No embedder (the write path and the connectors, not the model). git blame's cache is
process-wide, so each replay runs in its own process (``--one``). Tenants are deleted after.
Run: ``.substrate/venv/bin/python -m tests.bench.bench_replay [--repos fac,...]``.
Writes ``$SUBSTRATE_HOME/bench/replay.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from substrate.settings import PROJECT_ROOT, Settings
from tests.support import devset

WINDOW = int(os.environ.get("BENCH_REPLAY_WINDOW", "150"))
REPOS = devset.REPOS


def clone(settings: Settings, name: str) -> Path:
    return devset.clone(name, settings.home / "bench" / "devset")


def replay_once(repo: Path, until: str | None, path_filter: bool) -> dict[str, Any]:
    """One replay in this process (fresh blame cache) into a fresh tenant, then deleted.
    ``writer_seconds``: the time spent in the writer's ``commit`` (parsing runs ahead of
    it in a process of its own, see ``replay_parse``)."""
    from substrate.connectors.git_ingest import ingest_git
    from substrate.db import neo4j_driver
    from substrate.graph.writer import CommitResult, GraphWriter
    from tests.bench.bench_ingest import delete_tenant

    class TimedWriter(GraphWriter):
        seconds = 0.0

        def commit(self, *args: Any, **kwargs: Any) -> CommitResult:
            started = time.perf_counter()
            try:
                return super().commit(*args, **kwargs)
            finally:
                TimedWriter.seconds += time.perf_counter() - started

    settings = Settings.from_env()
    driver = neo4j_driver(settings)
    tenant = f"t-bench-replay-{secrets.token_hex(4)}"
    parsed = 0

    def progress(msg: str) -> None:
        nonlocal parsed
        parsed += " snapshot " in msg

    try:
        started = time.perf_counter()
        results = ingest_git(TimedWriter(settings, driver, None), repo, history=True,
                             until=until, tenant=tenant, progress=progress,
                             path_filter=path_filter)
        seconds = time.perf_counter() - started
    finally:
        delete_tenant(settings, driver, tenant)
        driver.close()
    snapshots = sum(1 for r in results if r.snapshot_version)
    return {"path_filter": path_filter, "commits": len(results), "parsed": parsed,
            "snapshots": snapshots, "seconds": round(seconds, 1),
            "commits_per_s": round(len(results) / seconds, 1),
            "writer_seconds": round(TimedWriter.seconds, 1),
            "writer_s_per_snapshot": round(TimedWriter.seconds / max(snapshots, 1), 3),
            "load_average_1m": round(os.getloadavg()[0], 2)}


def in_process(repo: Path, until: str | None, path_filter: bool) -> dict[str, Any]:
    args = [sys.executable, "-m", "tests.bench.bench_replay", "--one", str(repo),
            "--filter" if path_filter else "--no-filter"] + (["--until", until] if until else [])
    out = subprocess.run(args, cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def window_end(repo: Path, n: int) -> str | None:
    from substrate.connectors.history import list_commits

    commits = list_commits(repo)
    return None if len(commits) <= n else commits[n - 1].timestamp


def run(repos: list[str], full: bool) -> dict[str, Any]:
    settings = Settings.from_env()
    rows = []
    for name in repos:
        repo = clone(settings, name)
        row: dict[str, Any] = {"repository": name}
        if WINDOW > 0:  # BENCH_REPLAY_WINDOW=0: the full histories only
            until = window_end(repo, WINDOW)
            row |= {"window_until": until,
                    "window_without_filter": in_process(repo, until, False),
                    "window_with_filter": in_process(repo, until, True)}
        if full:
            row["full_history_with_filter"] = in_process(repo, None, True)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return {"benchmark": "history_replay", "window_commits": WINDOW, "repositories": rows,
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "load_average_1m": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repos", default=",".join(REPOS))
    p.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--until", help=argparse.SUPPRESS)
    p.add_argument("--filter", dest="path_filter", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-filter", dest="path_filter", action="store_false",
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv if argv is not None else sys.argv[1:])
    if args.one:
        print(json.dumps(replay_once(args.one, args.until, args.path_filter)))
        return
    figures = run([r for r in args.repos.split(",") if r],
                  os.environ.get("BENCH_REPLAY_FULL", "1") != "0")
    out = Settings.from_env().home / "bench" / "replay.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
