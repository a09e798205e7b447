"""``substrate up``'s local admin key file: made once, kept while the database knows the key,
made again when it does not (the data directory was reset and the file kept), and left
alone (reported) when an admin revoked it."""

from __future__ import annotations

import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from substrate import cli_keys
from substrate.security import apikeys
from substrate.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
def key_file(stack: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    name = f"admin_api_key-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(cli_keys, "ADMIN_KEY_FILE", name)
    path = stack.secrets_dir / name
    yield path
    path.unlink(missing_ok=True)


def _standing(stack: Settings, key: str) -> str:
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        return apikeys.standing(conn, key)


def test_made_once_then_kept(stack: Settings, key_file: Path) -> None:
    assert cli_keys.ensure_admin_key(stack) == (str(key_file), "new")
    key = key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert _standing(stack, key) == "valid"
    assert cli_keys.ensure_admin_key(stack) == (str(key_file), "valid")
    assert key_file.read_text().strip() == key


def test_a_key_the_database_does_not_know_is_replaced(stack: Settings, key_file: Path) -> None:
    # well formed, but this database never had it (as after a reset of the data directory)
    stale = f"sk_{'a' * 12}_{'b' * 43}"
    key_file.write_text(stale + "\n")
    assert _standing(stack, stale) == "unknown"
    assert cli_keys.ensure_admin_key(stack) == (str(key_file), "new")
    fresh = key_file.read_text().strip()
    assert fresh != stale and _standing(stack, fresh) == "valid"
    # a file that is not a key at all, or a known id with a wrong secret: replaced too
    for wrong in ("not a key", fresh[:-1] + ("x" if fresh[-1] != "x" else "y")):
        key_file.write_text(wrong + "\n")
        assert _standing(stack, wrong) == "unknown"
        assert cli_keys.ensure_admin_key(stack)[1] == "new"


def test_a_revoked_key_is_left_and_reported(stack: Settings, key_file: Path) -> None:
    cli_keys.ensure_admin_key(stack)
    key = key_file.read_text().strip()
    match = apikeys.KEY.match(key)
    assert match is not None
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        apikeys.revoke(conn, match["id"])
    assert cli_keys.ensure_admin_key(stack) == (str(key_file), "revoked")
    assert key_file.read_text().strip() == key
