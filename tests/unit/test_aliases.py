"""Alias normalisation and resolution, mention finding, and ambiguous names going to pending."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.aliases import NameIndex, normalise
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.mentions import find_mentions
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import EdgeRecord, NodeRecord


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("checkoutservice", "checkout"),
        ("checkout-service", "checkout"),
        ("checkout", "checkout"),
        ("CheckoutService", "checkout"),
        ("checkout_svc", "checkout"),
        ("payment-api-service", "payment"),
        ("web-app", "web"),
        ("api-gateway", "apigateway"),
        ("service", "service"),
        ("orders-db", "ordersdb"),
    ],
)
def test_normalise(name: str, key: str) -> None:
    assert normalise(name) == key


def _index() -> NameIndex:
    index = NameIndex()
    for name in ("checkout", "payment", "search", "search-api"):
        index.create("Service", name, f"services/{name}/README.md#L1@abc1234")
    index.create("Infrastructure", "orders-db", "docker-compose.yml#L40@abc1234")
    return index


def test_resolve_methods_and_confidence() -> None:
    index = _index()
    exact = index.resolve("checkout")
    assert (exact.ceid, exact.method, exact.confidence) == ("service:checkout", "exact", 1.0)
    norm = index.resolve("CheckoutService")
    assert (norm.ceid, norm.method, norm.confidence) == ("service:checkout", "normalised", 0.95)
    fuzzy = index.resolve("payments")
    assert (fuzzy.ceid, fuzzy.method, fuzzy.confidence) == ("service:payment", "fuzzy", 0.8)
    ambiguous = index.resolve("search_svc")
    assert ambiguous.ceid is None and ambiguous.ambiguous
    assert ambiguous.candidates == ("service:search", "service:search-api")
    assert index.resolve("search-api").ceid == "service:search-api"  # exact wins
    assert index.resolve("unrelated").ceid is None
    assert index.resolve("orders-db", "Service").ceid is None  # label filter


def test_register_records_alias_with_evidence() -> None:
    index = _index()
    entity = index.register("Service", "checkout-service", "docker-compose.yml#L7@abc1234")
    assert entity.ceid == "service:checkout"
    assert entity.aliases == {"checkout-service": ["docker-compose.yml#L7@abc1234"]}
    pending = index.register("Service", "searchsvc", "docker-compose.yml#L9@abc1234")
    assert pending.ceid == "service:searchsvc"
    assert "ambiguous" in pending.pending_reason
    fuzzy = index.register("Service", "payments", "docker-compose.yml#L11@abc1234")
    assert fuzzy.ceid == "service:payments" and "fuzzy" in fuzzy.pending_reason


def test_mentions_need_a_service_shaped_form() -> None:
    index = _index()
    lines = [
        (1, "The checkout calls payment."),  # plain words: no mention
        (2, "The CheckoutService calls the payment service."),
        (3, "Then `search-api` and orders-db."),
    ]
    found = [(m.surface, m.line, m.resolution.ceid) for m in find_mentions(lines, index)]
    assert found == [
        ("CheckoutService", 2, "service:checkout"),
        ("payment service", 2, "service:payment"),
        ("search-api", 3, "service:search-api"),
        ("orders-db", 3, "infra:orders-db"),
    ]
    title = find_mentions([(1, "Checkout talks to Payment")], index, plain_words=True)
    assert [m.resolution.ceid for m in title] == ["service:checkout", "service:payment"]


def _ambiguous_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        "services/search/README.md": "# search\n\nFull-text search.\n",
        "services/search-api/README.md": "# search-api\n\nPublic search API.\n",
        "services/checkout/README.md": "# checkout\n\nBuys things.\n",
        "docker-compose.yml": (
            "services:\n"
            "  search_svc:\n"
            "    image: acme/search:1\n"
            "  CheckoutService:\n"
            "    image: acme/checkout:1\n"
            "    environment:\n"
            "      SEARCH_URL: http://search_svc:8080\n"
        ),
        "docs/design/overview.md": "# Overview\n\nThe payments-service is new.\n",
        "services/payment/README.md": "# payment\n\nPays.\n",
    }
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")
    return repo, sha[:7]


def test_ambiguous_and_fuzzy_items_go_to_pending(tmp_path: Path) -> None:
    repo, short = _ambiguous_repo(tmp_path)
    batch = batch_at(repo)
    services = {n.ceid: n for n in batch.nodes if n.label == "Service"}
    assert set(services) == {
        "service:search", "service:search-api", "service:checkout", "service:payment",
    }  # fmt: skip
    checkout = services["service:checkout"]
    assert checkout.props["aliases"] == ["CheckoutService"]
    assert checkout.props["alias_evidence"] == [f"CheckoutService=docker-compose.yml#L4@{short}"]
    pending_nodes = [p for p in batch.pending if isinstance(p, NodeRecord)]
    assert [(n.ceid, "ambiguous" in n.props["reason"]) for n in pending_nodes] == [
        ("service:search-svc", True)
    ]
    pending_edges = {(e.type, e.src, e.dst) for e in batch.pending if isinstance(e, EdgeRecord)}
    assert ("CALLS", "service:checkout", "service:search-svc") in pending_edges
    assert ("MENTIONS", "doc:docs-design-overview-md", "service:payment") in pending_edges
    assert not any(e.dst == "service:search-svc" for e in batch.edges)


def test_names_declared_side_by_side_are_distinct_not_doubtful_aliases(tmp_path: Path) -> None:
    """eShopOnContainers: one Compose project declares ``webshoppingagg`` (an aggregator) and
    ``webshoppingapigw`` (a gateway), close enough to be fuzzy matches of each other. Keys of
    one project are distinct services by definition: neither is queued as a doubtful alias of
    the other. A close name declared elsewhere (another folder's project) still is."""
    index = NameIndex()
    agg = index.register("Service", "webshoppingagg", "docker-compose.yml#L5@abc1234")
    gw = index.register("Service", "webshoppingapigw", "docker-compose.yml#L9@abc1234",
                        distinct={agg.ceid})
    assert (gw.ceid, gw.pending_reason) == ("service:webshoppingapigw", "")
    other = index.register("Service", "webshopingagg", "deploy/compose.yml#L3@abc1234")
    assert "fuzzy" in other.pending_reason

    repo = init_repo(tmp_path / "repo")
    compose = "services:\n" + "".join(
        f"  {name}:\n    image: eshop/{name}:1\n"
        for name in ("webshoppingagg", "webshoppingapigw", "mobileshoppingagg",
                     "mobileshoppingapigw"))
    commit_tree(repo, {"src/docker-compose.yml": compose}, "init", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    assert not batch.pending
    assert {n.ceid for n in batch.nodes if n.label == "Service"} == {
        "service:webshoppingagg", "service:webshoppingapigw", "service:mobileshoppingagg",
        "service:mobileshoppingapigw"}
