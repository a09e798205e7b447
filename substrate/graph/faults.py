"""Fault points of the write path, for the crash-matrix tests.

``SUBSTRATE_FAULT=<point>`` in a writer's environment makes the process exit at once
(``os._exit``: no cleanup, no rollback sent, like a ``kill -9``) when it reaches that point.
A test hook only: unset in production, it costs one dictionary lookup per point.
"""

from __future__ import annotations

import os

EXIT_CODE = 86
POINTS = (
    "after_intent",          # the intent row is committed in PostgreSQL, Neo4j not yet written
    "after_neo4j_commit",    # Neo4j committed (with its write mark), the snapshot not recorded
    "after_snapshot",        # snapshot, change log and audit committed, marks not cleared
    "after_publish",         # the event is on NATS, the outbox row not yet marked published
)


def point(name: str) -> None:
    """Exit the process here when ``SUBSTRATE_FAULT`` names this point."""
    if os.environ.get("SUBSTRATE_FAULT") == name:
        os._exit(EXIT_CODE)
