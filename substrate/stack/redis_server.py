"""Redis 7 from Debian's ``redis-server``, on loopback, its dump file in the state directory."""

from __future__ import annotations

import shutil
from typing import Any

import redis

from substrate.errors import StackError
from substrate.stack.part import Part


class RedisPart(Part):
    name = "redis"
    start_timeout = 30.0

    def ports(self) -> list[int]:
        return [self.settings.redis_port]

    def address(self) -> str:
        return self.settings.redis_url

    def install(self) -> None:
        if shutil.which("redis-server") is None:
            raise StackError(
                "redis-server is not installed; run `make system-deps` "
                "(apt-get install -y redis-server)"
            )
        self.settings.data_dir("redis").mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [
            "redis-server", "--bind", "127.0.0.1", "--port", str(self.settings.redis_port),
            "--dir", str(self.settings.data_dir("redis")), "--save", "300 10",
            "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no",
            "--maxmemory", "1gb", "--maxmemory-policy", "volatile-lru",
        ]

    def check(self) -> str:
        client = redis.Redis.from_url(self.settings.redis_url, socket_timeout=2)
        try:
            info: dict[str, Any] = client.info("server")  # type: ignore[assignment]
        finally:
            client.close()
        return str(info["redis_version"])
