"""Connections to the data parts, created from Settings and passed explicitly."""

from __future__ import annotations

from neo4j import Driver, GraphDatabase

from substrate.settings import Settings

# Neo4j deadlines: connect, wait for a pooled connection, retry a transient failure, and a
# liveness probe of idle pooled connections (a dead server is noticed at once after it
# returns instead of ~20 s later on a stale socket).
NEO4J_CONNECT_S = 5.0
NEO4J_ACQUIRE_S = 5.0
NEO4J_RETRY_S = 5.0
NEO4J_LIVENESS_S = 2.0


def neo4j_driver(settings: Settings) -> Driver:
    return GraphDatabase.driver(
        settings.neo4j_uri,
        auth=(settings.neo4j_user, settings.neo4j_password),
        connection_timeout=NEO4J_CONNECT_S,
        connection_acquisition_timeout=NEO4J_ACQUIRE_S,
        max_transaction_retry_time=NEO4J_RETRY_S,
        liveness_check_timeout=NEO4J_LIVENESS_S,
        max_connection_pool_size=50,
        notifications_min_severity="OFF",
    )


# PostgreSQL deadlines for request paths: connect, and every statement (ms), well inside the
# gateway's request deadline; PG_ACQUIRE_S bounds the wait for a pooled connection.
PG_CONNECT_TIMEOUT_S = 3
PG_STATEMENT_TIMEOUT_MS = 5000
PG_ACQUIRE_S = 5.0
PG_READ_DEADLINE_S = 5.0  # client side, for a server that accepts but never answers
# The gateway's pooled connections: those deadlines, and a plan made for each execution's
# values. psycopg prepares a statement run 5 times, and PostgreSQL may then keep a generic plan
# that ignores the values: for a change-log window of a 2M-edge tenant that plan took 1.2 s
# where one made for the window took 80 ms (tenants differ in size by orders of magnitude).
PG_READ_OPTIONS = {"connect_timeout": PG_CONNECT_TIMEOUT_S,
                   "options": f"-c statement_timeout={PG_STATEMENT_TIMEOUT_MS} "
                              "-c plan_cache_mode=force_custom_plan"}
