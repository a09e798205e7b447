"""Query-cache keys and the node ids an answer touched (pure logic, no Redis)."""

from __future__ import annotations

from substrate.cache import (
    cache_key,
    fingerprinted_files,
    index_key,
    plain,
    snapshot_pin,
    touched_ids,
)
from substrate.retrieval.context import SearchOptions
from substrate.retrieval.direct import DependencyQuery
from substrate.retrieval.scope import ReadScope

LATEST = ReadScope("acme", 40, ("public", "internal"), False, tenant_version=38)


def test_query_text_is_whitespace_collapsed_and_lower_cased() -> None:
    a = cache_key("search", {"query": "What does checkout depend on?",
                             "options": SearchOptions()}, LATEST)
    b = cache_key("search", {"query": "  what DOES checkout\n depend on? ",
                             "options": SearchOptions()}, LATEST)
    c = cache_key("search", {"query": "what does cart depend on?",
                             "options": SearchOptions()}, LATEST)
    assert a == b != c
    assert a.startswith("sr:{acme}:e:") and len(a.rsplit(":", 1)[1]) == 64


def test_structured_parameters_are_plain_sorted_json() -> None:
    q = DependencyQuery(depth=2, types=("CALLS",))
    assert plain({"q": q}) == {"q": {"depth": 2, "direction": "out", "types": ["CALLS"],
                                     "min_weight": 0.0, "include_inferred": False,
                                     "limit": 100}}
    one = cache_key("dependencies", {"service_id": "checkout", "q": q}, LATEST)
    two = cache_key("dependencies", {"q": q, "service_id": "checkout"}, LATEST)
    deeper = cache_key("dependencies", {"service_id": "checkout",
                                        "q": DependencyQuery(depth=3, types=("CALLS",))}, LATEST)
    assert one == two != deeper


def test_tenant_clearance_kind_and_pin_are_part_of_the_key() -> None:
    params = {"service_id": "checkout"}
    base = cache_key("ownership", params, LATEST)
    others = [
        cache_key("memory", params, LATEST),
        cache_key("ownership", params, ReadScope("globex", 40, LATEST.clearance, False,
                                                  tenant_version=38)),
        cache_key("ownership", params, ReadScope("acme", 40, ("public",), False,
                                                  tenant_version=38)),
        cache_key("ownership", params, ReadScope("acme", 12, LATEST.clearance, True)),
        cache_key("ownership", params, ReadScope("acme", 12, LATEST.clearance, True,
                                                  "2026-09-01T00:00:00+00:00")),
    ]
    assert len({base, *others}) == 6
    # unpinned: the key does not move with the version, so unrelated writes keep it valid
    moved = ReadScope("acme", 41, LATEST.clearance, False, tenant_version=39)
    assert cache_key("ownership", params, moved) == base


def test_snapshot_pin() -> None:
    assert snapshot_pin(LATEST) == "latest"
    assert snapshot_pin(ReadScope("acme", 12, ("public",), True)) == "v12"
    assert snapshot_pin(ReadScope("acme", 12, ("public",), True, "2026-09-01")) == \
        "v12@2026-09-01"


def test_touched_ids_collects_every_ceid_of_the_answer() -> None:
    answer = {
        "service": {"ceid": "service:checkout", "name": "checkout"},
        "dependencies": [{"target": {"ceid": "infra:redis"}, "hops": [
            {"from": "service:checkout", "to": "infra:redis", "type": "DEPENDS_ON",
             "evidence_ref": "docker-compose.yml#L116@646c230"}]}],
        "evidence_bundle": {"seeds": ["team:payments"], "nodes": [{"id": "adr:0011"}],
                            "hops": [{"from": "pr:42", "to": "chunk:doc-1#3"}]},
        "answer": "checkout depends on: redis (DEPENDS_ON)[1]",
        "note": "url http://x:80 and unknown:thing and service:with space",
    }
    assert touched_ids(answer) == {"service:checkout", "infra:redis", "team:payments",
                                   "adr:0011", "pr:42", "chunk:doc-1#3"}


def test_index_keys_share_the_tenant_hash_tag() -> None:
    assert index_key("acme", "service:checkout") == "sr:{acme}:i:service:checkout"


def test_the_code_fingerprint_covers_the_translator_and_the_ontology() -> None:
    """A change to the NL->Cypher translator (a subpackage, its grammar), a template or the
    ontology's words gives new keys: answers cached by older code are not served."""
    names = {f"{p.parent.name}/{p.name}" for p in fingerprinted_files()}
    assert {"nl_cypher/hook.py", "nl_cypher/grammar.lark", "retrieval/gazetteer.py",
            "substrate/ontology.yaml", "nl/schema_triples.cypher.j2"} <= names
