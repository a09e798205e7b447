"""An authenticated caller and the grant that bounds every read and write it makes.

Authentication (API keys, OIDC/JWT bearer tokens, a signed upstream token) produces a
:class:`Principal`; the gateway keeps it in ``request.state.principal`` (ASGI
``scope["state"]["principal"]``) and ``request.state.request_id``. Request headers such as
``X-Tenant`` and ``X-Clearance`` may only *narrow* the grant (:meth:`Principal.tenant_for`,
:meth:`Principal.clearance_for`).
"""

from __future__ import annotations

from dataclasses import dataclass

from substrate.errors import Forbidden
from substrate.retrieval.scope import CLASSIFICATIONS

ROLES = ("reader", "reviewer", "admin")
ALL_TENANTS = "*"


@dataclass(frozen=True)
class Principal:
    id: str  # "key:<key id>", "jwt:<issuer>|<subject>", "upstream:<subject>"
    kind: str  # "api_key" | "jwt" | "upstream"
    tenants: frozenset[str]  # tenant ids, or {"*"} for every tenant
    max_clearance: str  # one of CLASSIFICATIONS
    roles: frozenset[str]  # subset of ROLES; "admin" implies "reviewer" implies "reader"
    jurisdictions: frozenset[str] = frozenset()  # empty: no jurisdiction restriction
    default_tenant: str | None = None

    def has_role(self, role: str) -> bool:
        held = {ROLES.index(r) for r in self.roles if r in ROLES}
        return bool(held) and max(held) >= ROLES.index(role)

    def require_role(self, role: str) -> None:
        if not self.has_role(role):
            raise Forbidden(f"this action needs the {role!r} role", {"principal": self.id})

    def may_read_tenant(self, tenant: str) -> bool:
        return ALL_TENANTS in self.tenants or tenant in self.tenants

    def tenant_for(self, requested: str | None, fallback: str) -> str:
        """The tenant of a request: the requested one if granted, else 403."""
        tenant = requested if requested is not None else (self.default_tenant or fallback)
        if not self.may_read_tenant(tenant):
            raise Forbidden("tenant outside this principal's grant",
                            {"tenant": tenant, "principal": self.id})
        return tenant

    def clearance_for(self, requested: str | None) -> str:
        """The clearance of a request: at most the grant's; a header may only lower it."""
        if requested is None:
            return self.max_clearance
        level = requested.lower()
        if level not in CLASSIFICATIONS:
            return level  # the scope resolver rejects unknown levels with a 400
        if CLASSIFICATIONS.index(level) > CLASSIFICATIONS.index(self.max_clearance):
            raise Forbidden("clearance above this principal's grant",
                            {"requested": level, "granted": self.max_clearance})
        return level
