"""Settings for clustered engines: NATS_URL as a list of servers, REDIS_CLUSTER."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from substrate.cache import redis_client
from substrate.settings import Settings
from substrate.stack.credentials import NATS_PASSWORD, ensure_secret

CLUSTER = "nats://127.0.0.1:50000, nats://127.0.0.1:50001,nats://127.0.0.1:50002"


def _settings(home: Path, **env: str) -> Settings:
    return Settings.from_env({"SUBSTRATE_HOME": str(home), **env})


def test_every_server_of_a_list_gets_the_credentials_of_one(tmp_path: Path) -> None:
    s = _settings(tmp_path, NATS_URL=CLUSTER)
    password, _ = ensure_secret(s.secrets_dir, NATS_PASSWORD)
    assert s.nats_servers == [f"nats://substrate:{password}@127.0.0.1:{port}"
                              for port in (50000, 50001, 50002)]
    assert s.nats_url == s.nats_servers[0] and s.nats_port == 50000


def test_a_list_keeps_explicit_and_remote_credentials_apart(tmp_path: Path) -> None:
    s = _settings(tmp_path, NATS_URL="nats://u:p@nats-0:4222,nats://nats-1:4222,"
                                     "nats://127.0.0.1:4223")
    password, _ = ensure_secret(s.secrets_dir, NATS_PASSWORD)
    assert s.nats_servers == ["nats://u:p@nats-0:4222", "nats://nats-1:4222",
                              f"nats://substrate:{password}@127.0.0.1:4223"]


def test_a_single_server_is_a_list_of_one(tmp_path: Path) -> None:
    assert _settings(tmp_path).nats_servers == ["nats://127.0.0.1:4222"]


@pytest.mark.parametrize(("value", "cluster"), [("0", False), ("1", True), ("", False),
                                                ("true", True), ("off", False)])
def test_redis_cluster_flag(tmp_path: Path, value: str, cluster: bool) -> None:
    assert _settings(tmp_path, REDIS_CLUSTER=value).redis_cluster is cluster


def test_the_cache_client_follows_the_flag(tmp_path: Path) -> None:
    async def clients() -> tuple[object, object]:
        single = redis_client(_settings(tmp_path))
        clustered = redis_client(_settings(tmp_path, REDIS_CLUSTER="1",
                                           REDIS_URL="redis://127.0.0.1:50100/0"))
        await single.aclose()
        await clustered.aclose()  # neither connected: no server needed
        return single, clustered

    single, clustered = asyncio.run(clients())
    assert isinstance(single, aioredis.Redis)
    assert isinstance(clustered, aioredis.RedisCluster)
