"""Terraform files read for the stores they create: on two devset repositories (gold: their
files at HEAD, read by hand) and, through the gateway, on a small repository this test
writes (gold: its text)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from substrate.connectors.gitrepo import batch_at
from substrate.graph.records import EdgeRecord
from substrate.settings import Settings
from tests.support import devset
from tests.support.repo_tenant import ask, cited, repo_tenant

pytestmark = pytest.mark.integration

MAIN = """\
module "vpc" {
  source = "terraform-aws-modules/vpc/aws"
  name   = "shop"
}

module "orders_rds" {
  source  = "terraform-aws-modules/rds-aurora/aws"
  version = "7.7.1"

  name           = "${var.environment_name}-orders"
  engine         = "aurora-postgresql"
  engine_version = "15.10"
}

resource "aws_elasticache_replication_group" "sessions" {
  replication_group_id = "checkout-sessions"
  node_type            = "cache.t3.micro"
  engine               = "redis"
}

resource "aws_apprunner_service" "orders" {
  service_name = "${var.environment_name}-orders"
}
"""
FILES = {
    "docker-compose.yml": "services:\n  orders:\n    image: example/orders:1.0\n"
                          "    environment:\n      DB_URL: postgres://orders-db:5432/orders\n"
                          "  orders-db:\n    image: postgres:15\n"
                          "  checkout:\n    image: example/checkout:1.0\n",
    ".github/CODEOWNERS": "/infra/ @acme/platform\n",
    "infra/terraform/main.tf": MAIN,
}
TF = "infra/terraform/main.tf"


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tf-devset")
    return {name: devset.clone(name, root) for name in ("retail-store-sample-app", "fac")}


def _stores(repo: Path) -> dict[str, dict[str, Any]]:
    batch = batch_at(repo, "HEAD", prose=False)
    return {n.ceid: n.props for n in batch.nodes
            if "terraform" in n.props and n.ceid.startswith("infra:")}


def test_retail_stores_from_its_terraform(clones: dict[str, Path]) -> None:
    repo = clones["retail-store-sample-app"]
    batch = batch_at(repo, "HEAD", prose=False)
    stores = {n.ceid: n.props for n in batch.nodes
              if "terraform" in n.props and n.ceid.startswith("infra:")}
    # terraform/lib/dependencies: two Aurora clusters, DynamoDB, ElastiCache, Amazon MQ and
    # OpenSearch (module "catalog_rds", ..., resource "aws_mq_broker" "mq")
    assert {c: p["kind"] for c, p in stores.items()} == {
        "infra:catalog-rds": "database", "infra:orders-rds": "database",
        "infra:dynamodb-carts": "database", "infra:checkout-elasticache-redis": "cache",
        "infra:mq": "queue", "infra:catalog-opensearch": "search"}
    orders = stores["infra:orders-rds"]
    assert (orders["engine"], orders["engine_version"], orders["instance_class"]) == \
        ("aurora-postgresql", "15.10", "db.t3.medium")
    assert orders["terraform"] == ["module.orders_rds"]
    assert any(r.startswith("engine|aurora-postgresql|") and "orders_rds.tf#L6@" in r
               for r in orders["attribute_refs"]), orders["attribute_refs"]
    # each named after one service: suggested, not asserted (the verification queue)
    suggested = {(e.src, e.dst) for e in batch.pending if isinstance(e, EdgeRecord)
                 and e.type == "DEPENDS_ON" and e.props.get("via") == "naming"
                 and e.dst in stores}
    assert suggested == {("service:orders", "infra:orders-rds"),
                         ("service:catalog", "infra:catalog-rds"),
                         ("service:catalog", "infra:catalog-opensearch"),
                         ("service:cart", "infra:dynamodb-carts"),
                         ("service:checkout", "infra:checkout-elasticache-redis")}
    assert not [e for e in batch.edges if e.dst in stores and e.type == "DEPENDS_ON"]
    # each service is also deployed by App Runner and ECS (terraform/lib/apprunner/orders.tf:
    # resource "aws_apprunner_service" "orders"; terraform/lib/ecs/orders.tf: module
    # "orders_service" with service_name = "orders")
    orders = next(n.props for n in batch.nodes if n.ceid == "service:orders")
    assert {"terraform/lib/apprunner/orders.tf", "terraform/lib/ecs/orders.tf"} <= \
        set(orders["manifests"])
    assert set(orders["terraform"]) == {"aws_apprunner_service.orders", "module.orders_service"}


def test_fac_cloud_gov_modules_and_crlf_files(clones: dict[str, Path]) -> None:
    stores = _stores(clones["fac"])
    # terraform/shared/modules/env/env.tf (CRLF line ends): modules of gsa-tts'
    # terraform-cloudgov, //database and //s3, named "fac-db", ...
    for ceid, kind in (("infra:fac-db", "database"), ("infra:fac-snapshot-db", "database"),
                       ("infra:fac-public-s3", "storage"), ("infra:fac-private-s3", "storage")):
        assert stores[ceid]["kind"] == kind
        assert "terraform/shared/modules/env/env.tf" in stores[ceid]["manifests"]
    assert stores["infra:fac-db"]["terraform"] == ["module.database"]


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("tf"), "t-tf", FILES) as name:
        yield name


def test_what_a_store_is_cites_its_declaration_and_details(stack: Settings,
                                                          tenant: str) -> None:
    body = ask(stack, tenant, "Which database engine does orders_rds run?")
    assert "a database (aurora-postgresql 15.10)" in str(body["answer"]), body["answer"]
    refs = cited(body)
    for line in (6, 11, 12):  # the module block, engine, engine_version
        assert any(r.startswith(f"{TF}#L{line}@") for r in refs), refs
    body = ask(stack, tenant, "What kind of infrastructure is checkout-sessions?")
    assert "a cache (redis, cache.t3.micro)" in str(body["answer"]), body["answer"]


def test_a_store_is_provisioned_by_terraform(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "How is orders_rds provisioned?")
    assert f"Terraform ({TF})" in str(body["answer"]), body["answer"]
    assert cited(body)[0].startswith(f"{TF}#L6@")


def test_a_store_named_after_a_service_is_suggested(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which services depend on orders_rds?")
    assert body.get("pending") == ["verification"], body
    assert "Suggested, awaiting verification" in str(body["answer"]), body["answer"]
    assert "orders (DEPENDS_ON, by name" in str(body["answer"]), body["answer"]


def test_the_owners_of_the_terraform_folder_own_its_stores(stack: Settings,
                                                          tenant: str) -> None:
    body = ask(stack, tenant, "Who owns checkout-sessions?")
    assert "@acme/platform" in str(body["answer"]), body["answer"]
    assert cited(body)[0].startswith(".github/CODEOWNERS#L1@")


def test_a_technology_runs_in_its_containers_and_its_terraform_stores(stack: Settings,
                                                                     tenant: str) -> None:
    """PostgreSQL: the Compose container (image postgres:15) and the Aurora cluster
    (engine aurora-postgresql), the second with its suggested user."""
    body = ask(stack, tenant, "Which services use PostgreSQL?")
    answer = str(body["answer"])
    assert "postgresql runs as orders-db, orders_rds." in answer, answer
    assert "orders-db is called directly by: orders" in answer, answer
    assert "Suggested for orders_rds, awaiting verification" in answer, answer
    refs = cited(body)
    assert any(r.startswith("docker-compose.yml#L5@") for r in refs), refs
    assert any(r.startswith(f"{TF}#L6@") for r in refs), refs


def test_a_service_terraform_deploys_names_the_resource(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "How is orders deployed?")
    answer = str(body["answer"])
    assert "Docker Compose (docker-compose.yml)" in answer, answer
    assert f"Terraform, an App Runner service ({TF})" in answer, answer
    assert any(r.startswith(f"{TF}#L21@") for r in cited(body)), cited(body)
