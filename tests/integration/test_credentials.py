"""The local parts refuse clients without credentials (issue 10, part 5).

PostgreSQL (SCRAM-SHA-256 over TCP and the Unix socket), Redis (ACL user ``substrate``, the
default user off) and NATS (user/password) each refuse no credentials and a wrong password, and
accept the generated ones from ``$SUBSTRATE_HOME/secrets``. A PostgreSQL data directory made with
trust authentication (as before this change) is upgraded in place by the part's start.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import nats
import psycopg
import pytest
import redis
from nats.errors import Error as NatsError

from substrate.settings import NATS_USER, REDIS_USER, Settings
from substrate.stack.credentials import NATS_PASSWORD, POSTGRES_PASSWORD, REDIS_PASSWORD
from substrate.stack.postgres import HBA_MARKER, PG_USER, PostgresPart, pg_bin
from tests.support.local_procs import free_port

WRONG = "not-the-password"


def _quiet(_message: str) -> None:
    return None


# --- secrets ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [POSTGRES_PASSWORD, REDIS_PASSWORD, NATS_PASSWORD])
def test_generated_secrets_are_private_files(stack: Settings, name: str) -> None:
    path = stack.secrets_dir / name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(stack.secrets_dir.stat().st_mode) == 0o700
    assert len(path.read_text().strip()) >= 32


def test_settings_carry_the_generated_credentials(stack: Settings) -> None:
    assert urlsplit(stack.postgres_dsn).password == (stack.secrets_dir / POSTGRES_PASSWORD
                                                     ).read_text().strip()
    assert urlsplit(stack.redis_url).username == REDIS_USER
    assert urlsplit(stack.nats_url).username == NATS_USER


# --- PostgreSQL ------------------------------------------------------------------------------
def _pg(stack: Settings, password: str | None, host: str = "127.0.0.1") -> None:
    kwargs = {"password": password} if password is not None else {}
    with psycopg.connect(host=host, port=stack.postgres_port, user=PG_USER, dbname="postgres",
                         connect_timeout=5, **kwargs) as conn:
        conn.execute("SELECT 1")


def test_postgres_refuses_a_client_without_a_password(stack: Settings) -> None:
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        _pg(stack, None)


def test_postgres_refuses_a_wrong_password(stack: Settings) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _pg(stack, WRONG)


def test_postgres_unix_socket_is_not_trusted_either(stack: Settings) -> None:
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        _pg(stack, None, host=str(stack.run_dir / "pgsock"))


def test_postgres_accepts_the_generated_password_stored_as_scram(stack: Settings) -> None:
    password = (stack.secrets_dir / POSTGRES_PASSWORD).read_text().strip()
    _pg(stack, password)
    with psycopg.connect(stack.postgres_dsn) as conn:
        row = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                           (PG_USER,)).fetchone()
        methods = conn.execute("SELECT DISTINCT auth_method FROM pg_hba_file_rules").fetchall()
    assert row is not None and str(row[0]).startswith("SCRAM-SHA-256$")
    assert methods == [("scram-sha-256",)]


def test_a_trust_data_directory_is_upgraded_in_place(tmp_path: Path) -> None:
    """A data directory from before (initdb --auth=trust) keeps its data and gets a password."""
    settings = Settings.from_env({"SUBSTRATE_HOME": str(tmp_path / "home"),
                                  "POSTGRES_PORT": str(free_port())})
    part = PostgresPart(settings, _quiet)
    part._ensure_user()
    part.pgdata.mkdir(parents=True)
    part._ensure_traversable()
    part._chown(part.pgdata)
    part.pgdata.chmod(0o700)
    subprocess.run([str(pg_bin() / "initdb"), "-D", str(part.pgdata), "-U", PG_USER,
                    "--auth=trust", "--no-instructions"], check=True, capture_output=True,
                   **part.identity())
    assert not part.hba_file.read_text().startswith(HBA_MARKER)
    try:
        assert part.start() is True
        assert part.hba_file.read_text().startswith(HBA_MARKER)
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            _pg(settings, None)
        _pg(settings, (settings.secrets_dir / POSTGRES_PASSWORD).read_text().strip())
        assert part.require_password() is False  # the second time there is nothing to do
        assert part.status().healthy
    finally:
        part.stop()


def test_a_fresh_data_directory_starts_with_scram_only(tmp_path: Path) -> None:
    settings = Settings.from_env({"SUBSTRATE_HOME": str(tmp_path / "home"),
                                  "POSTGRES_PORT": str(free_port())})
    part = PostgresPart(settings, _quiet)
    try:
        assert part.start() is True
        assert part.hba_file.read_text().startswith(HBA_MARKER)
        assert not list(part.pgdata.parent.glob(".initdb-pw-*"))  # the password file is gone
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            _pg(settings, None)
        assert part.require_password() is False
    finally:
        part.stop()


# --- Redis -----------------------------------------------------------------------------------
def _redis(stack: Settings, **auth: str) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=stack.redis_port, socket_timeout=5, **auth)


def test_redis_refuses_a_client_without_credentials(stack: Settings) -> None:
    client = _redis(stack)
    try:
        with pytest.raises(redis.AuthenticationError, match="Authentication required"):
            client.get("substrate:any")
    finally:
        client.close()


@pytest.mark.parametrize("username", [REDIS_USER, "default"])
def test_redis_refuses_a_wrong_password(stack: Settings, username: str) -> None:
    client = _redis(stack, username=username, password=WRONG)
    try:
        with pytest.raises(redis.AuthenticationError):
            client.ping()
    finally:
        client.close()


def test_redis_accepts_the_generated_user(stack: Settings) -> None:
    password = (stack.secrets_dir / REDIS_PASSWORD).read_text().strip()
    for client in (_redis(stack, username=REDIS_USER, password=password),
                   redis.Redis.from_url(stack.redis_url, socket_timeout=5)):
        try:
            assert client.ping() is True
            assert client.acl_whoami() == REDIS_USER
        finally:
            client.close()


# --- NATS ------------------------------------------------------------------------------------
async def _nats(url: str) -> None:
    nc = await nats.connect(url, connect_timeout=5, allow_reconnect=False,
                            max_reconnect_attempts=0)
    try:
        await nc.publish("substrate.test.credentials", b"ok")
        await nc.flush(timeout=5)
    finally:
        await nc.close()


def test_nats_refuses_a_client_without_credentials(stack: Settings) -> None:
    with pytest.raises(NatsError):
        asyncio.run(_nats(f"nats://127.0.0.1:{stack.nats_port}"))


def test_nats_refuses_a_wrong_password(stack: Settings) -> None:
    with pytest.raises(NatsError):
        asyncio.run(_nats(f"nats://{NATS_USER}:{WRONG}@127.0.0.1:{stack.nats_port}"))


def test_nats_accepts_the_generated_user(stack: Settings) -> None:
    asyncio.run(_nats(stack.nats_url))


# --- Neo4j -----------------------------------------------------------------------------------
@pytest.mark.parametrize("password", ["-hLooksLikeHelp_0123456789abcdef",
                                      "-vLooksLikeAnOption_0123456789ab",
                                      "--long-option-like-0123456789ab"])
def test_neo4j_initial_password_that_looks_like_an_option(
        stack: Settings, tmp_path: Path, password: str) -> None:
    """A generated password may begin with ``-`` (URL-safe base64). neo4j-admin took one
    beginning with ``-h`` for ``--help``: it printed its usage, exited 0 and wrote nothing, so
    the first start kept neo4j's default password and every check was refused (a CI run
    spent its whole start timeout on it)."""
    from substrate.stack.neo4j_server import Neo4jPart

    settings = Settings.from_env({**os.environ, "SUBSTRATE_HOME": str(tmp_path)})
    part = Neo4jPart(settings, _quiet)
    part.root.mkdir()
    (part.root / "lib").symlink_to(Neo4jPart(stack, _quiet).root / "lib")
    part.conf_dir.mkdir()
    (part.conf_dir / "neo4j.conf").write_text(part.neo4j_conf())

    part.set_initial_password(password)

    assert part.auth_file.read_text().startswith("neo4j:SHA-256,")
