"""Fixtures shared by the integration tests: connections to the real parts of the stack."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from neo4j import Driver

from substrate.db import neo4j_driver
from substrate.graph.writer import GraphWriter
from substrate.settings import Settings
from tests.support.graphstate import drop_tenant_graph, new_tenant


@pytest.fixture(scope="session")
def driver(stack: Settings) -> Iterator[Driver]:
    drv = neo4j_driver(stack)
    try:
        yield drv
    finally:
        drv.close()


@pytest.fixture
def pg(stack: Settings) -> Iterator[psycopg.Connection]:
    with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def tenants(driver: Driver) -> Iterator[tuple[str, str]]:
    """Two throwaway tenants, their graphs dropped afterwards."""
    pair = (new_tenant("pair-a"), new_tenant("pair-b"))
    yield pair
    for name in pair:
        drop_tenant_graph(driver, name)


@pytest.fixture(scope="module")
def writer(stack: Settings, driver: Driver) -> GraphWriter:
    """The write path (test modules that need another one define their own)."""
    return GraphWriter(stack, driver)
