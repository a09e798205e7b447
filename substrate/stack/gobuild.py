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


def _env(cache: Path, gobin: str | None = None, flags: str = "") -> dict[str, str]:
    """Go's environment: its module and build caches under ``cache`` (the state directory,
    not the user's home; modules writable, so deleting the state directory works)."""
    return {**os.environ, **({"GOBIN": gobin} if gobin else {}),
            "GOMODCACHE": str(cache / "mod"), "GOCACHE": str(cache / "build"),
            "GOFLAGS": f"-buildvcs=false -modcacherw {flags}".strip(), "CGO_ENABLED": "0"}


def _run(command: list[str], name: str, env: dict[str, str], cwd: Path | None = None) -> None:
    try:
        subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True,
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


def go_build(source: Path, target: Path, cache: Path, ldflags: str = "") -> Path:
    """Build the Go module in folder ``source`` (its ``go.mod`` and ``go.sum`` pin what it
    uses, ``-mod=readonly``) into ``target``."""
    go = _go(target.name, str(source))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    _run([go, "build", "-trimpath", *(["-ldflags", ldflags] if ldflags else []), "-o",
          str(partial), "."], target.name, _env(cache, flags="-mod=readonly"), cwd=source)
    os.replace(partial, target)
    return target


def go_install(package: str, version: str, target: Path, cache: Path,
               ldflags: str = "") -> Path:
    """Build ``package@v<version>`` (the module path of its command) and move the binary to
    ``target``; ``ldflags`` is passed to the linker (``-s -w`` drops the symbol tables)."""
    name = package.rstrip("/").rsplit("/", 1)[-1]
    go = _go(name, f"{package}@v{version}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as gobin:
        _run([go, "install", *(["-ldflags", ldflags] if ldflags else []),
              f"{package}@v{version}"], f"{name} v{version}", _env(cache, gobin))
        os.replace(Path(gobin) / name, target)
    return target
