"""Policy in the scope: jurisdictions in ReadScope, in the shared Cypher predicates and in every
cache key (with tenant, clearance and pin); the built-in policy rules and action names."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from gateway.policy import action_for
from substrate.browser import plan
from substrate.cache import cache_key
from substrate.cypher import CypherLibrary, macro
from substrate.retrieval.scope import ReadScope, jurisdictions_for
from substrate.security.pii import KINDS
from substrate.security.policy import BuiltinPolicy, PolicyInput
from substrate.security.principal import Principal

BASE = ReadScope("acme", 40, ("public", "internal"), False, tenant_version=38)
# every field that changes what a read may see, and a value that differs from BASE's
VISIBILITY = {"tenant": "globex", "clearance": ("public",), "jurisdictions": ("EU",),
              "pinned": True, "at": "2026-09-01T00:00:00+00:00"}
# unpinned: the key survives unrelated writes; bookmarks only make a cluster member wait
NOT_KEYED = {"version", "tenant_version", "bookmarks"}


def test_every_scope_field_is_keyed_or_deliberately_not() -> None:
    fields = {f.name for f in dataclasses.fields(ReadScope)}
    assert fields == set(VISIBILITY) | NOT_KEYED


@pytest.mark.parametrize(("name", "value"), sorted(VISIBILITY.items()))
def test_each_visibility_field_changes_the_cache_key(name: str, value: Any) -> None:
    params = {"service_id": "checkout"}
    base = dataclasses.replace(BASE, pinned=True) if name == "at" else BASE  # at: a pin
    other = dataclasses.replace(base, **{name: value})
    assert cache_key("ownership", params, other) != cache_key("ownership", params, base)


def test_bookmarks_do_not_change_the_cache_key() -> None:
    params = {"service_id": "checkout"}
    marked = dataclasses.replace(BASE, bookmarks=("FB:x",))
    assert cache_key("ownership", params, marked) == cache_key("ownership", params, BASE)


def test_jurisdictions_are_normalised_and_empty_means_unrestricted() -> None:
    assert jurisdictions_for(None) is None
    assert jurisdictions_for(frozenset()) is None
    assert jurisdictions_for([" UK", "EU", "EU"]) == ("EU", "UK")
    assert BASE.params()["jurisdictions"] is None
    assert dataclasses.replace(BASE, jurisdictions=("EU",)).params()["jurisdictions"] == ["EU"]


@pytest.mark.parametrize("name", ["node_at", "rel_at", "node_seen"])
def test_scope_predicates_carry_the_jurisdiction_test(name: str) -> None:
    for prefix in ("", "__"):
        text = macro(name, "n", prefix)
        assert f"${prefix}jurisdictions IS NULL OR n.jurisdiction IS NULL" in text
        assert f"${prefix}tenant" in text


def test_every_scoped_template_gets_the_jurisdiction_predicate() -> None:
    library = CypherLibrary.load()
    for t in library.templates.values():
        text = t.render(**t.sample) if t.is_template else t.body
        if "$clearance" in text:
            assert "$jurisdictions" in text, t.name


def test_browser_procedures_take_jurisdictions_last_and_optional() -> None:
    procedures, _ = plan(CypherLibrary.load())
    for p in procedures:
        if "$jurisdictions" in p.statement:
            assert p.signature.split(") ::")[0].endswith(
                "jurisdictions = null :: LIST OF STRING"), p.signature


def principal(**kw: object) -> Principal:
    base: dict[str, object] = {"id": "key:t", "kind": "api_key", "tenants": frozenset({"acme"}),
                               "max_clearance": "internal", "roles": frozenset({"reader"})}
    return Principal(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(("who", "action", "tenant", "clearance", "allowed"), [
    (principal(), "read:/search", "acme", "internal", True),
    (principal(), "read:/search", "acme", "public", True),
    (principal(), "read:/search", "globex", "public", False),
    (principal(), "read:/search", "acme", "confidential", False),
    (principal(), "read:/search", "acme", "secret", False),
    (principal(), "write:/queue/approve", "acme", "public", False),
    (principal(roles=frozenset({"reviewer"})), "write:/queue/approve", "acme", "public", True),
    (principal(roles=frozenset({"reviewer"})), "admin:/admin/audit", "acme", "public", False),
    (principal(tenants=frozenset({"*"}), roles=frozenset({"admin"})), "admin:/admin/audit",
     "globex", "internal", True),
])
def test_builtin_rules(who: Principal, action: str, tenant: str, clearance: str,
                       allowed: bool) -> None:
    verdict = asyncio.run(BuiltinPolicy().decide(
        PolicyInput(who, action, tenant, clearance, "/x")))
    assert verdict.allow is allowed, verdict.reason
    assert verdict.redact == frozenset(KINDS)
    assert BuiltinPolicy(redaction=False).verdict(
        PolicyInput(who, action, tenant, clearance, "/x")).redact == frozenset()


@pytest.mark.parametrize(("method", "path", "action"), [
    ("POST", "/search", "read:/search"),
    ("GET", "/memory/service:checkout", "read:/memory"),
    ("POST", "/queue/q1/approve", "write:/queue/approve"),
    ("GET", "/queue", "read:/queue"),
    ("GET", "/admin/audit", "admin:/admin/audit"),
    ("GET", "/stream", "read:/stream"),
])
def test_action_names(method: str, path: str, action: str) -> None:
    assert action_for(method, path) == action
