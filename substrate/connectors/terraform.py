"""Terraform configurations (``**/*.tf``) → the datastores, caches, brokers, search domains
and buckets they create, as ``Infrastructure`` entities.

* A ``resource`` block of a type that *is* such a thing (``aws_db_instance``,
  ``aws_rds_cluster``, ``aws_elasticache_replication_group``, ``aws_mq_broker``,
  ``google_sql_database_instance``, ``azurerm_redis_cache``, ``aws_s3_bucket``...; the list is
  :data:`RESOURCE_KINDS`) is one. A block that configures one (``aws_db_subnet_group``,
  ``aws_s3_bucket_policy``) is not. A Cloud Foundry ``cloudfoundry_service_instance`` is one
  of the kind its name states, as a manifest's bound service is (:mod:`cloudfoundry`).
* A ``module`` block is one when its source names such a thing: a registry module
  (``terraform-aws-modules/rds-aurora/aws``), a repository (``…/terraform-aws-elasticache-redis``)
  or a repository's folder (``github.com/gsa-tts/terraform-cloudgov//database``). A local
  module (``./service``) is read where its own files are.
* Its name is the block's literal ``name`` (or ``identifier``, ``bucket``...), else the
  block's label (``module "orders_rds"``: the name ``"${var.env}-orders"`` is only known when
  applied). A block with neither (``resource "aws_db_instance" "this"`` named by a variable,
  in a reusable module) names no instance and is left out.
* The same name declared elsewhere (a Cloud Foundry manifest binding ``fac-db``) is the same
  entity: the Terraform file adds its kind and its declaration.
* Properties: ``kind``, ``terraform`` (the block's address, ``module.orders_rds``), the
  literal ``engine``, ``engine_version`` and instance class or node type, each line in
  ``attribute_refs``; ``manifests`` holds the file.
* A store named after one known service (``orders_rds``, ``checkout_elasticache_redis``,
  ``dynamodb_carts``) that nothing else links to it → ``DEPENDS_ON`` from the service
  (``via: naming``, confidence 0.6, evidence at the block's first line), as
  :meth:`~substrate.connectors.manifests.ManifestReader.named_stores` does for manifests.

Parsing is python-hcl2's (its Lark grammar of HCL2); a file it cannot parse is logged and
skipped. What a file declares is memoised by its text, so a history replay parses a file
again only when it changed.
"""

from __future__ import annotations

import logging
import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from substrate.connectors.cloudfoundry import instance_kind
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.infra_kinds import KINDS
from substrate.connectors.manifests import NAMED_AFTER, ManifestReader, union
from substrate.connectors.yamlnodes import Fact

log = logging.getLogger(__name__)

SCOPE = "terraform"
RESOURCE_KINDS: dict[str, str] = {
    **dict.fromkeys((
        "aws_db_instance", "aws_rds_cluster", "aws_dynamodb_table", "aws_docdb_cluster",
        "aws_docdb_elastic_cluster", "aws_neptune_cluster", "aws_redshift_cluster",
        "aws_redshiftserverless_namespace", "aws_keyspaces_keyspace",
        "aws_timestreamwrite_database", "google_sql_database_instance",
        "google_spanner_instance", "google_bigtable_instance", "google_firestore_database",
        "google_alloydb_cluster", "azurerm_postgresql_server",
        "azurerm_postgresql_flexible_server", "azurerm_mysql_server",
        "azurerm_mysql_flexible_server", "azurerm_mssql_server", "azurerm_mariadb_server",
        "azurerm_cosmosdb_account", "digitalocean_database_cluster", "mongodbatlas_cluster",
        "mongodbatlas_advanced_cluster"), "database"),
    **dict.fromkeys((
        "aws_elasticache_cluster", "aws_elasticache_replication_group",
        "aws_elasticache_serverless_cache", "aws_memorydb_cluster", "google_redis_instance",
        "google_memcache_instance", "azurerm_redis_cache"), "cache"),
    **dict.fromkeys((
        "aws_mq_broker", "aws_sqs_queue", "aws_sns_topic", "aws_msk_cluster",
        "aws_msk_serverless_cluster", "aws_kinesis_stream", "aws_cloudwatch_event_bus",
        "google_pubsub_topic", "azurerm_servicebus_namespace", "azurerm_servicebus_queue",
        "azurerm_eventhub_namespace", "confluent_kafka_cluster"), "queue"),
    **dict.fromkeys((
        "aws_opensearch_domain", "aws_elasticsearch_domain",
        "aws_opensearchserverless_collection"), "search"),
    **dict.fromkeys((
        "aws_s3_bucket", "google_storage_bucket", "azurerm_storage_account",
        "aws_efs_file_system"), "storage"),
}  # fmt: skip
# words of a module's source that name a kind beside those of infra_kinds and cloudfoundry
_SOURCE_WORDS: dict[str, str] = {
    "dynamodb": "database", "docdb": "database", "documentdb": "database",
    "cloudsql": "database", "spanner": "database", "alloydb": "database",
    "memorystore": "cache", "msk": "queue", "kinesis": "queue", "pubsub": "queue",
    "opensearch": "search", "gcs": "storage",
}  # fmt: skip
_NAME_ATTRS = ("name", "identifier", "cluster_identifier", "bucket", "replication_group_id",
               "cluster_id", "domain_name", "broker_name", "cluster_name", "instance_name")
