"""Policy decisions (PolicyRetriever): may this principal do this action on this tenant at this
clearance, and which PII kinds are redacted from what it reads.

Two engines answer the same question with the same input document::

    {"principal": {"id", "kind", "tenants", "max_clearance", "roles", "jurisdictions"},
     "action": "read:/search", "tenant": "acme", "clearance": "internal",
     "resource": "/search"}

- :class:`BuiltinPolicy` — the rules below, in Python (used when ``OPA_URL`` is empty);
- :class:`OpaPolicy` — Open Policy Agent's data API, ``POST {OPA_URL}/v1/data/substrate/authz``
  with ``{"input": ...}``; the policy shipped in ``plugins/opa/substrate.rego`` mirrors the
  built-in rules. OPA unreachable, slow (``OPA_TIMEOUT_SECONDS``) or answering garbage means
  *deny*: :class:`PolicyUnavailable` (503 with ``Retry-After``).

Rules: the tenant is in the principal's tenants (or it holds ``*``); the clearance is at most
its maximum; the action's role (``read:`` reader, ``write:`` reviewer, ``admin:`` admin) is
held; every PII kind is redacted unless redaction is switched off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from substrate.errors import Unavailable
from substrate.retrieval.scope import CLASSIFICATIONS
from substrate.security.pii import KINDS
from substrate.security.principal import ALL_TENANTS, ROLES, Principal
from substrate.settings import Settings

ACTION_ROLES = {"read": "reader", "write": "reviewer", "admin": "admin"}
OPA_PATH = "/v1/data/substrate/authz"
RETRY_AFTER_S = 5


@dataclass(frozen=True)
class PolicyInput:
    principal: Principal
    action: str  # "<read|write|admin>:<route>"
    tenant: str
    clearance: str
    resource: str

    def document(self) -> dict[str, Any]:
        p = self.principal
        return {
            "principal": {"id": p.id, "kind": p.kind, "tenants": sorted(p.tenants),
                          "max_clearance": p.max_clearance, "roles": sorted(p.roles),
                          "jurisdictions": sorted(p.jurisdictions)},
            "action": self.action, "tenant": self.tenant, "clearance": self.clearance,
            "resource": self.resource,
        }


@dataclass(frozen=True)
class Verdict:
    allow: bool
    reason: str
    redact: frozenset[str]  # PII kinds to redact from what is read
    engine: str  # "builtin" | "opa"


class PolicyUnavailable(Unavailable):
    """The policy engine did not answer: the request is denied (503, retry later)."""

    def __init__(self, message: str, detail: Any = None,
                 retry_after: int = RETRY_AFTER_S) -> None:
        super().__init__(message, detail)
        self.retry_after = retry_after


class PolicyEngine(Protocol):
    name: str

    async def decide(self, request: PolicyInput) -> Verdict: ...

    async def aclose(self) -> None: ...


def _role_of(action: str) -> str:
    return ACTION_ROLES.get(action.partition(":")[0], "admin")


class BuiltinPolicy:
    name = "builtin"

    def __init__(self, redaction: bool = True) -> None:
        self.redact = frozenset(KINDS) if redaction else frozenset()

    async def decide(self, request: PolicyInput) -> Verdict:
        return self.verdict(request)

    def verdict(self, request: PolicyInput) -> Verdict:
        p = request.principal
        role = _role_of(request.action)
        if not (ALL_TENANTS in p.tenants or request.tenant in p.tenants):
            return self._deny(f"tenant {request.tenant!r} is outside the grant")
        if request.clearance not in CLASSIFICATIONS or p.max_clearance not in CLASSIFICATIONS:
            return self._deny(f"unknown clearance {request.clearance!r}")
        if CLASSIFICATIONS.index(request.clearance) > CLASSIFICATIONS.index(p.max_clearance):
            return self._deny(f"clearance {request.clearance!r} above the grant "
                              f"({p.max_clearance!r})")
        if not p.has_role(role):
            return self._deny(f"{request.action} needs the {role!r} role")
        return Verdict(True, f"{role} of tenant {request.tenant!r} at {request.clearance!r}",
                       self.redact, self.name)

    def _deny(self, reason: str) -> Verdict:
        return Verdict(False, reason, self.redact, self.name)

    async def aclose(self) -> None:
        return None


class OpaPolicy:
    name = "opa"

    def __init__(self, url: str, timeout_s: float, redaction: bool = True) -> None:
        self.url = url.rstrip("/") + OPA_PATH
        self.redaction = redaction
        self.client = httpx.AsyncClient(timeout=timeout_s, trust_env=False)

    async def decide(self, request: PolicyInput) -> Verdict:
        try:
            response = await self.client.post(self.url, json={"input": request.document()})
            response.raise_for_status()
            result = response.json().get("result")
        except (httpx.HTTPError, ValueError) as exc:
            raise PolicyUnavailable(
                "the policy engine (OPA) is unavailable; the request is denied",
                {"engine": "opa", "error": type(exc).__name__}) from exc
        if not isinstance(result, dict):
            return Verdict(False, "OPA: substrate.authz is undefined (policy not loaded)",
                           frozenset(KINDS), self.name)
        allow = result.get("allow") is True
        reason = str(result.get("reason") or ("allowed by OPA" if allow else "denied by OPA"))
        kinds = result.get("redact", list(KINDS))
        redact = frozenset(k for k in kinds if k in KINDS) if isinstance(kinds, list) \
            else frozenset(KINDS)
        return Verdict(allow, reason, redact if self.redaction else frozenset(), self.name)

    async def aclose(self) -> None:
        await self.client.aclose()


def make_engine(settings: Settings) -> PolicyEngine:
    if settings.opa_url:
        return OpaPolicy(settings.opa_url, settings.opa_timeout_seconds, settings.pii_redaction)
    return BuiltinPolicy(settings.pii_redaction)


ANONYMOUS = Principal(id="anonymous", kind="anonymous", tenants=frozenset({ALL_TENANTS}),
                      max_clearance=CLASSIFICATIONS[-1], roles=frozenset(ROLES))
"""The caller when no authentication middleware set a principal (the gateway before API keys
and tokens; in-process use). Headers then decide tenant and clearance, as they always did."""
