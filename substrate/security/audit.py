"""The policy audit trail: one ``policy_audit`` row per decision (allowed, denied, redacted).

Every decision of the policy layer — authentication refused, a grant narrowed or exceeded, a
redaction applied, an OPA verdict — is recorded with the principal, the request id and the
reason. Rows are written on the caller's connection (sync) or the gateway's pool (async).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from substrate.observability.metrics import count_policy_decisions

Decision = Literal["allowed", "denied", "redacted"]

_INSERT = (
    "INSERT INTO policy_audit (principal, request_id, tenant_id, action, decision, reason, detail)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
)


@dataclass(frozen=True)
class PolicyDecision:
    principal: str
    request_id: str
    action: str  # e.g. "authenticate", "read:/search", "redact", "write:/queue/approve"
    decision: Decision
    reason: str
    tenant: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def row(self) -> tuple[Any, ...]:
        return (self.principal, self.request_id, self.tenant, self.action, self.decision,
                self.reason, Jsonb(self.detail))


def record_sync(conn: psycopg.Connection[Any], *decisions: PolicyDecision) -> None:
    count_policy_decisions(decisions)
    with conn.cursor() as cur:
        cur.executemany(_INSERT, [d.row() for d in decisions])


async def record(pool: AsyncConnectionPool[Any], *decisions: PolicyDecision) -> None:
    if not decisions:
        return
    count_policy_decisions(decisions)
    async with pool.connection() as conn, conn.cursor() as cur:
        await cur.executemany(_INSERT, [d.row() for d in decisions])


QUERY_SQL = (
    "SELECT id, at, principal, request_id, tenant_id, action, decision, reason, detail "
    "FROM policy_audit WHERE (%(principal)s::text IS NULL OR principal = %(principal)s) "
    "AND (%(request_id)s::text IS NULL OR request_id = %(request_id)s) "
    "AND (%(decision)s::text IS NULL OR decision = %(decision)s) "
    "AND (%(before)s::bigint IS NULL OR id < %(before)s) "
    "ORDER BY id DESC LIMIT %(limit)s"
)


async def query(pool: AsyncConnectionPool[Any], *, principal: str | None = None,
                request_id: str | None = None, decision: str | None = None,
                before: int | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Newest first; ``before`` (an id) pages backwards."""
    params = {"principal": principal, "request_id": request_id, "decision": decision,
              "before": before, "limit": limit}
    async with pool.connection() as conn:
        rows = await (await conn.execute(QUERY_SQL, params)).fetchall()
    return [{"id": r[0], "at": r[1].isoformat(), "principal": r[2], "request_id": r[3],
             "tenant": r[4], "action": r[5], "decision": r[6], "reason": r[7],
             "detail": r[8]} for r in rows]
