"""Run every benchmark: each ``tests/bench/bench_*.py`` module that has a ``main()``.

Run: ``make bench`` (``.substrate/venv/bin/python -m tests.bench.run_all [NAME ...]``); with
names (``ingest``, ``bench_endpoints``, ...) only those run. Each benchmark writes its figures
to ``$SUBSTRATE_HOME/bench/<name>.json`` and prints them; a failing benchmark is reported and
the others still run (exit status 1 if any failed).
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

BENCH_DIR = Path(__file__).resolve().parent
PACKAGE = "tests.bench"


def discover(names: list[str] | None = None) -> list[tuple[str, Callable[..., Any]]]:
    """(module name, main) of every benchmark module, sorted; optionally only ``names``."""
    wanted = {n if n.startswith("bench_") else f"bench_{n}" for n in names or []}
    found = []
    for path in sorted(BENCH_DIR.glob("bench_*.py")):
        if wanted and path.stem not in wanted:
            continue
        module = importlib.import_module(f"{PACKAGE}.{path.stem}")
        main = getattr(module, "main", None)
        if callable(main):
            found.append((path.stem, main))
    missing = wanted - {name for name, _ in found}
    if missing:
        raise SystemExit(f"no benchmark named {sorted(missing)}")
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    results: dict[str, str] = {}
    for name, bench_main in discover(args):
        print(f"=== {name}", flush=True)
        started = time.monotonic()
        saved, sys.argv = sys.argv, [f"{PACKAGE}.{name}"]  # each runs with its defaults
        try:
            bench_main()
            results[name] = f"ok ({time.monotonic() - started:.0f}s)"
        except Exception:  # noqa: BLE001 - report it and run the others
            traceback.print_exc()
            results[name] = f"FAILED ({time.monotonic() - started:.0f}s)"
        finally:
            sys.argv = saved
    print("=== summary")
    for name, outcome in results.items():
        print(f"{name:<24} {outcome}")
    return 1 if any(r.startswith("FAILED") for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
