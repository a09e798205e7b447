"""Finish or undo what a crashed writer left between PostgreSQL and Neo4j.

A write is: intent committed in PostgreSQL -> Neo4j transaction with a ``WriteMark`` ->
snapshot recorded from the intent -> mark cleared. Under the writers' lock an intent left
behind belongs to a dead writer: its mark in Neo4j proves the graph has the batch, so the
snapshot is recorded (roll forward); no mark means the Neo4j transaction rolled back, so the
intent is dropped (no trace). Runs before every write, at start-up and from the outbox loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import psycopg
from neo4j import Driver

from substrate.cypher import CypherLibrary
from substrate.graph import intents, snapshots

log = logging.getLogger(__name__)


@dataclass
class Reconciled:
    completed: list[int] = field(default_factory=list)
    discarded: list[int] = field(default_factory=list)


def write_marks(driver: Driver, cypher: CypherLibrary) -> set[int]:
    records, _, _ = driver.execute_query(cypher.text("graph/write_marks"), routing_="r")
    return {int(r["version"]) for r in records}


def clear_marks(driver: Driver, cypher: CypherLibrary, through: int) -> None:
    driver.execute_query(cypher.text("graph/clear_write_marks"), {"through": through})


def reconcile_locked(conn: psycopg.Connection[Any], driver: Driver,
                     cypher: CypherLibrary) -> Reconciled:
    """With the writers' lock held on ``conn`` (autocommit)."""
    out = Reconciled()
    marks = write_marks(driver, cypher)
    for intent in intents.pending(conn):
        if intent.version in marks:
            intents.complete(conn, intent.version, reconciled=True)
            out.completed.append(intent.version)
        else:
            intents.discard(conn, intent.version)
            out.discarded.append(intent.version)
    if marks:
        clear_marks(driver, cypher, snapshots.latest_version(conn))
    if out.completed or out.discarded:
        log.warning("reconciled interrupted writes: completed %s, discarded %s",
                    out.completed, out.discarded)
    return out


def reconcile(dsn: str, driver: Driver, cypher: CypherLibrary, wait: bool = True) -> Reconciled:
    """Take the writers' lock (or, ``wait=False``, skip when a writer holds it) and reconcile."""
    with psycopg.connect(dsn, autocommit=True) as conn, \
            snapshots.writers_lock(conn, wait=wait) as locked:
        return reconcile_locked(conn, driver, cypher) if locked else Reconciled()
