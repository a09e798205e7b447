"""A 3-node NATS cluster with JetStream and a 3-master Redis Cluster on loopback, from the same
Debian packages as the single-node parts (``nats-server``, ``redis-server``, ``redis-cli``).

For tests and benches of several gateway replicas. The credentials scheme is the single-node
parts': clients authenticate as ``substrate`` with the passwords in ``secrets/`` (NATS
``authorization`` block, Redis ACL user with the default user off), so loopback URLs without a
password get them from :class:`~substrate.settings.Settings` as usual. NATS routes
authenticate with the same user. Each node's configuration is a 0600 file under
``run/cluster/``, its data under ``data/cluster/`` (wiped at every start: a fresh cluster).

Ports: NATS (clients, routes, monitoring) from 50000-50099, Redis (clients, cluster bus) from
50100-50199, the first free ones at each start: the ranges lie in the kernel's ephemeral range
(32768-60999), where a passing outgoing connection can hold any port for a moment.
``python -m substrate.stack.local_cluster`` starts both, prints the settings that point at
them and stops them on Enter or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote

import httpx
import redis

from substrate.errors import StackError
from substrate.settings import NATS_USER, REDIS_USER, Settings
from substrate.stack.credentials import (
    NATS_PASSWORD,
    REDIS_PASSWORD,
    ensure_secret,
    write_private,
)
from substrate.stack.part import who_listens

NATS_PORTS = range(50000, 50100)
REDIS_PORTS = range(50100, 50200)
START_TIMEOUT_S = 60.0


@dataclass
class Node:
    """One server process; its log next to its configuration."""

    name: str
    port: int
    command: list[str]
    log: Path
    env: dict[str, str] | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        with self.log.open("wb") as out:  # a fresh log per start
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                         env=self.env, start_new_session=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (or SIGKILL: a crash) and wait for the process to end."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise StackError(f"{self.name} exited ({self.proc.returncode}):\n{tail}")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(candidates: range, n: int) -> list[int]:
    """The first ``n`` ports of ``candidates`` nothing holds right now."""
    found = [p for p in candidates if _bindable(p)][:n]
    if len(found) < n:
        raise StackError(f"fewer than {n} free ports in {candidates.start}-"
                         f"{candidates.stop - 1}: {who_listens(candidates.start)}")
    return found


def _wait(what: str, ready: Callable[[], bool], nodes: list[Node]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for node in nodes:
            node.check_alive()
        try:
            if ready():
                return
        except (httpx.HTTPError, redis.RedisError, OSError, ValueError):
            pass
        time.sleep(0.2)
    raise StackError(f"{what} not ready within {START_TIMEOUT_S:.0f} s")


class _Cluster:
    kind = ""

    def __init__(self, settings: Settings, size: int = 3) -> None:
        self.settings, self.size = settings, size
        self.nodes: list[Node] = []
        self.ports: list[int] = []  # chosen at start: clients first, then the other roles
        self.conf_dir = settings.run_dir / "cluster" / self.kind
        self.data_dir = settings.home / "data" / "cluster" / self.kind

    def _fresh_dirs(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.data_dir.mkdir(parents=True)
        self.conf_dir.mkdir(parents=True, exist_ok=True)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> Self:
        for attempt in (1, 2):
            try:
                self.start()
                return self
            except StackError as exc:  # a port taken between the check and the bind: again
                self.stop()
                if attempt == 2 or "already in use" not in str(exc).lower():
                    raise
            except BaseException:
                self.stop()
                raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        raise NotImplementedError


class NatsCluster(_Cluster):
    """``size`` nats-servers with JetStream, routed to each other (cluster ``substrate``)."""

    kind = "nats"

    def client_port(self, i: int) -> int:
        return self.ports[i]

    def route_port(self, i: int) -> int:
        return self.ports[self.size + i]

    def monitor_port(self, i: int) -> int:
        return self.ports[2 * self.size + i]

    @property
    def url(self) -> str:
        """NATS_URL for a client: every server, comma-separated, without credentials."""
        return ",".join(f"nats://127.0.0.1:{self.client_port(i)}" for i in range(self.size))

    def _conf(self, i: int, password: str) -> str:
        secret = quote(password, safe="")
        routes = [f"nats-route://{NATS_USER}:{secret}@127.0.0.1:{self.route_port(j)}"
                  for j in range(self.size) if j != i]
        auth = f"{{ user: {json.dumps(NATS_USER)}, password: {json.dumps(password)} }}"
        return (
            "# Written by substrate/stack/local_cluster.py; a test cluster node.\n"
            f"server_name: n{i}\nlisten: 127.0.0.1:{self.client_port(i)}\n"
            f"http: 127.0.0.1:{self.monitor_port(i)}\n"
            f"jetstream {{ store_dir: {json.dumps(str(self.data_dir / f'n{i}'))}, "
            "max_memory_store: 64MB, max_file_store: 1GB }\n"
            f"authorization {auth}\n"
            f"cluster {{\n  name: substrate\n  listen: 127.0.0.1:{self.route_port(i)}\n"
            f"  authorization {auth}\n  routes: {json.dumps(routes)}\n}}\n"
        )

    def start(self) -> None:
        self._fresh_dirs()
        self.ports = free_ports(NATS_PORTS, 3 * self.size)
        password, _ = ensure_secret(self.settings.secrets_dir, NATS_PASSWORD)
        self.nodes = []
        for i in range(self.size):
            conf = self.conf_dir / f"n{i}.conf"
            write_private(conf, self._conf(i, password))
            node = Node(f"nats n{i}", self.client_port(i), ["nats-server", "-c", str(conf)],
                        self.conf_dir / f"n{i}.log")
            node.start()
            self.nodes.append(node)
        _wait("NATS cluster (JetStream meta leader)", self.has_meta_leader, self.nodes)

    def has_meta_leader(self) -> bool:
        """Every running node knows the JetStream meta leader."""
        for i, node in enumerate(self.nodes):
            if node.running:
                jsz = httpx.get(f"http://127.0.0.1:{self.monitor_port(i)}/jsz",
                                timeout=2).json()
                if not (jsz.get("meta_cluster") or {}).get("leader"):
                    return False
        return True

    def kill(self, i: int) -> None:
        """Crash node ``i`` (SIGKILL); the others keep the cluster's JetStream quorum."""
        self.nodes[i].stop(kill=True)


