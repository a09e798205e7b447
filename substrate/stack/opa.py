"""Open Policy Agent, built from its Go module (no prebuilt download), for ``OPA_URL``.

    python -m substrate.stack.opa install     # go install ...opa@v<OPA_VERSION> -> bin/opa
    python -m substrate.stack.opa serve [--port 8181]   # OPA on loopback with our policy

The binary lands in ``$SUBSTRATE_HOME/bin/opa`` (built once, a few minutes on two cores; later
calls check ``opa version`` and return at once). The policy is ``plugins/opa/substrate.rego``
(package ``substrate.authz``, mirroring :class:`substrate.security.policy.BuiltinPolicy`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from substrate.errors import StackError
from substrate.settings import PROJECT_ROOT, Settings
from substrate.stack.gobuild import go_install

OPA_VERSION = "1.22.2"  # builds with Go >= 1.24
GO_MODULE = "github.com/open-policy-agent/opa"
POLICY_DIR = PROJECT_ROOT / "plugins" / "opa"
DEFAULT_PORT = 8181


def binary_path(settings: Settings) -> Path:
    return settings.home / "bin" / "opa"


def installed_version(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        out = subprocess.run([str(path), "version"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"^Version:\s*(\S+)", out, re.MULTILINE)
    return match.group(1) if match else None


def install(settings: Settings, version: str = OPA_VERSION) -> Path:
    """The OPA binary of ``version``, built with ``go install`` when it is not there yet."""
    target = binary_path(settings)
    if installed_version(target) == version:
        return target
    return go_install(GO_MODULE, version, target, settings.cache_dir / "go")


def serve_command(binary: Path, port: int, policy_dir: Path = POLICY_DIR) -> list[str]:
    """OPA as a server on loopback with the policy files of ``policy_dir``."""
    return [str(binary), "run", "--server", "--addr", f"127.0.0.1:{port}",
            "--log-level", "error", str(policy_dir / "substrate.rego")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m substrate.stack.opa")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the OPA binary from its Go module")
    serve = sub.add_parser("serve", help="run OPA on loopback with plugins/opa/substrate.rego")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    try:
        binary = install(settings)
    except StackError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    if args.command == "install":
        print(f"opa {OPA_VERSION}: {binary}")
        return 0
    os.execv(str(binary), serve_command(binary, args.port))


if __name__ == "__main__":
    sys.exit(main())
