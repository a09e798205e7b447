"""Programs built from Go modules, never a prebuilt download: OPA (:mod:`substrate.stack.opa`,
``go install`` of its module) and the Helm chart renderer (:mod:`substrate.stack.helm`, ``go
build`` of ``plugins/helm-render``, whose ``go.sum`` pins every module), into
``$SUBSTRATE_HOME/bin``. The Go module proxy is one of the registries a machine here reaches.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from substrate.errors import StackError

BUILD_TIMEOUT_S = 1800


def _env(gobin: str | None = None) -> dict[str, str]:
    return {**os.environ, **({"GOBIN": gobin} if gobin else {}), "GOFLAGS": "-buildvcs=false",
            "CGO_ENABLED": "0"}


def _run(command: list[str], name: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> None:
    try:
        subprocess.run(command, env=env or _env(), cwd=cwd, check=True, capture_output=True,
                       text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        raise StackError(f"building {name} failed", exc.stderr[-2000:]) from exc
    except subprocess.TimeoutExpired as exc:
        raise StackError(f"building {name} took over {BUILD_TIMEOUT_S} s") from exc


def _go(name: str, module: str) -> str:
    go = shutil.which("go")
    if go is None:
        raise StackError(f"{name} is built from its Go module: install Go (>= 1.24) first",
                         {"module": module})
    return go


def go_build(source: Path, target: Path, ldflags: str = "") -> Path:
    """Build the Go module in folder ``source`` (its ``go.mod`` and ``go.sum`` pin what it
    uses) into ``target``."""
    go = _go(target.name, str(source))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    env = {**_env(), "GOFLAGS": "-buildvcs=false -mod=readonly"}  # go.sum as committed
    _run([go, "build", "-trimpath", *(["-ldflags", ldflags] if ldflags else []), "-o",
          str(partial), "."], target.name, cwd=source, env=env)
    os.replace(partial, target)
    return target


def go_install(package: str, version: str, target: Path, ldflags: str = "") -> Path:
    """Build ``package@v<version>`` (the module path of its command) and move the binary to
    ``target``; ``ldflags`` is passed to the linker (``-s -w`` drops the symbol tables)."""
    name = package.rstrip("/").rsplit("/", 1)[-1]
    go = _go(name, f"{package}@v{version}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as gobin:
        _run([go, "install", *(["-ldflags", ldflags] if ldflags else []),
              f"{package}@v{version}"], f"{name} v{version}", env=_env(gobin))
        os.replace(Path(gobin) / name, target)
    return target
