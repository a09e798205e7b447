"""Clearance levels that see the same graph share one run of a job.

A reader at level L sees the nodes classified at L or below (``_macros.j2``, ``node_at``); the
classification is the only level-dependent filter. So two levels see exactly the same graph
when none of the tenant's nodes carries a classification between them — in a tenant with no
classification set at all (the demo), ``internal``, ``confidential`` and ``restricted`` see the
same nodes and ``public`` none. Per group of such levels a job runs once, at the lowest level of
the group, and its stored rows are copied to the other levels of the group (same ids, text and
embeddings; the clearance column changed): the cost of a run per *distinct* view, not per level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from gds_jobs.runtime import JobContext
from substrate.retrieval.scope import CLASSIFICATIONS, ReadScope, clearance_for
from substrate.settings import Settings

# the tables of per-level results: (table, keyed by snapshot) — community_state is one state
# per (tenant, clearance), replaced whole
SNAPSHOT_TABLES = ("community_summaries", "raptor_nodes", "risk_rankings", "gds_node_metrics")
STATE_TABLE = "community_state"


def level_groups(ctx: JobContext, scope: ReadScope,
                 levels: Sequence[str] = CLASSIFICATIONS) -> list[list[str]]:
    """``levels`` grouped by the classifications of the tenant's nodes each one sees (in
    order; the first level of a group is the one a job runs at)."""
    present = {str(r["classification"]) for r in ctx.rows("gds/classifications", scope)}
    groups: dict[frozenset[str], list[str]] = {}
    for level in levels:
        groups.setdefault(frozenset(present & set(clearance_for(level))), []).append(level)
    return list(groups.values())


def _columns(conn: psycopg.Connection[Any], table: str) -> list[str]:
    rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE "
                        "table_schema = current_schema() AND table_name = %s "
                        "ORDER BY ordinal_position", (table,)).fetchall()
    return [str(r[0]) for r in rows]


def copy_level(settings: Settings, tables: Sequence[str], tenant: str, version: int,
               source: str, target: str) -> int:
    """Replace ``target``'s rows of ``tables`` (at ``version``; ``community_state``: all of
    them) with copies of ``source``'s; returns the rows copied."""
    copied = 0
    with psycopg.connect(settings.postgres_dsn) as conn, conn.transaction():
        for table in tables:
            cols = _columns(conn, table)
            where = "tenant_id = %(tenant)s AND clearance = {level}" + (
                "" if table == STATE_TABLE else " AND snapshot_version = %(v)s")
            params = {"tenant": tenant, "v": version, "source": source, "target": target}
            conn.execute(sql.SQL("DELETE FROM {t} WHERE " + where).format(
                t=sql.Identifier(table), level=sql.Placeholder("target")), params)
            cur = conn.execute(sql.SQL(
                "INSERT INTO {t} ({names}) SELECT {values} FROM {t} WHERE " + where).format(
                t=sql.Identifier(table),
                names=sql.SQL(", ").join(sql.Identifier(c) for c in cols),
                values=sql.SQL(", ").join(sql.Placeholder("target") if c == "clearance"
                                          else sql.Identifier(c) for c in cols),
                level=sql.Placeholder("source")), params)
            copied += cur.rowcount
    return copied
