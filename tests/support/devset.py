"""The devset bundles of ``../shared/devset`` (four public repositories with their full
history): where they are and how a test or benchmark gets a working clone of one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from substrate.settings import PROJECT_ROOT

DEVSET = PROJECT_ROOT.parent / "shared" / "devset"
REPOS = ("retail-store-sample-app", "bank-of-anthos", "fac", "manage.get.gov")


def bundle(name: str) -> Path:
    """The bundle file of the devset repository ``name``."""
    return DEVSET / f"{name}.bundle"


def clone(name: str, into: Path) -> Path:
    """A clone of the bundle ``name`` at ``into/name`` (reused when already there)."""
    path = into / name
    if not (path / ".git").exists():
        into.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(bundle(name)), str(path)], check=True)
    return path