ENGINE_KEYS = ("engine", "engine_type", "engine_version", "database_version", "redis_version")
SIZE_KEYS = ("instance_class", "node_type", "instance_type", "tier")
_DETAILS = (*ENGINE_KEYS, *SIZE_KEYS)
# labels that name no instance: a reusable module's ``resource "aws_db_instance" "this"``
_GENERIC = frozenset({"this", "main", "default", "primary", "self", "example", "instance",
                      "cluster", "resource"})
_WORD = re.compile(r"[a-z0-9]+")
# the words a store's name may add to its service's ("orders" + "rds")
_STORE_WORDS = frozenset({
    "db", "database", "datastore", "store", "data", "cache", "cluster", "instance", "broker",
    "table", "tables", "domain", "bucket", "queue", "topic", "rds", "aurora", "elasticache",
    "opensearch", "dynamodb", "dynamo", "s3", "sqs", "sns", "mq", "msk", "sql", "pg",
    *(n for names in KINDS.values() for n in names),
})  # fmt: skip


@dataclass(frozen=True)
class TfStore:
    """One datastore, cache, broker, search domain or bucket a Terraform file creates."""

    path: str
    line: int  # the block's first line
    address: str  # "module.orders_rds", "aws_db_instance.users"
    name: Fact  # at its name attribute's line, or the block's
    kind: str
    details: tuple[tuple[str, Fact], ...]  # (engine, "aurora-postgresql" at its line), ...


def is_terraform_path(path: str) -> bool:
    """A Terraform configuration file (not one in a ``.terraform/`` working folder)."""
    return path.endswith(".tf") and ".terraform/" not in f"/{path}"


def read_terraform(snap: GitSnapshot) -> list[TfStore]:
    """The stores every Terraform file of the snapshot creates, in path order."""
    paths = [p for p in snap.files() if is_terraform_path(p)]
    snap.preload(paths)
    return [store for path in paths for store in stores_in(path, snap.read(path))]


# the blocks a file opens and the module sources it names, read before parsing it: most files
# (variables, outputs, networks, IAM) create no store, and parsing takes ~9 ms a file
_OPENS = re.compile(r'^\s*resource\s+"?([\w-]+)"?', re.M)
_SOURCES = re.compile(r'^\s*source\s*=\s*"([^"]*)"', re.M)
_KINDED = frozenset({*RESOURCE_KINDS, "cloudfoundry_service_instance"})


def may_create_a_store(text: str) -> bool:
    """Does the file open a resource block of a store's type, or name a store's module?"""
    return bool({m.group(1) for m in _OPENS.finditer(text)} & _KINDED) \
        or any(source_kind(s) for s in _SOURCES.findall(text))


@lru_cache(maxsize=4096)
def stores_in(path: str, text: str) -> tuple[TfStore, ...]:
    """The stores one file creates (memoised by its text)."""
    if not may_create_a_store(text):
        return ()
    from hcl2.api import loads  # its Lark parser is built at the first import (~0.8 s)

    text = text.replace("\r\n", "\n")  # the grammar takes no CR (files written on Windows)
    try:
        doc = loads(text, with_meta=True)
    except Exception as exc:  # noqa: BLE001 - any parse error: the file is skipped
        log.info("terraform: %s not parsed (%s)", path, str(exc).splitlines()[0][:200])
        return ()
    lines = text.splitlines()
    out: list[TfStore] = []
    for entry in _blocks(doc, "resource"):
        for rtype, labelled in entry.items():
            for label, body in _labelled(labelled):
                kind = RESOURCE_KINDS.get(rtype)
                if rtype == "cloudfoundry_service_instance":
                    kind = instance_kind(_literal(body.get("name")) or label)
                store = kind and _store(path, lines, f"{rtype}.{label}", label, body, kind)
                if store:
                    out.append(store)
    for entry in _blocks(doc, "module"):
        for label, body in _labelled(entry):
            kind = source_kind(_literal(body.get("source")))
            store = kind and _store(path, lines, f"module.{label}", label, body, kind)
            if store:
                out.append(store)
    return tuple(sorted(out, key=lambda s: s.line))


