"""Build the demo organisation's git repository, deterministically.

``build_demo_repo(dest)`` (or ``python -m substrate.demo.build_repo DEST``) creates a git
repository of acme's shop monorepo with one commit per step of :mod:`substrate.demo.timeline`
(2026-08-03 .. 2026-10-30). Author, committer, e-mails and dates are fixed and git's own
configuration is ignored, so every run yields the same commit SHAs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from substrate.connectors.gitcmd import run_git
from substrate.demo.gitwriter import CommitSpec, fast_import, init_repo
from substrate.demo.timeline import STEPS
from substrate.demo.topology import PEOPLE, REPO_URL
from substrate.demo.world import World


def build_demo_repo(dest: Path) -> Path:
    """Create the demo repository at ``dest`` (which must not exist or be empty)."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty")
    init_repo(dest, remote=REPO_URL)
    world = World.initial()
    commits = []
    for step in STEPS:
        step.apply(world)
        person = PEOPLE[step.author]
        spec = CommitSpec(world.files(), step.subject, step.when, person.full_name, person.email)
        commits.append(spec)
    fast_import(dest, commits)
    return dest


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m substrate.demo.build_repo DEST", file=sys.stderr)
        return 2
    path = build_demo_repo(Path(args[0]))
    head = run_git(path, "rev-parse", "HEAD").decode().strip()
    print(f"demo repository at {path} ({len(STEPS)} commits, HEAD {head})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
