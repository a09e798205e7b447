"""Fixtures shared by the integration tests: connections to the real parts of the stack."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from neo4j import Driver

from substrate.db import neo4j_driver
from substrate.settings import Settings


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
