"""Extra local processes a test owns: a second gateway (uvicorn) with its own environment, a
private ``nats-server -js``. The shared stack is never touched; each process is stopped by
its own handle."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from substrate.settings import PROJECT_ROOT, Settings


def free_port() -> int:
    """A loopback port nothing listens on (also good as a "dead" address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def gateway(log_dir: Path, tenant: str, start_timeout: float = 180.0,
            **env: str) -> Iterator[httpx.Client]:
    """A second gateway from the code on disk, on a free port, with ``env`` overriding the
    environment (e.g. REDIS_URL / NATS_URL); yields a client sending ``X-Tenant``."""
    port = free_port()
    environ = {**os.environ, "GATEWAY_PORT": str(port), "HF_HUB_OFFLINE": "1", **env}
    log_path = log_dir / f"gateway-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "gateway.app:create_app", "--factory",
             "--host", "127.0.0.1", "--port", str(port), "--no-access-log"],
            env=environ, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
        )
        settings = Settings.from_env(environ)
        key = (settings.secrets_dir / "admin_api_key").read_text().strip()
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                              headers={"X-Tenant": tenant, "Authorization": f"Bearer {key}"})
        try:
            _wait_healthy(client, proc, log_path, start_timeout)
            yield client
        finally:
            client.close()
            _stop(proc)


def _wait_healthy(client: httpx.Client, proc: subprocess.Popen[bytes], log: Path,
                  timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gateway exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if client.get("/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"gateway not healthy in time:\n{log.read_text()[-3000:]}")


class PrivateNats:
    """``nats-server -js`` on a free loopback port with its store in ``store_dir``; stop and
    start again keep the store (streams, durable consumers and their positions)."""

    def __init__(self, store_dir: Path) -> None:
        self.store_dir = store_dir
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.store_dir.parent / f"nats-{self.port}.log").open("ab")
        self.proc = subprocess.Popen(
            ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.port),
             "-sd", str(self.store_dir)], stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not _listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("private nats-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None
