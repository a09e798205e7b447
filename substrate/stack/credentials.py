"""Generated credentials of the local parts, one file each in ``$SUBSTRATE_HOME/secrets`` (0600).

``up`` creates a missing secret once (never overwrites one); :class:`Settings` reads them.
Every generated value is URL-safe (``secrets.token_urlsafe``), so it needs no quoting in a DSN,
a URL or a configuration file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

POSTGRES_PASSWORD = "postgres_password"
REDIS_PASSWORD = "redis_password"
NATS_PASSWORD = "nats_password"
NEO4J_PASSWORD = "neo4j_password"
SECRET_BYTES = 24


def read_secret(secrets_dir: Path, name: str) -> str:
    """The secret's value, or "" when it has not been generated yet."""
    try:
        return (secrets_dir / name).read_text().strip()
    except FileNotFoundError:
        return ""


def ensure_secret(secrets_dir: Path, name: str) -> tuple[str, bool]:
    """The secret's value, generating it first (mode 0600, folder 0700) when missing.
    Returns (value, created). Safe against two ``up`` runs at once (O_EXCL)."""
    value = read_secret(secrets_dir, name)
    if value:
        return value, False
    secrets_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    secrets_dir.chmod(0o700)
    value = secrets.token_urlsafe(SECRET_BYTES)
    try:
        fd = os.open(secrets_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race: use its value
        return read_secret(secrets_dir, name), False
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return value, True


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (a configuration that holds a secret)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
