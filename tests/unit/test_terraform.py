"""Terraform files → the stores they create (substrate/connectors/terraform.py): which blocks
are stores, their kinds, names and lines. Gold: the texts written here."""

from __future__ import annotations

from substrate.connectors.terraform import (
    is_terraform_path,
    may_create_a_store,
    source_kind,
    stores_in,
)

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
            for s in stores_in("infra/main.tf", text)}


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
                                              {"database_version": ("POSTGRES_15", 14)})}


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
