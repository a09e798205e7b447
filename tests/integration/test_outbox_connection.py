"""The outbox publisher asks PostgreSQL for its backlog every second over one kept
connection (a new one each round cost a SCRAM handshake a second in every gateway), and
opens another after that connection breaks."""

from __future__ import annotations

import psycopg
import pytest
from neo4j import Driver

from substrate.cypher import CypherLibrary
from substrate.graph.outbox import OutboxPublisher
from substrate.settings import Settings

pytestmark = pytest.mark.integration


def _backend(publisher: OutboxPublisher) -> int:
    assert publisher._pg is not None
    return int(publisher._pg.info.backend_pid)


def test_rounds_share_one_connection_and_survive_its_loss(stack: Settings,
                                                          driver: Driver) -> None:
    publisher = OutboxPublisher(stack, driver, CypherLibrary.load())
    try:
        publisher.round(with_reconcile=False)
        first = _backend(publisher)
        publisher.round(with_reconcile=False)
        assert _backend(publisher) == first
        assert publisher.status.last_error is None and publisher.status.backlog >= 0

        with psycopg.connect(stack.postgres_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        with pytest.raises(psycopg.OperationalError):
            publisher.round(with_reconcile=False)
        assert publisher._pg is None  # dropped, not reused

        publisher.round(with_reconcile=False)
        assert _backend(publisher) != first
    finally:
        publisher._close()
