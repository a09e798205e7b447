"""NATS with JetStream from Debian's ``nats-server``; the JetStream store in the state dir.

Clients authenticate as user ``substrate`` with the password generated into
``secrets/nats_password``; the ``authorization`` block is in ``run/nats.conf`` (0600). The
monitoring port (loopback, read-only) stays open: the health check reads ``/varz`` there and
refuses a server without ``auth_required``, so ``up`` restarts one started before without it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx
import nats

from substrate.errors import StackError
from substrate.settings import NATS_USER, redact_url
from substrate.stack.credentials import NATS_PASSWORD, ensure_secret, write_private
from substrate.stack.part import Part


async def _authenticate(url: str) -> None:
    nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False,
                            max_reconnect_attempts=0)
    await nc.close()


class NatsPart(Part):
    name = "nats"
    start_timeout = 30.0

    @property
    def monitor_port(self) -> int:
        return self.settings.nats_port + 4000  # 4222 -> 8222, the conventional monitor port

    def ports(self) -> list[int]:
        return [self.settings.nats_port, self.monitor_port]

    def address(self) -> str:
        return redact_url(self.settings.nats_url)

    @property
    def conf_file(self) -> Path:
        return self.settings.run_dir / "nats.conf"

    def start(self) -> bool:
        ensure_secret(self.settings.secrets_dir, NATS_PASSWORD)  # check() connects with it
        return super().start()

    def install(self) -> None:
        if shutil.which("nats-server") is None:
            raise StackError(
                "nats-server is not installed; run `make system-deps` "
                "(apt-get install -y nats-server)"
            )
        self.settings.data_dir("nats").mkdir(parents=True, exist_ok=True)
        password, _ = ensure_secret(self.settings.secrets_dir, NATS_PASSWORD)
        write_private(self.conf_file, (
            "# Written by substrate/stack/nats_server.py at every start; edits are overwritten.\n"
            f"authorization {{\n  user: {json.dumps(NATS_USER)}\n"
            f"  password: {json.dumps(password)}\n}}\n"
        ))

    def command(self) -> list[str]:
        return [
            "nats-server", "-c", str(self.conf_file),
            "-a", "127.0.0.1", "-p", str(self.settings.nats_port),
            "-m", str(self.monitor_port), "-js", "-sd", str(self.settings.data_dir("nats")),
            "-n", "substrate",
        ]

    def check(self) -> str:
        base = f"http://127.0.0.1:{self.monitor_port}"
        varz = httpx.get(f"{base}/varz", timeout=2).json()
        jsz = httpx.get(f"{base}/jsz", timeout=2).json()
        if jsz.get("config") is None and not jsz.get("memory", 0) >= 0:
            raise StackError("NATS is up but JetStream is not enabled")
        if "disabled" in jsz and jsz["disabled"]:
            raise StackError("NATS is up but JetStream is disabled")
        if not varz.get("auth_required"):
            raise StackError("NATS is up but accepts clients without credentials")
        asyncio.run(_authenticate(self.settings.nats_url))
        return f"{varz['version']} (jetstream)"
