"""Connections to the data parts, created from Settings and passed explicitly."""

from __future__ import annotations

from neo4j import Driver, GraphDatabase

from substrate.settings import Settings


def neo4j_driver(settings: Settings) -> Driver:
    return GraphDatabase.driver(
        settings.neo4j_uri,
        auth=(settings.neo4j_user, settings.neo4j_password),
        connection_timeout=5,
        max_connection_pool_size=50,
        notifications_min_severity="OFF",
    )
