"""Which tenants exist: a read for an unknown tenant is a 404 naming it, not an empty answer.

A tenant is known when it is the configured default tenant, or PostgreSQL has a snapshot of
it (every ingest that wrote something made one), an item of it in the verification queue
(an ingest whose every record waits for review), or an API key granted to it by name
(a registered tenant that has no data yet answers empty, not 404). Known tenants are
remembered (a tenant's history is never deleted); an unknown name is looked up again on each
request, so a tenant is readable as soon as its first write commits.
"""

from __future__ import annotations

from typing import Any

from psycopg_pool import AsyncConnectionPool

from substrate.errors import NotFound

KNOWN_SQL = (
    "SELECT EXISTS (SELECT 1 FROM snapshots WHERE tenant_id = %(t)s) "
    "OR EXISTS (SELECT 1 FROM verification_queue WHERE tenant_id = %(t)s) "
    "OR EXISTS (SELECT 1 FROM api_keys WHERE %(t)s = ANY (tenants) AND revoked_at IS NULL)"
)


class KnownTenants:
    def __init__(self, default_tenant: str) -> None:
        self._known = {default_tenant}

    def known(self, tenant: str) -> bool:
        return tenant in self._known

    async def check(self, pool: AsyncConnectionPool[Any] | None, tenant: str) -> None:
        """Return if ``tenant`` is known, else raise NotFound naming it."""
        if tenant in self._known or pool is None:
            return
        async with pool.connection() as conn:
            cur = await conn.execute(KNOWN_SQL, {"t": tenant})
            row = await cur.fetchone()
        if not (row and row[0]):
            raise NotFound(f"unknown tenant {tenant!r}: it has no data",
                           {"tenant": tenant})
        self._known.add(tenant)
