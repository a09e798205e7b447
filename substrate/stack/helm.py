"""Helm, built from its Go module, renders the charts a repository holds (connectors/helm_charts).

    python -m substrate.stack.helm install     # go install helm.sh/helm/v3/cmd/helm -> bin/helm

``substrate up`` builds it once into ``$SUBSTRATE_HOME/bin/helm`` (~80 s on two cores the first
time, the module downloads included; later calls check ``helm version`` and return at once).
Without Go it is not built and charts are not rendered (``substrate up`` says so): a ``helm``
on ``PATH`` is used instead when there is one.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from substrate.errors import StackError
from substrate.settings import Settings
from substrate.stack.gobuild import go_install

HELM_VERSION = "3.16.4"
GO_PACKAGE = "helm.sh/helm/v3/cmd/helm"
# the version the binary reports (``go install`` leaves Helm's own at "v3.16"); -s -w: no
# symbol tables (108 -> 72 MB)
_LDFLAGS = f"-s -w -X helm.sh/helm/v3/internal/version.version=v{HELM_VERSION}"


def binary_path(settings: Settings) -> Path:
    return settings.home / "bin" / "helm"


def installed_version(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        out = subprocess.run([str(path), "version", "--template", "{{.Version}}"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().removeprefix("v") or None


def install(settings: Settings, version: str = HELM_VERSION) -> Path:
    """The Helm binary of ``version``, built with ``go install`` when it is not there yet."""
    target = binary_path(settings)
    if installed_version(target) == version:
        return target
    return go_install(GO_PACKAGE, version, target, _LDFLAGS)


def ensure(settings: Settings, progress: Callable[[str], None]) -> Path | None:
    """``substrate up``'s step: Helm built when missing; without Go, a line that says charts
    will not be rendered (the rest of the stack does not need Helm)."""
    if installed_version(binary_path(settings)) == HELM_VERSION:
        return binary_path(settings)
    progress(f"[helm] building Helm v{HELM_VERSION} from its Go module (once, ~1 min): "
             "it renders the Helm charts of the repositories you ingest")
    try:
        return install(settings)
    except StackError as exc:
        progress(f"[helm] {exc.message}: Helm charts will not be rendered")
        return None


def find_binary() -> Path | None:
    """The Helm the connectors render with: ours, else one on ``PATH``, else None (looked
    for again at the next call: ``substrate up`` may build it meanwhile)."""
    return _found() or _on_path()


@lru_cache(maxsize=1)
def _home_bin() -> Path:
    return binary_path(Settings.from_env())


def _found() -> Path | None:
    return _home_bin() if _home_bin().exists() else None


def _on_path() -> Path | None:
    found = shutil.which("helm")
    return Path(found) if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m substrate.stack.helm")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the Helm binary from its Go module")
    parser.parse_args(argv)
    try:
        binary = install(Settings.from_env())
    except StackError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"helm {HELM_VERSION}: {binary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