def source_kind(source: str | None) -> str | None:
    """The kind a module's source names: its registry name, repository or folder
    (``terraform-aws-modules/rds-aurora/aws`` → database); None for a local module."""
    if not source or source.startswith((".", "/")):
        return None
    source = source.split("?", 1)[0].removeprefix("git::").rstrip("/")
    if "//" in source.split("://", 1)[-1]:  # a folder of a repository: the folder says it
        part = source.rsplit("//", 1)[1]
    else:
        pieces = [p for p in source.split("/") if p]
        # registry "namespace/name/provider" (or "host/namespace/name/provider")
        registry = len(pieces) in (3, 4) and "." not in pieces[-1] and ":" not in source
        part = pieces[-2] if registry else pieces[-1].removesuffix(".git")
    part = re.sub(r"^terraform-[a-z0-9]+-", "", part.lower())
    words = set(_WORD.findall(part))
    for word, kind in _SOURCE_WORDS.items():
        if word in words:
            return kind
    return instance_kind(part) if words - {"terraform", "module", "modules"} else None


def _blocks(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    found = doc.get(kind)
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def _labelled(entry: Any) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(entry, dict):
        return []
    return [(label, body) for label, body in entry.items() if isinstance(body, dict)]


def _literal(value: Any) -> str | None:
    """A string written as it is (no interpolation, reference or expression)."""
    if isinstance(value, str) and value and "${" not in value:
        return value
    return None


def _line_of(lines: list[str], start: int, end: int, key: str) -> int:
    """The line of the block's ``key = ...`` (the block's first line when not found)."""
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for n in range(start, min(end, len(lines)) + 1):
        if pattern.match(lines[n - 1]):
            return n
    return start


def _store(path: str, lines: list[str], address: str, label: str, body: dict[str, Any],
           kind: str) -> TfStore | None:
    start, end = int(body.get("__start_line__", 1)), int(body.get("__end_line__", 1))
    name: Fact | None = None
    for key in _NAME_ATTRS:
        value = _literal(body.get(key))
        if value:
            name = Fact(value, path, _line_of(lines, start, end, key))
            break
    if name is None:
        if label.lower() in _GENERIC:
            return None
        name = Fact(label, path, start)
    details = tuple((key, Fact(value, path, _line_of(lines, start, end, key)))
                    for key in _DETAILS
                    if (value := _literal(body.get(key))) is not None)
    return TfStore(path, start, address, name, kind, details)


def add_terraform(reader: ManifestReader) -> None:
    """Declare every store of the snapshot's Terraform files in ``reader``, and link each one
    named after a known service to it."""
    stores = read_terraform(reader.snap)
    linked = {(e.src, e.dst) for e in reader.batch.edges}
    for store in stores:
        ref = reader.snap.ref(store.path, store.line)
        entity = reader.declare((SCOPE, posixpath.dirname(store.path)), "Infrastructure",
                                store.name.value, ref)
        if entity.label != "Infrastructure":
            continue
        props = entity.props
        props.setdefault("kind", store.kind)
        union(props, "manifests", [store.path])
        union(props, "terraform", [store.address])
        for key, fact in store.details:
            props.setdefault(key, fact.value)
        union(props, "attribute_refs",
              [f"kind|{store.kind}|{ref}",
               *(f"{key}|{fact.value}|{reader.ref(fact)}" for key, fact in store.details)])
        service = _named_after(reader, store.name.value)
        if service is not None and (service, entity.ceid) not in linked:
            linked.add((service, entity.ceid))
            reader.edge("DEPENDS_ON", service, entity.ceid,
                        Fact(store.name.value, store.path, store.line), NAMED_AFTER,
                        {"via": "naming"})


def _named_after(reader: ManifestReader, name: str) -> str | None:
    """The one known service a store's name begins or ends with, the rest of it words of a
    store (``orders_rds`` → orders, ``dynamodb_carts`` → carts)."""
    words = _WORD.findall(name.lower())
    found: set[str] = set()
    for cut in range(1, len(words)):
        for service, rest in ((words[:cut], words[cut:]), (words[cut:], words[:cut])):
            if not set(rest) <= _STORE_WORDS:
                continue
            ceid = reader.index.exact("-".join(service))
            if ceid is not None:
                entity = reader.index.get(ceid)
                if entity.label == "Service" and not entity.pending_reason:
                    found.add(ceid)
    return found.pop() if len(found) == 1 else None
