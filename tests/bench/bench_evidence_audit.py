"""Evidence audit over whole devset histories (issue 9): does every evidence ref resolve?

For each bundle of ``../shared/devset`` (cloned under ``$SUBSTRATE_HOME/bench/devset``): the
whole first-parent history (or up to ``--until``) is replayed into a fresh tenant, then
``substrate audit evidence`` checks every ref of every git-sourced edge, live or closed
(``git show commit:path``, line in range, the fact's key tokens on the line). Reports per
repository: commits, replay seconds, edges, refs, the share that resolves, failure reasons and
examples, and the renames carried as aliases. Tenants are deleted after.
Run: ``.substrate/venv/bin/python -m tests.bench.bench_evidence_audit [--repos fac,...]``.
Writes ``$SUBSTRATE_HOME/bench/evidence_audit.json``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from substrate.settings import PROJECT_ROOT, Settings
from tests.bench.bench_ingest import delete_tenant
from tests.support import devset

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
REPOS = devset.REPOS


def clone(settings: Settings, name: str) -> Path:
    return devset.clone(name, settings.home / "bench" / "devset")


def one(settings: Settings, name: str, until: str | None) -> dict[str, Any]:
    from substrate.connectors.git_ingest import ingest_git
    from substrate.db import neo4j_driver
    from substrate.graph.writer import GraphWriter

    repo, tenant = clone(settings, name), f"bench-audit-{secrets.token_hex(4)}"
    driver = neo4j_driver(settings)
    renames: list[str] = []
    try:
        started = time.monotonic()
        results = ingest_git(GraphWriter(settings, driver, embedder=None), repo, history=True,
                             until=until, tenant=tenant,
                             progress=lambda m: renames.append(m) if " renamed " in m else None)
        replay_s = time.monotonic() - started
        done = subprocess.run([str(CLI), "audit", "evidence", "--tenant", tenant, "--repo",
                               str(repo)], capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):
            raise RuntimeError(done.stderr.strip())
        audit = json.loads(done.stdout)  # the replay's source and its rename links
        report = {k: audit[k] for k in ("refs", "resolved", "share", "sources")}
    finally:
        delete_tenant(settings, driver, tenant)
        driver.close()
    return {"repo": name, "until": until, "commits": len(results),
            "replay_seconds": round(replay_s, 1), "renames": renames, **report}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repos", default=",".join(REPOS))
    parser.add_argument("--until", help="last commit date (ISO); default: the whole history")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    out = [one(settings, name, args.until) for name in args.repos.split(",") if name]
    for r in out:
        print(f"{r['repo']}: {r['commits']} commits in {r['replay_seconds']}s, {r['refs']} refs,"
              f" {100 * r['share']:.2f}% resolve, {len(r['renames'])} rename(s)")
    path = settings.home / "bench" / "evidence_audit.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    return 0 if all(r["share"] == 1.0 for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
