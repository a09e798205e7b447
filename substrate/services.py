"""The long-lived resources of a running service, created once and passed explicitly."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from neo4j import AsyncDriver, AsyncGraphDatabase, Driver

from substrate.cypher import CypherLibrary
from substrate.db import (
    NEO4J_ACQUIRE_S,
    NEO4J_CONNECT_S,
    NEO4J_LIVENESS_S,
    NEO4J_RETRY_S,
    neo4j_driver,
)
from substrate.graph.ontology import Ontology, load_ontology
from substrate.settings import Settings


@dataclass
class Services:
    settings: Settings
    driver: Driver
    async_driver: AsyncDriver
    cypher: CypherLibrary
    ontology: Ontology
    _embedder: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def embedder(self) -> Any:
        """The configured embedder, loaded on first use (the local model takes seconds)."""
        with self._lock:
            if self._embedder is None:
                from substrate.embeddings import make_embedder

                self._embedder = make_embedder(self.settings)
            return self._embedder

    async def aclose(self) -> None:
        await self.async_driver.close()
        self.driver.close()


def open_services(settings: Settings, check_templates: bool = True) -> Services:
    driver = neo4j_driver(settings)
    cypher = CypherLibrary.load()
    if check_templates:
        cypher.check(driver)  # refuse to start on a broken template
    async_driver = AsyncGraphDatabase.driver(
        settings.neo4j_uri, auth=(settings.neo4j_user, settings.neo4j_password),
        connection_timeout=NEO4J_CONNECT_S, connection_acquisition_timeout=NEO4J_ACQUIRE_S,
        max_transaction_retry_time=NEO4J_RETRY_S, liveness_check_timeout=NEO4J_LIVENESS_S,
        notifications_min_severity="OFF",
    )
    return Services(settings, driver, async_driver, cypher, load_ontology())
