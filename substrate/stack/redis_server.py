"""Redis 7 from Debian's ``redis-server``, on loopback, its dump file in the state directory.

Access needs the ACL user ``substrate`` and the password generated into
``secrets/redis_password``; the ``default`` user is off, so a client without credentials gets
NOAUTH. The ACL lines are in ``run/redis.conf`` (0600), not on the command line (``ps`` shows
that to every local user). A Redis started before without a password fails the health check
(WRONGPASS) and is restarted with the configuration by ``up``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import redis

from substrate.errors import StackError
from substrate.settings import REDIS_USER, redact_url
from substrate.stack.credentials import REDIS_PASSWORD, ensure_secret, write_private
from substrate.stack.part import Part


class RedisPart(Part):
    name = "redis"
    start_timeout = 30.0

    def ports(self) -> list[int]:
        return [self.settings.redis_port]

    def address(self) -> str:
        return redact_url(self.settings.redis_url)

    @property
    def conf_file(self) -> Path:
        return self.settings.run_dir / "redis.conf"

    def start(self) -> bool:
        ensure_secret(self.settings.secrets_dir, REDIS_PASSWORD)  # check() connects with it
        return super().start()

    def install(self) -> None:
        if shutil.which("redis-server") is None:
            raise StackError(
                "redis-server is not installed; run `make system-deps` "
                "(apt-get install -y redis-server)"
            )
        self.settings.data_dir("redis").mkdir(parents=True, exist_ok=True)
        password, _ = ensure_secret(self.settings.secrets_dir, REDIS_PASSWORD)
        write_private(self.conf_file, (
            "# Written by substrate/stack/redis_server.py at every start; edits are overwritten.\n"
            "user default off\n"
            f"user {REDIS_USER} on >{password} ~* &* +@all\n"
        ))

    def command(self) -> list[str]:
        return [
            "redis-server", str(self.conf_file),
            "--bind", "127.0.0.1", "--port", str(self.settings.redis_port),
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
