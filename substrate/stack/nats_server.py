"""NATS with JetStream from Debian's ``nats-server``; the JetStream store in the state dir."""

from __future__ import annotations

import shutil

import httpx

from substrate.errors import StackError
from substrate.stack.part import Part


class NatsPart(Part):
    name = "nats"
    start_timeout = 30.0

    @property
    def monitor_port(self) -> int:
        return self.settings.nats_port + 4000  # 4222 -> 8222, the conventional monitor port

    def ports(self) -> list[int]:
        return [self.settings.nats_port, self.monitor_port]

    def address(self) -> str:
        return self.settings.nats_url

    def install(self) -> None:
        if shutil.which("nats-server") is None:
            raise StackError(
                "nats-server is not installed; run `make system-deps` "
                "(apt-get install -y nats-server)"
            )
        self.settings.data_dir("nats").mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [
            "nats-server", "-a", "127.0.0.1", "-p", str(self.settings.nats_port),
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
        return f"{varz['version']} (jetstream)"
