"""Connection strings built from the generated secrets (and the overrides that win)."""

from __future__ import annotations

import stat
from pathlib import Path

from substrate.settings import Settings, redact_url, with_credentials
from substrate.stack.credentials import (
    NATS_PASSWORD,
    POSTGRES_PASSWORD,
    REDIS_PASSWORD,
    ensure_secret,
    read_secret,
)


def _settings(home: Path, **env: str) -> Settings:
    return Settings.from_env({"SUBSTRATE_HOME": str(home), **env})


def test_without_secrets_the_urls_carry_no_credentials(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    assert s.postgres_dsn == "postgresql://postgres@127.0.0.1:5432/postgres"
    assert s.redis_url == "redis://127.0.0.1:6379/0"
    assert s.nats_url == "nats://127.0.0.1:4222"


def test_generated_secrets_go_into_dsn_and_urls(tmp_path: Path) -> None:
    s = _settings(tmp_path, POSTGRES_PORT="6543", REDIS_URL="redis://localhost:7000/3")
    pg, _ = ensure_secret(s.secrets_dir, POSTGRES_PASSWORD)
    rd, _ = ensure_secret(s.secrets_dir, REDIS_PASSWORD)
    nt, _ = ensure_secret(s.secrets_dir, NATS_PASSWORD)
    assert s.postgres_dsn == f"postgresql://postgres:{pg}@127.0.0.1:6543/postgres"
    assert s.redis_url == f"redis://substrate:{rd}@localhost:7000/3"
    assert s.nats_url == f"nats://substrate:{nt}@127.0.0.1:4222"
    assert (s.redis_port, s.nats_port) == (7000, 4222)


def test_explicit_credentials_and_dsn_win(tmp_path: Path) -> None:
    s = _settings(tmp_path, POSTGRES_DSN="postgresql://app:pw@db:5432/x",
                  REDIS_URL="redis://:given@127.0.0.1:6379/0",
                  NATS_URL="nats://me:given@127.0.0.1:4222")
    for name in (POSTGRES_PASSWORD, REDIS_PASSWORD, NATS_PASSWORD):
        ensure_secret(s.secrets_dir, name)
    assert s.postgres_dsn == "postgresql://app:pw@db:5432/x"
    assert s.redis_url == "redis://:given@127.0.0.1:6379/0"
    assert s.nats_url == "nats://me:given@127.0.0.1:4222"


def test_a_user_without_password_gets_the_generated_one() -> None:
    assert with_credentials("redis://ops@127.0.0.1:1/0", "substrate", "pw") == \
        "redis://ops:pw@127.0.0.1:1/0"
    assert with_credentials("nats://[::1]:4222", "substrate", "pw") == "nats://substrate:pw@[::1]:4222"


def test_a_remote_host_never_gets_the_local_password() -> None:
    assert with_credentials("redis://cache.internal:6379/0", "substrate", "pw") == \
        "redis://cache.internal:6379/0"


def test_redact_hides_only_the_password() -> None:
    assert redact_url("postgresql://postgres:s3cret@127.0.0.1:5432/postgres") == \
        "postgresql://postgres:***@127.0.0.1:5432/postgres"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_ensure_secret_creates_once_with_private_modes(tmp_path: Path) -> None:
    folder = tmp_path / "secrets"
    assert read_secret(folder, REDIS_PASSWORD) == ""
    value, created = ensure_secret(folder, REDIS_PASSWORD)
    assert created and len(value) >= 32
    assert ensure_secret(folder, REDIS_PASSWORD) == (value, False)
    assert stat.S_IMODE((folder / REDIS_PASSWORD).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
