"""The Helm renderer (``plugins/helm-render``: Helm's own Go packages behind a JSON-lines pipe),
built from its Go module; connectors/helm_charts renders a repository's charts with it.

    python -m substrate.stack.helm install     # go build plugins/helm-render -> bin/helm-render

``substrate up`` builds it once into ``$SUBSTRATE_HOME/bin/helm-render`` (~1 min on two cores
the first time, the module downloads included; later calls compare the sources' digest kept
beside the binary and return at once). Without Go it is not built and charts are not rendered
(``substrate up`` says so). One long-lived process renders every chart of a replay: a ``helm
template`` process costs ~30 ms to start, a render in it ~2 ms.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from substrate.errors import StackError
from substrate.settings import PROJECT_ROOT, Settings
from substrate.stack.gobuild import go_build

SOURCE_DIR = PROJECT_ROOT / "plugins" / "helm-render"
SOURCES = ("main.go", "go.mod", "go.sum")


def binary_path(settings: Settings) -> Path:
    return settings.home / "bin" / "helm-render"


def source_digest() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes())
    return digest.hexdigest()


def _digest_file(binary: Path) -> Path:
    return binary.with_name(binary.name + ".sha256")


def is_current(binary: Path) -> bool:
    """Was ``binary`` built from the sources as they are now?"""
    stamp = _digest_file(binary)
    return binary.exists() and stamp.exists() and stamp.read_text().strip() == source_digest()


def install(settings: Settings) -> Path:
    """The renderer, built with ``go build`` when missing or built from other sources."""
    target = binary_path(settings)
    if is_current(target):
        return target
    go_build(SOURCE_DIR, target, settings.cache_dir / "go", "-s -w")
    _digest_file(target).write_text(source_digest() + "\n")
    return target


def ensure(settings: Settings, progress: Callable[[str], None]) -> Path | None:
    """``substrate up``'s step: the renderer built when missing; without Go, a line that says
    charts will not be rendered (the rest of the stack does not need it)."""
    if is_current(binary_path(settings)):
        return binary_path(settings)
    progress("[helm] building the Helm chart renderer (plugins/helm-render) from its Go "
             "module (once, ~1 min)")
    try:
        return install(settings)
    except StackError as exc:
        progress(f"[helm] {exc.message}: Helm charts will not be rendered")
        return None


@lru_cache(maxsize=1)
def _home_bin() -> Path:
    return binary_path(Settings.from_env())


def find_binary() -> Path | None:
    """The renderer the connectors use, None when it is not built (looked for again at the
    next call: ``substrate up`` may build it meanwhile)."""
    return _home_bin() if _home_bin().exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m substrate.stack.helm")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the Helm chart renderer from its Go module")
    parser.parse_args(argv)
    try:
        binary = install(Settings.from_env())
    except StackError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"helm-render: {binary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
