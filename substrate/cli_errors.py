"""What the command line prints for an error that is not a SubstrateError: one line and an
exit code (1 failure, 2 bad input such as a missing file, 3 a part of the stack unreachable),
never a traceback. A real bug still names its type and where it happened."""

from __future__ import annotations

import traceback
from functools import cache

EXIT_FAILURE, EXIT_INPUT, EXIT_UNREACHABLE = 1, 2, 3


@cache
def unreachable() -> dict[type[BaseException], str]:
    """The clients' "cannot reach it" errors by part. Imported on the first failure only: the
    four client libraries take ~1.3 s to import (the Neo4j driver pulls in pandas when it is
    installed), which a command that talks to the gateway (``substrate ask``) never needs."""
    import nats.errors
    import psycopg
    import redis.exceptions
    from neo4j.exceptions import (
        AuthError,
        ConnectionPoolError,
        ServiceUnavailable,
        SessionExpired,
    )

    return {
        ServiceUnavailable: "Neo4j", SessionExpired: "Neo4j", ConnectionPoolError: "Neo4j",
        AuthError: "Neo4j (credentials)",
        psycopg.OperationalError: "PostgreSQL", redis.exceptions.ConnectionError: "Redis",
        redis.exceptions.TimeoutError: "Redis", nats.errors.Error: "NATS",
    }


def cli_failure(exc: BaseException) -> tuple[str, int]:
    """(the line to print after ``error: ``, the exit code)."""
    if isinstance(exc, SystemExit):
        raise exc
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename}", EXIT_INPUT
    if isinstance(exc, IsADirectoryError | NotADirectoryError | PermissionError):
        return f"cannot read {exc.filename}: {exc.strerror}", EXIT_INPUT
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text: {exc}", EXIT_INPUT
    for kind, part in unreachable().items():
        if isinstance(exc, kind):
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            return (f"{part} is unreachable ({first or type(exc).__name__}); is the stack up? "
                    "try `substrate status`"), EXIT_UNREACHABLE
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" at {where[0].filename}:{where[0].lineno}" if where else ""
    return f"{type(exc).__name__}: {str(exc)[:300]}{at}", EXIT_FAILURE
