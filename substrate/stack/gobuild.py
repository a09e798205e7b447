"""Command-line tools built from their Go modules (``go install``), never a prebuilt download.

OPA (:mod:`substrate.stack.opa`) and Helm (:mod:`substrate.stack.helm`) are built this way into
``$SUBSTRATE_HOME/bin``: the Go module proxy is one of the registries a machine here reaches,
and a build from source is what the lock of a module version pins.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from substrate.errors import StackError

BUILD_TIMEOUT_S = 1800


def go_install(package: str, version: str, target: Path, ldflags: str = "") -> Path:
    """Build ``package@v<version>`` (the module path of its command) and move the binary to
    ``target``; ``ldflags`` is passed to the linker (``-s -w`` drops the symbol tables)."""
    go = shutil.which("go")
    name = package.rstrip("/").rsplit("/", 1)[-1]
    if go is None:
        raise StackError(f"{name} is built from its Go module: install Go (>= 1.24) first",
                         {"module": f"{package}@v{version}"})
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as gobin:
        env = {**os.environ, "GOBIN": gobin, "GOFLAGS": "-buildvcs=false", "CGO_ENABLED": "0"}
        command = [go, "install", *(["-ldflags", ldflags] if ldflags else []),
                   f"{package}@v{version}"]
        try:
            subprocess.run(command, env=env, check=True, capture_output=True, text=True,
                           timeout=BUILD_TIMEOUT_S)
        except subprocess.CalledProcessError as exc:
            raise StackError(f"building {name} v{version} failed", exc.stderr[-2000:]) from exc
        except subprocess.TimeoutExpired as exc:
            raise StackError(f"building {name} v{version} took over {BUILD_TIMEOUT_S} s") \
                from exc
        os.replace(Path(gobin) / name, target)
    return target
