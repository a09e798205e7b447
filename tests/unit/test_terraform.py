"""Terraform files → the stores they create (substrate/connectors/terraform.py): which blocks
are stores, their kinds, names and lines. Gold: the texts written here."""

from __future__ import annotations

from substrate.connectors.terraform import (
    deploys_in,
    instances,
    is_terraform_path,
    may_create_a_store,
    source_kind,
    stores_in,
)
from substrate.connectors.yamlnodes import Fact

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
  instance_class = var.instance_class
}

resource "aws_db_subnet_group" "orders" {
  name = "orders-subnets"
}

resource "aws_elasticache_replication_group" "sessions" {
  replication_group_id = "checkout-sessions"
  node_type            = "cache.t3.micro"
  engine               = "redis"
}

resource "aws_s3_bucket" "this" {
  bucket = var.bucket_name
}

resource "aws_s3_bucket_policy" "uploads" {
  bucket = "uploads"
}

module "service" {
  source       = "./service"
  service_name = "orders"
}
"""


def _by_address(text: str) -> dict[str, tuple[str, str, int, int, dict[str, tuple[str, int]]]]:
    return {s.address: (s.kind, s.name.value, s.name.line, s.line,
                        {k: (f.value, f.line) for k, f in s.details})
            for s in instances(list(stores_in("infra/main.tf", text)), {"infra"})}


def test_stores_their_kinds_names_and_lines() -> None:
    assert _by_address(MAIN) == {
        # the name is only known when applied ("${var.environment_name}-orders"): the label;
        # a detail read from a variable (instance_class) is left out
        "module.orders_rds": ("database", "orders_rds", 6, 6,
                              {"engine": ("aurora-postgresql", 11),
                               "engine_version": ("15.10", 12)}),
        "aws_elasticache_replication_group.sessions": (
            "cache", "checkout-sessions", 21, 20,
            {"engine": ("redis", 23), "node_type": ("cache.t3.micro", 22)}),
    }
    # not stores: a network module, a subnet group and a bucket policy that configure one, a
    # bucket named by a variable in a reusable module ("this"), a local module


def test_crlf_files_parse_and_broken_files_are_skipped() -> None:
    assert _by_address(MAIN.replace("\n", "\r\n")) == _by_address(MAIN)
    assert stores_in("broken.tf", 'resource "aws_db_instance" "x" {\n  name = \n') == ()


def test_cloud_foundry_service_instances_take_the_kind_their_name_states() -> None:
    text = ('resource "cloudfoundry_service_instance" "db" {\n  name = "notify-rds-postgres"\n'
            '}\n\nresource "cloudfoundry_service_instance" "misc" {\n  name = "misc"\n}\n')
    assert _by_address(text) == {
        "cloudfoundry_service_instance.db": ("database", "notify-rds-postgres", 2, 1, {})}


def test_google_memorystore_and_cloud_sql() -> None:
    """Online Boutique's terraform/memorystore.tf shape (the cart's Redis), and Cloud SQL."""
    text = ('# Create the Memorystore (redis) instance\n'
            'resource "google_redis_instance" "redis-cart" {\n'
            '  name           = "redis-cart"\n  memory_size_gb = 1\n'
            '  redis_version  = "REDIS_6_X"\n}\n\n'
            '#resource "google_redis_instance" "old" {\n#  name = "old"\n#}\n\n'
            'resource "google_sql_database_instance" "main" {\n'
            '  name             = "ledger-db"\n  database_version = "POSTGRES_15"\n'
            '  settings {\n    tier = "db-f1-micro"\n  }\n}\n')
    assert _by_address(text) == {
        "google_redis_instance.redis-cart": ("cache", "redis-cart", 3, 2,
                                             {"redis_version": ("REDIS_6_X", 5)}),
        "google_sql_database_instance.main": ("database", "ledger-db", 13, 12,
                                              {"database_version": ("POSTGRES_15", 14),
                                               "tier": ("db-f1-micro", 16)})}


def test_module_sources() -> None:
    assert source_kind("terraform-aws-modules/rds-aurora/aws") == "database"
    assert source_kind("app.terraform.io/acme/elasticache-redis/aws") == "cache"
    assert source_kind("github.com/gsa-tts/terraform-cloudgov//database?ref=v2.3.0") == "database"
    assert source_kind("github.com/gsa-tts/terraform-cloudgov//s3?ref=v2.3.0") == "storage"
    assert source_kind("git::https://github.com/cloudposse/terraform-aws-elasticache-redis.git"
                       "?ref=tags/0.52.0") == "cache"
    assert source_kind("terraform-aws-modules/dynamodb-table/aws") == "database"
    assert source_kind("GoogleCloudPlatform/sql-db/google//modules/postgresql") == "database"
    assert source_kind("terraform-aws-modules/vpc/aws") is None
    assert source_kind("terraform-aws-modules/eks/aws") is None
    assert source_kind("./modules/rds") is None  # local: read where its files are
    assert source_kind(None) is None


def test_terraform_paths() -> None:
    assert is_terraform_path("terraform/lib/dependencies/orders_rds.tf")
    assert is_terraform_path("main.tf")
    assert not is_terraform_path("iac/.terraform/modules/vpc/main.tf")
    assert not is_terraform_path("terraform/prod.tfvars")
    assert not is_terraform_path("docs/terraform.md")


def test_files_that_create_no_store_are_not_parsed() -> None:
    assert may_create_a_store(MAIN)
    assert may_create_a_store('module "db" {\n  source = "terraform-aws-modules/rds/aws"\n}\n')
    assert not may_create_a_store('variable "engine" {\n  default = "postgres"\n}\n'
                                  'module "vpc" {\n  source = "terraform-aws-modules/vpc/aws"\n}\n'
                                  'resource "aws_db_subnet_group" "x" {\n  name = "x"\n}\n')


def test_names_take_the_folders_locals_and_leave_out_the_environment() -> None:
    """cloud.gov's notify-api: the manifest binds notify-api-rds-((env)); Terraform names the
    instance "${local.app_name}-rds-${local.env}" with app_name a local of the folder."""
    text = ('locals {\n  app_name = "notify-api"\n  env      = "staging"\n}\n\n'
            'module "database" {\n'
            '  source = "github.com/gsa-tts/terraform-cloudgov//database?ref=v1.0.0"\n'
            '  name   = "${local.app_name}-rds-${local.env}"\n}\n\n'
            'module "orders_rds" {\n  source = "terraform-aws-modules/rds-aurora/aws"\n'
            '  name   = "${var.environment_name}-orders"\n}\n')
    known = (("app_name", "notify-api"), ("env", "staging"))
    found = {s.address: (s.name.value, s.name.line) for s in stores_in("tf/main.tf", text, known)}
    # "orders" names no store: the label
    assert found == {"module.database": ("notify-api-rds", 8),
                     "module.orders_rds": ("orders_rds", 11)}


def test_a_reusable_modules_templates_are_left_out() -> None:
    text = ('resource "aws_rds_cluster" "db" {\n  cluster_identifier = var.name\n}\n\n'
            'resource "aws_s3_bucket" "storage" {\n  bucket = var.name\n}\n\n'
            'resource "aws_sqs_queue" "main" {\n  name = var.name\n}\n\n'
            'resource "aws_elasticache_cluster" "replica" {\n'
            '  cluster_id           = "cart-cache-2"\n'
            '  replication_group_id = aws_elasticache_replication_group.cart.id\n}\n\n'
            'resource "aws_db_instance" "reader" {\n  identifier          = "orders-reader"\n'
            '  replicate_source_db = aws_db_instance.orders.identifier\n}\n')
    # module templates named by the caller (kept as templates, no instance of their own); a
    # replication group's member node; a replica
    found = stores_in("modules/db/main.tf", text)
    assert {(s.address, s.kind) for s in found if s.template} == {
        ("aws_rds_cluster.db", "database"), ("aws_s3_bucket.storage", "storage"),
        ("aws_sqs_queue.main", "queue")}
    assert instances(list(found), {"modules/db"}) == []
    # one per environment, named after it: the label (simpler-grants' OpenSearch domain)
    text = ('resource "aws_opensearch_domain" "opensearch" {\n'
            '  domain_name    = var.environment_name\n  engine_version = "OpenSearch_2.11"\n}\n')
    [store] = stores_in("infra/api/database/opensearch.tf", text)
    assert (store.kind, store.name.value, store.details) == \
        ("search", "opensearch", (("engine_version", Fact("OpenSearch_2.11",
                                                          "infra/api/database/opensearch.tf",
                                                          3)),))


def test_a_modules_name_input_that_is_a_bare_kind_gives_way_to_its_label() -> None:
    text = ('module "sessions_cache" {\n  source = "github.com/acme/terraform-aws-redis"\n'
            '  name   = "queue"\n}\n')
    [store] = stores_in("main.tf", text)
    assert (store.kind, store.name.value, store.name.line) == ("cache", "sessions_cache", 1)


def test_a_nested_attribute_is_not_the_blocks_own() -> None:
    text = ('resource "google_sql_database_instance" "ledger" {\n  settings {\n'
            '    database_flags {\n      name  = "cloudsql.iam_authentication"\n'
            '      value = "on"\n    }\n  }\n  name = "ledger-db"\n}\n')
    [store] = stores_in("main.tf", text)
    assert (store.name.value, store.name.line) == ("ledger-db", 8)


def test_a_vendored_local_module_names_its_kind_by_its_folder() -> None:
    """DfE's `source = "./vendor/modules/aks//aks/postgres"`: vendor/ is fetched at build
    time; a local module whose folder is in the snapshot is read there instead."""
    text = ('module "postgres" {\n  source = "./vendor/modules/aks//aks/postgres"\n'
            '  name   = "apply"\n}\n\nmodule "redis" {\n  source = "./modules/redis"\n}\n')
    found = {s.address: (s.kind, s.name.value, s.module_folder)
             for s in stores_in("terraform/aks/database.tf", text)}
    assert found == {"module.postgres": ("database", "apply", "terraform/aks/vendor/modules/aks"),
                     "module.redis": ("cache", "redis", "terraform/aks/modules/redis")}
    calls = list(stores_in("terraform/aks/database.tf", text))
    # vendor/ absent, modules/redis present (and holding no template): read where it is
    assert [s.address for s in instances(calls, {"terraform/aks", "terraform/aks/modules/redis"})
            ] == ["module.postgres"]


def test_a_call_of_a_local_module_holding_a_template_is_an_instance() -> None:
    """simpler-grants' modules/storage makes `aws_s3_bucket "storage" { bucket = var.name }`;
    each call of it is a bucket, named by the call."""
    module = 'resource "aws_s3_bucket" "storage" {\n  bucket = var.name\n}\n'
    call = ('module "documents" {\n  source = "../../modules/storage"\n'
            '  name   = "grants-documents"\n}\n\n'
            'module "service" {\n  source = "../../modules/service"\n}\n')
    found = [*stores_in("infra/modules/storage/main.tf", module),
             *stores_in("infra/api/service/s3.tf", call)]
    folders = {"infra/modules/storage", "infra/modules/service", "infra/api/service"}
    assert [(s.address, s.kind, s.name.value, s.name.line) for s in instances(found, folders)
            ] == [("module.documents", "storage", "grants-documents", 3)]


def test_repository_sources_and_more_module_kinds() -> None:
    # Terraform's GitHub shorthand is a repository, not a registry "namespace/name/provider"
    assert source_kind("github.com/ministryofjustice/cloud-platform-terraform-rds-instance"
                       "?ref=2.4") == "database"
    assert source_kind("bitbucket.org/acme/terraform-aws-elasticache-redis") == "cache"
    assert source_kind("terraform-aws-modules/memory-db/aws") == "cache"
    assert source_kind("terraform-aws-modules/efs/aws") == "storage"
    assert source_kind("terraform-aws-modules/redshift/aws") == "database"
    assert source_kind("Azure/avm-res-servicebus-namespace/azurerm") == "queue"
    assert source_kind("Azure/avm-res-dbforpostgresql-flexibleserver/azurerm") == "database"


def test_the_services_a_file_deploys() -> None:
    """retail's App Runner and ECS files: a compute resource, or a module given the
    service's name; a reusable module's own resource ("this") names none."""
    text = ('resource "aws_apprunner_service" "orders" {\n'
            '  service_name = "${var.environment_name}-orders"\n}\n\n'
            'module "carts_service" {\n  source       = "./service"\n'
            '  service_name = "carts"\n}\n\n'
            'resource "aws_ecs_service" "this" {\n  name = var.service_name\n}\n\n'
            'resource "kubernetes_deployment" "web" {\n  metadata {\n    name = "storefront"\n'
            '  }\n}\n')
    assert [(d.address, d.name, d.line, d.what) for d in deploys_in("ecs.tf", text)] == [
        ("aws_apprunner_service.orders", "orders", 1, "an App Runner service"),
        ("module.carts_service", "carts", 5, "module carts_service"),
        ("kubernetes_deployment.web", "storefront", 14, "a Kubernetes Deployment")]
    assert deploys_in("vars.tf", 'variable "service_name" {}\n') == ()
