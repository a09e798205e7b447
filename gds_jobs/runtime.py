"""What every job needs: settings, a Neo4j driver, the GDS client, the Cypher library, and the
read scope (tenant, snapshot version, clearance) it runs at."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from graphdatascience import GraphDataScience
from graphdatascience.error.unable_to_connect import UnableToConnectError
from neo4j import Driver

from substrate.cypher import CypherLibrary
from substrate.db import neo4j_driver
from substrate.errors import BadRequest, NotFound, Unavailable
from substrate.graph import snapshots
from substrate.retrieval.scope import ReadScope, clearance_for
from substrate.settings import Settings


@dataclass(frozen=True)
class JobContext:
    settings: Settings
    driver: Driver
    gds: GraphDataScience
    cypher: CypherLibrary

    def rows(self, template: str, scope: ReadScope, ctx: dict[str, Any] | None = None,
             **params: Any) -> list[dict[str, Any]]:
        """Run a read template with the scope's ``$tenant``, ``$v`` and ``$clearance``."""
        query = self.cypher.text(template, **(ctx or {}))
        records, _, _ = self.driver.execute_query(
            query, {**scope.params(), **params}, routing_="r"
        )
        return [r.data() for r in records]


@contextmanager
def job_context(settings: Settings) -> Iterator[JobContext]:
    """A context whose driver is closed on exit. Arrow is off: GDS is reached over Bolt."""
    driver = neo4j_driver(settings)
    try:
        try:
            # GDS's own progress (tqdm bars with percent and ETA) on a terminal only
            gds = GraphDataScience(driver, arrow=False, show_progress=sys.stderr.isatty())
        except UnableToConnectError as exc:
            raise Unavailable(f"Neo4j with GDS at {settings.neo4j_uri} is not reachable") from exc
        yield JobContext(settings, driver, gds, CypherLibrary.load())
    finally:
        driver.close()


def job_scope(settings: Settings, tenant: str, version: int | None = None,
              clearance: str | None = None) -> ReadScope:
    """The scope a job runs at: ``version`` or the tenant's newest snapshot.

    ``clearance`` defaults to ``internal``: what a job derives (community summaries) is read
    later without a per-reader clearance check, so it must not contain more than that.
    """
    with psycopg.connect(settings.postgres_dsn) as conn:
        newest = snapshots.latest_version(conn, tenant)
        latest = snapshots.latest_version(conn)
    if newest == 0:
        raise NotFound(f"tenant {tenant!r} has no snapshots", {"tenant": tenant})
    if version is not None and not 1 <= version <= latest:
        raise BadRequest(f"snapshot_version {version} does not exist", {"latest": latest})
    return ReadScope(tenant, newest if version is None else version,
                     clearance_for(clearance), pinned=True)
