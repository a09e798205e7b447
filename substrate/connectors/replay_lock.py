"""One replay per tenant and source at a time, and snapshot times that never go back.

Two replays of one repository into one tenant would interleave their snapshots with
out-of-order times. :func:`replay_lock` takes a PostgreSQL session advisory lock keyed by
tenant and source for the whole replay (released when the connection closes, also after a
crash) and refuses a second caller at once with :class:`Conflict`. :func:`latest_valid_at`
is where a replay starts its clock: each snapshot is stamped ``max(commit time, previous)``
(committer times along a first-parent history are not monotonic after rebases).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import psycopg

from substrate.errors import Conflict

_KEY = "SELECT hashtextextended(%s, 0)"


@contextmanager
def replay_lock(dsn: str, tenant: str, source: str) -> Iterator[psycopg.Connection]:
    """Hold the replay lock of ``(tenant, source)``; :class:`Conflict` if another holds it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        key = conn.execute(_KEY, (f"replay\x1f{tenant}\x1f{source}",)).fetchone()
        assert key is not None
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key[0],)).fetchone()
        if not row or not row[0]:
            raise Conflict(f"another replay of {source} into tenant {tenant} is running; "
                           "wait for it to finish, then run again (already replayed commits "
                           "are skipped)")
        try:
            yield conn
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key[0],))


def latest_valid_at(conn: psycopg.Connection, tenant: str, source: str) -> datetime | None:
    """The time of the newest snapshot of ``source`` in ``tenant`` (one index probe)."""
    row = conn.execute(
        "SELECT valid_at FROM snapshots WHERE tenant_id = %s AND source = %s"
        " ORDER BY valid_at DESC LIMIT 1", (tenant, source),
    ).fetchone()
    return row[0] if row else None