class RedisCluster(_Cluster):
    """``size`` redis-servers with ``cluster-enabled yes``, joined as masters without
    replicas by ``redis-cli --cluster create``."""

    kind = "redis"

    def port(self, i: int) -> int:
        return self.ports[i]

    def bus_port(self, i: int) -> int:
        return self.ports[self.size + i]

    @property
    def url(self) -> str:
        """REDIS_URL for a client (a startup node; REDIS_CLUSTER=1 finds the rest)."""
        return f"redis://127.0.0.1:{self.port(0)}/0"

    def _conf(self, i: int, password: str) -> str:
        return (
            "# Written by substrate/stack/local_cluster.py; a test cluster node.\n"
            f"user default off\nuser {REDIS_USER} on >{password} ~* &* +@all\n"
            f"bind 127.0.0.1\nport {self.port(i)}\nprotected-mode yes\n"
            f"cluster-enabled yes\ncluster-port {self.bus_port(i)}\n"
            f"cluster-config-file nodes.conf\ncluster-node-timeout 3000\n"
            f"dir {self.data_dir / f'r{i}'}\nappendonly no\nsave \"\"\n"
            "maxmemory 128mb\nmaxmemory-policy volatile-lru\n"
        )

    def start(self) -> None:
        self._fresh_dirs()
        self.ports = free_ports(REDIS_PORTS, 2 * self.size)
        password, _ = ensure_secret(self.settings.secrets_dir, REDIS_PASSWORD)
        self.nodes = []
        for i in range(self.size):
            (self.data_dir / f"r{i}").mkdir()
            conf = self.conf_dir / f"r{i}.conf"
            write_private(conf, self._conf(i, password))
            node = Node(f"redis r{i}", self.port(i), ["redis-server", str(conf)],
                        self.conf_dir / f"r{i}.log")
            node.start()
            self.nodes.append(node)
        _wait("Redis nodes", lambda: all(self._client(i).ping() for i in range(self.size)),
              self.nodes)
        self._create(password)
        _wait("Redis Cluster (cluster_state:ok)", self.ready, self.nodes)

    def _client(self, i: int) -> redis.Redis:
        password = ensure_secret(self.settings.secrets_dir, REDIS_PASSWORD)[0]
        return redis.Redis(host="127.0.0.1", port=self.port(i), username=REDIS_USER,
                           password=password, socket_timeout=2)

    def _create(self, password: str) -> None:
        """The password goes by REDISCLI_AUTH, never on the command line."""
        nodes = [f"127.0.0.1:{self.port(i)}" for i in range(self.size)]
        done = subprocess.run(
            ["redis-cli", "--user", REDIS_USER, "--cluster", "create", *nodes,
             "--cluster-replicas", "0", "--cluster-yes"],
            env={"REDISCLI_AUTH": password, "PATH": "/usr/bin:/bin"}, capture_output=True,
            text=True, timeout=60, check=False,
        )
        if done.returncode != 0:
            raise StackError(f"redis-cli --cluster create failed:\n{done.stdout}{done.stderr}")

    def ready(self) -> bool:
        for i in range(self.size):
            client = self._client(i)
            try:
                info: dict[str, str] = client.cluster("INFO")  # type: ignore[assignment]
            finally:
                client.close()
            if info.get("cluster_state") != "ok":
                return False
        return True


def main() -> int:
    settings = Settings.from_env()
    with NatsCluster(settings) as nats_cluster, RedisCluster(settings) as redis_cluster:
        print(f"NATS_URL={nats_cluster.url}\nREDIS_URL={redis_cluster.url}")
        print("REDIS_CLUSTER=1\n(Enter or Ctrl-C stops both clusters)", flush=True)
        with contextlib.suppress(KeyboardInterrupt, EOFError):
            input()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
