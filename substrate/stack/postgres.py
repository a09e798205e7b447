"""Embedded PostgreSQL 16 + pgvector from the ``pgserver`` wheel's bundled binaries.

We use the wheel's binaries directly (not its Python server wrapper) so the server listens on
127.0.0.1:POSTGRES_PORT like any other PostgreSQL, and is supervised like every other part.
With ``POSTGRES_DSN`` set, no local server is started and the DSN is used as is.

Authentication is SCRAM-SHA-256 for every connection, TCP and the Unix socket alike (no trust,
no peer: the supervisor connects over TCP with the password like every other client). The
password of the ``postgres`` superuser is generated at first ``up`` into
``secrets/postgres_password``. A data directory created before (``initdb --auth=trust``) is
upgraded in place on ``up``: the password is set over the still-trusted connection, then
``pg_hba.conf`` is rewritten and reloaded.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

import psycopg
from psycopg import sql

from substrate.errors import StackError
from substrate.settings import redact_url
from substrate.stack.credentials import POSTGRES_PASSWORD, ensure_secret, write_private
from substrate.stack.part import Part

PG_USER = "postgres"
ROOT_RUNAS = "pgserver"  # PostgreSQL refuses to run as root
HBA_MARKER = "# substrate: SCRAM-SHA-256 password authentication for every connection"
HBA_CONF = f"""{HBA_MARKER}
# Written by substrate/stack/postgres.py; edits are overwritten by `substrate up`.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
"""


def pg_bin() -> Path:
    # find the wheel without importing it: its __init__ warns (platformdirs RuntimeDirWarning)
    # when XDG_RUNTIME_DIR is unset, an error under the test suite's filterwarnings=error
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise StackError("the pgserver wheel is not installed; run `make venv`")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


class PostgresPart(Part):
    name = "postgres"
    start_timeout = 60.0

    @property
    def pgdata(self) -> Path:
        return self.settings.data_dir("postgres")

    def ports(self) -> list[int]:
        return [self.settings.postgres_port]

    @property
    def hba_file(self) -> Path:
        return self.pgdata / "pg_hba.conf"

    def address(self) -> str:
        return redact_url(self.settings.postgres_dsn)

    def run_as(self) -> str | None:
        return ROOT_RUNAS if os.geteuid() == 0 else None

    def _ensure_user(self) -> None:
        user = self.run_as()
        if user is None:
            return
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", user], check=True)

    def _chown(self, path: Path) -> None:
        user = self.run_as()
        if user is not None:
            shutil.chown(path, user, user)

    def _ensure_traversable(self) -> None:
        """As root, PostgreSQL runs as ``pgserver``: it must be able to reach its binaries and
        data through every parent folder (a clone under a 0700 temp dir would hide them).
        Only the search bit (o+x) is added, and only where it is missing."""
        if self.run_as() is None:
            return
        for target in (pg_bin(), self.pgdata):
            for folder in reversed(target.resolve().parents):
                mode = folder.stat().st_mode
                if not mode & stat.S_IXOTH:
                    self.progress(f"[postgres] allowing {ROOT_RUNAS} to traverse {folder} (o+x)")
                    folder.chmod(mode | stat.S_IXOTH)

    def install(self) -> None:
        self._ensure_user()
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._ensure_traversable()
        if (self.pgdata / "PG_VERSION").exists():
            return
        self.progress(f"[postgres] initdb {self.pgdata} (scram-sha-256)")
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._chown(self.pgdata)
        self.pgdata.chmod(0o700)
        password, _ = ensure_secret(self.settings.secrets_dir, POSTGRES_PASSWORD)
        # initdb reads the password from a file; the server's user must be able to read it
        pwfile = self.pgdata.parent / f".initdb-pw-{os.getpid()}"
        write_private(pwfile, password + "\n")
        self._chown(pwfile)
        try:
            result = subprocess.run(
                [str(pg_bin() / "initdb"), "-D", str(self.pgdata), "-U", PG_USER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "--encoding=utf8",
                 "--no-instructions"],
                capture_output=True, text=True, check=False, **self.identity(),
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise StackError(f"initdb failed: {result.stderr.strip()}")
        self.hba_file.write_text(HBA_CONF)

    def command(self) -> list[str]:
        sock = self.settings.run_dir / "pgsock"
        sock.mkdir(parents=True, exist_ok=True)
        self._chown(sock)
        return [
            str(pg_bin() / "postgres"), "-D", str(self.pgdata),
            "-p", str(self.settings.postgres_port), "-h", "127.0.0.1", "-k", str(sock),
            "-c", "shared_buffers=512MB", "-c", "max_connections=100",
            "-c", "password_encryption=scram-sha-256",
            "-c", "log_min_messages=warning",
        ]

    def start(self) -> bool:
        if not self.settings.postgres_embedded:
            return False  # external DSN: nothing to run here
        ensure_secret(self.settings.secrets_dir, POSTGRES_PASSWORD)
        started = super().start()  # the log is opened by us and handed over as a descriptor
        self.require_password()
        return started

    def require_password(self) -> bool:
        """Upgrade a data directory made with trust authentication: set the generated
        password (SCRAM), then rewrite pg_hba.conf and reload. True when it changed anything."""
        if self.hba_file.read_text().startswith(HBA_MARKER):
            return False
        password, _ = ensure_secret(self.settings.secrets_dir, POSTGRES_PASSWORD)
        # the server still trusts every loopback client, so this connection needs no password
        with psycopg.connect(self.settings.postgres_dsn, autocommit=True,
                             connect_timeout=5) as conn:
            conn.execute("SET password_encryption = 'scram-sha-256'")
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(PG_USER), sql.Literal(password)))
            self.hba_file.write_text(HBA_CONF)
            conn.execute("SELECT pg_reload_conf()")
        self.progress(f"[postgres] trust authentication replaced by scram-sha-256 (password in "
                      f"{self.settings.secrets_dir / POSTGRES_PASSWORD})")
        return True

    def stop(self, timeout: float = 30.0) -> bool:
        if not self.settings.postgres_embedded:
            return False
        return super().stop(timeout)

    def check(self) -> str:
        with psycopg.connect(self.settings.postgres_dsn, connect_timeout=3) as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'), "
                "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
            ).fetchone()
        if row is None or row[1] is None:
            raise StackError("PostgreSQL is up but the pgvector extension is not available")
        return f"{row[0]} (pgvector {row[1]})"
