"""Terraform configurations (``**/*.tf``) → the datastores, caches, brokers, search domains
and buckets they create, as ``Infrastructure`` entities.

* A ``resource`` block of a type that *is* such a thing (``aws_db_instance``,
  ``aws_rds_cluster``, ``aws_elasticache_replication_group``, ``aws_mq_broker``,
  ``google_sql_database_instance``, ``azurerm_redis_cache``, ``aws_s3_bucket``...; the list is
  :data:`RESOURCE_KINDS`) is one. A block that configures one (``aws_db_subnet_group``,
  ``aws_s3_bucket_policy``) is not. A Cloud Foundry ``cloudfoundry_service_instance`` is one
  of the kind its name states, as a manifest's bound service is (:mod:`cloudfoundry`).
* A ``module`` block is one when its source names such a thing: a registry module
  (``terraform-aws-modules/rds-aurora/aws``), a repository (``github.com/owner/terraform-aws-
  rds``, Terraform's shorthand, or a URL) or a repository's folder
  (``github.com/gsa-tts/terraform-cloudgov//database``). A local module (``./service``) is read
  where its own files are; when its folder is not in the repository (``./vendor/modules/aks//
  aks/postgres``, fetched at build time), by the kind its folder names; when its folder's
  store is a template its caller names (``bucket = var.name``), the call is the store.
* Not stores: a replication group's member node, a read replica.
* Its name is the block's ``name`` (or ``identifier``, ``bucket``...), with the folder's
  literal ``locals`` put in and the environment taken out (``"${local.app_name}-rds-${local.
  env}"`` is notify-api-rds, as its Cloud Foundry manifest binds it); else the block's label
  (``module "orders_rds"``: ``"${var.env}-orders"`` leaves "orders", which names no store). A
  module's ``name`` input that is a bare kind ("cache") gives way to the label. A block named
  by a variable in a reusable module (``aws_rds_cluster "db" { cluster_identifier =
  var.name }``, or a generic label such as ``"this"``) names no instance and is left out.
* The same name declared elsewhere (a Cloud Foundry manifest binding ``fac-db``) is the same
  entity: the Terraform file adds its kind and its declaration.
* Properties: ``kind``, ``terraform`` (the block's address, ``module.orders_rds``), the
  literal ``engine``, ``engine_version`` (``database_version``, ``redis_version``) and
  instance class, node type or tier (also in a nested ``settings``/``cluster_config``), each
  line in ``attribute_refs``; ``manifests`` holds the file.
* A store named after one known service (``orders_rds``, ``checkout_elasticache_redis``,
  ``dynamodb_carts``) that nothing else links to it → ``DEPENDS_ON`` from the service
  (``via: naming``, confidence 0.6, evidence at the block's first line), as
  :meth:`~substrate.connectors.manifests.ManifestReader.named_stores` does for manifests.
* A service known from elsewhere that a file deploys (:data:`COMPUTE`: App Runner, ECS,
  Lambda, Cloud Run, Cloud Foundry, Kubernetes resources; or a module given ``service_name``)
  keeps the file among its ``manifests`` and what it deploys it as (``terraform|path|an App
  Runner service|ref`` in ``attribute_refs``). Terraform creates no Service of its own.

Parsing is python-hcl2's (its Lark grammar of HCL2); a file it cannot parse is logged and
skipped. What a file declares is memoised by its text, so a history replay parses a file
again only when it changed.
"""

from __future__ import annotations

import logging
import posixpath
import re
from dataclasses import dataclass, replace
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
    "memorydb": "cache", "memorystore": "cache", "elasticache": "cache",
    "dynamodb": "database", "docdb": "database", "documentdb": "database",
    "cloudsql": "database", "spanner": "database", "alloydb": "database",
    "cosmosdb": "database", "redshift": "database", "dbforpostgresql": "database",
    "dbformysql": "database", "msk": "queue", "kinesis": "queue", "pubsub": "queue",
    "servicebus": "queue", "eventhub": "queue", "opensearch": "search", "gcs": "storage",
    "efs": "storage",
}  # fmt: skip
# a store's details written in a nested block: Cloud SQL's settings { tier }, OpenSearch's
# cluster_config { instance_type }
_NESTED = ("settings", "cluster_config")
# resources of a store's type that are part of another: a replication group's member node,
# a read replica
_PART_OF = {"aws_elasticache_cluster": "replication_group_id",
            "aws_db_instance": "replicate_source_db"}
# locals and variables naming the environment: taken out of a name, not put in
# ("${local.app_name}-rds-${local.env}" is notify-api-rds, as its manifest binds it)
_ENV_NAMES = re.compile(r"^(?:env|environment|env_name|environment_name|stage|stage_name"
                        r"|workspace|cf_space_name|space)$")
_INTERPOLATION = re.compile(r"\$\{([^{}]*)\}")
_HOSTS = ("github.com", "bitbucket.org", "gitlab.com")
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
    "storage", "search", "blob",
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
    # a local module's folder (``module_folder``): the call is a store when the folder is not
    # in the snapshot (vendored at build time) and its source names a kind, or when the
    # folder holds a store's template (then of the template's kind)
    module_folder: str | None = None
    # a reusable module's own store, named by its caller (``cluster_identifier = var.name``):
    # no instance of its own
    template: bool = False


def is_terraform_path(path: str) -> bool:
    """A Terraform configuration file (not one in a ``.terraform/`` working folder)."""
    return path.endswith(".tf") and ".terraform/" not in f"/{path}"


def read_terraform(snap: GitSnapshot) -> tuple[list[TfStore], list[TfDeploy]]:
    """The stores every Terraform file of the snapshot creates, and the services it deploys,
    in path order."""
    paths = [p for p in snap.files() if is_terraform_path(p)]
    snap.preload(paths)
    folders: dict[str, list[str]] = {}
    for path in paths:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    stores: list[TfStore] = []
    deploys: list[TfDeploy] = []
    for inside in folders.values():
        known = folder_locals(tuple((p, snap.read(p)) for p in inside if _LOCALS.search(
            snap.read(p))))
        for path in inside:
            stores += stores_in(path, snap.read(path), known)
            deploys += deploys_in(path, snap.read(path), known)
    return sorted(instances(stores, set(folders)), key=lambda s: (s.path, s.line)), deploys


def instances(found: list[TfStore], folders: set[str]) -> list[TfStore]:
    """The stores that are instances: templates left out, a local module's call kept as the
    store its folder's template makes (``module "documents" { source = "../modules/storage"
    name = "docs" }``), or, when its folder is not in the snapshot, as its source names."""
    templates: dict[str, str] = {}
    for store in found:
        if store.template:
            templates.setdefault(posixpath.dirname(store.path), store.kind)
    out = []
    for store in found:
        folder = store.module_folder
        if store.template or (folder is None and not store.kind):
            continue
        if folder is not None and folder in folders:
            if folder not in templates:
                continue  # read where its files are
            store = replace(store, kind=templates[folder])
        elif folder is not None and not store.kind:
            continue
        out.append(store)
    return out


@dataclass(frozen=True)
class TfDeploy:
    """A service a Terraform file deploys: a compute resource, or a module given the
    service's name (``service_name = "orders"``)."""

    path: str
    line: int
    address: str
    name: str
    what: str  # "an ECS service", ...


COMPUTE: dict[str, str] = {
    "aws_ecs_service": "an ECS service", "aws_apprunner_service": "an App Runner service",
    "aws_lambda_function": "a Lambda function",
    "aws_elastic_beanstalk_environment": "an Elastic Beanstalk environment",
    "google_cloud_run_service": "a Cloud Run service",
    "google_cloud_run_v2_service": "a Cloud Run service",
    "google_cloudfunctions_function": "a Cloud Function",
    "google_cloudfunctions2_function": "a Cloud Function",
    "azurerm_container_app": "an Azure container app",
    "azurerm_linux_web_app": "an Azure web app", "azurerm_windows_web_app": "an Azure web app",
    "azurerm_linux_function_app": "an Azure function app",
    "cloudfoundry_app": "a Cloud Foundry app", "heroku_app": "a Heroku app",
    "kubernetes_deployment": "a Kubernetes Deployment",
    "kubernetes_deployment_v1": "a Kubernetes Deployment",
    "kubernetes_stateful_set": "a Kubernetes StatefulSet",
    "kubernetes_stateful_set_v1": "a Kubernetes StatefulSet",
}  # fmt: skip
_SERVICE_NAMES = ("service_name", "function_name", "app_name", "name")
_NAMES_A_SERVICE = re.compile(r"^\s*(?:service_name|app_name)\s*=", re.M)


@lru_cache(maxsize=4096)
def deploys_in(path: str, text: str, known: tuple[tuple[str, str], ...] = ()
               ) -> tuple[TfDeploy, ...]:
    """The services one file deploys, each by the name it gives it (its folder's locals put
    in, the environment taken out: ``"${var.environment_name}-orders"`` is orders)."""
    if not ({m.group(1) for m in _OPENS.finditer(text)} & COMPUTE.keys()
            or _NAMES_A_SERVICE.search(text)):
        return ()
    doc = _parsed(path, text)
    if doc is None:
        return ()
    at = _Block(path, text.replace("\r\n", "\n").splitlines(), dict(known))
    found: list[TfDeploy] = []
    for entry in _blocks(doc, "resource"):
        for rtype, labelled in entry.items():
            for label, body in _labelled(labelled):
                if rtype in COMPUTE and label.lower() not in _GENERIC:
                    meta = body.get("metadata")  # kubernetes_*: metadata { name }
                    inner = meta[0] if isinstance(meta, list) and meta else body
                    name = next((n for k in _SERVICE_NAMES
                                 if (n := at.name(inner if isinstance(inner, dict) else body,
                                                  k, of_store=False))), None)
                    found.append(TfDeploy(path, int(body.get("__start_line__", 1)),
                                          f"{rtype}.{label}", name or label, COMPUTE[rtype]))
    for entry in _blocks(doc, "module"):
        for label, body in _labelled(entry):
            name = next((n for k in ("service_name", "app_name")
                         if (n := at.name(body, k, of_store=False))), None)
            if name:
                found.append(TfDeploy(path, int(body.get("__start_line__", 1)),
                                      f"module.{label}", name, f"module {label}"))
    return tuple(sorted(found, key=lambda d: d.line))


_LOCALS = re.compile(r"^\s*locals\s*\{", re.M)


@lru_cache(maxsize=1024)
def folder_locals(files: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The literal string locals of one folder's files (``locals { app_name = "notify" }``)."""
    found: dict[str, str] = {}
    for path, text in files:
        for block in _blocks(_parsed(path, text) or {}, "locals"):
            found.update((k, v) for k, v in block.items()
                         if isinstance(v, str) and _literal(v) and not k.startswith("__"))
    return tuple(sorted(found.items()))


@lru_cache(maxsize=4096)
def _parsed(path: str, text: str) -> dict[str, Any] | None:
    from hcl2.api import loads  # its Lark parser is built at the first import (~0.8 s)

    try:  # the grammar takes no CR (files written on Windows)
        doc: dict[str, Any] = loads(text.replace("\r\n", "\n"), with_meta=True)
    except Exception as exc:  # noqa: BLE001 - any parse error: the file is skipped
        log.info("terraform: %s not parsed (%s)", path, str(exc).splitlines()[0][:200])
        return None
    return doc


# the blocks a file opens and the module sources it names, read before parsing it: most files
# (variables, outputs, networks, IAM) create no store, and parsing takes ~9 ms a file
_OPENS = re.compile(r'^\s*resource\s+"?([\w-]+)"?', re.M)
_SOURCES = re.compile(r'^\s*source\s*=\s*"([^"]*)"', re.M)
_KINDED = frozenset({*RESOURCE_KINDS, "cloudfoundry_service_instance"})


def may_create_a_store(text: str) -> bool:
    """Does the file open a resource block of a store's type, or call a store's module or a
    local module (whose folder may hold a store's template)?"""
    return bool({m.group(1) for m in _OPENS.finditer(text)} & _KINDED) \
        or any(any(module_kind(s, "")) for s in _SOURCES.findall(text))


def module_kind(source: str | None, path: str) -> tuple[str | None, str | None]:
    """(the kind a module's source names, the folder of a local module): a local module's
    kind is its folder's (``./vendor/modules/aks//aks/postgres``: database), used only when
    that folder is not in the snapshot (see :class:`TfStore`)."""
    kind = source_kind(source)
    if kind is not None or not source or not source.startswith("."):
        return kind, None
    folder, _, inner = source.partition("//")
    kind = source_kind(f"local//{inner or posixpath.basename(folder.rstrip('/'))}")
    return kind, posixpath.normpath(posixpath.join(posixpath.dirname(path), folder))


@lru_cache(maxsize=4096)
def stores_in(path: str, text: str, known: tuple[tuple[str, str], ...] = ()
              ) -> tuple[TfStore, ...]:
    """The stores one file creates, ``known``: its folder's literal locals (memoised)."""
    if not may_create_a_store(text):
        return ()
    doc = _parsed(path, text)
    if doc is None:
        return ()
    lines = text.replace("\r\n", "\n").splitlines()
    at = _Block(path, lines, dict(known))
    out: list[TfStore] = []
    for entry in _blocks(doc, "resource"):
        for rtype, labelled in entry.items():
            for label, body in _labelled(labelled):
                kind = RESOURCE_KINDS.get(rtype)
                if rtype == "cloudfoundry_service_instance":
                    kind = instance_kind(at.name(body, "name") or label)
                if rtype in _PART_OF and body.get(_PART_OF[rtype]) is not None:
                    continue  # a member or replica of another store
                store = kind and at.store(f"{rtype}.{label}", label, body, kind)
                if store:
                    out.append(store)
    for entry in _blocks(doc, "module"):
        for label, body in _labelled(entry):
            kind, folder = module_kind(_literal(body.get("source")), path)
            if kind or folder:  # a local module's kind may be its template's
                store = at.store(f"module.{label}", label, body, kind or "", module=True)
                if store:
                    out.append(replace(store, module_folder=folder))
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
        # registry "namespace/name/provider" or "host/namespace/name/provider"; a repository
        # "github.com/owner/repo" (Terraform's shorthand) or a URL names the repository last
        registry = ":" not in source and (
            (len(pieces) == 3 and "." not in pieces[0])
            or (len(pieces) == 4 and "." in pieces[0] and pieces[0] not in _HOSTS))
        part = pieces[-2] if registry else pieces[-1].removesuffix(".git")
    part = re.sub(r"^terraform-[a-z0-9]+-", "", part.lower())
    words = set(_WORD.findall(part))
    for word, kind in _SOURCE_WORDS.items():
        if word in words or word == "".join(_WORD.findall(part)):  # "memory-db"
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


@dataclass
class _Block:
    """Reads one file's blocks: names, details and the lines writing them."""

    path: str
    lines: list[str]
    known: dict[str, str]  # the folder's literal locals

    def line_of(self, start: int, end: int, key: str, depth: int = 1) -> int:
        """The line of ``key = ...`` at ``depth`` inside the block (1: its own attributes;
        2: those of a block inside it), the block's first line when not found."""
        pattern, level = re.compile(rf"^\s*{re.escape(key)}\s*="), 0
        for n in range(start, min(end, len(self.lines)) + 1):
            text = self.lines[n - 1]
            if level == depth and pattern.match(text):
                return n
            level += text.count("{") - text.count("}")
        return start

    def name(self, body: dict[str, Any], key: str, of_store: bool = True) -> str | None:
        """A name as written, its folder's literal locals put in and the environment
        taken out ("${local.app_name}-rds-${local.env}" → notify-api-rds); None when a part
        of it is only known when applied and what is left names no store (``of_store``; else
        when nothing is left)."""
        value = body.get(key)
        if not isinstance(value, str) or not value:
            return None
        if _literal(value):
            return value

        def put(match: re.Match[str]) -> str:
            ref = match.group(1).strip()
            local = ref.removeprefix("local.")
            if ref != local and local in self.known and not _ENV_NAMES.match(local):
                return self.known[local]
            return match.group(0)

        filled = _INTERPOLATION.sub(put, value)
        if _literal(filled):
            return filled
        left = re.sub(r"[-_.]*\$\{[^{}]*\}[-_.]*", "-", filled).strip("-_.")
        return left if left and "$" not in left and (not of_store or instance_kind(left)) \
            else None

    def store(self, address: str, label: str, body: dict[str, Any], kind: str,
              module: bool = False) -> TfStore | None:
        start, end = int(body.get("__start_line__", 1)), int(body.get("__end_line__", 1))
        name: Fact | None = None
        for key in _NAME_ATTRS:
            value = self.name(body, key)
            # a module's "name" input that is a bare kind ("cache") says less than its label
            if value and not (module and _only_store_words(value)):
                name = Fact(value, self.path, self.line_of(start, end, key))
                break
            if body.get(key) is not None:  # named by what is known only when applied
                if _bare_variable(body[key]) and (_only_store_words(label)
                                                  or label.lower() in _GENERIC):
                    # a reusable module's template: aws_rds_cluster "db"
                    return TfStore(self.path, start, address, Fact(label, self.path, start),
                                   kind, (), template=True)
                break
        if name is None:
            if label.lower() in _GENERIC:
                return None
            name = Fact(label, self.path, start)
        return TfStore(self.path, start, address, name, kind, self.details(body, start, end))

    def details(self, body: dict[str, Any], start: int, end: int
                ) -> tuple[tuple[str, Fact], ...]:
        out = []
        for key in _DETAILS:
            value, depth = _literal(body.get(key)), 1
            for nested in _NESTED:
                inner = body.get(nested)
                if value is None and isinstance(inner, list) and inner \
                        and isinstance(inner[0], dict):
                    value, depth = _literal(inner[0].get(key)), 2
            if value is not None:
                out.append((key, Fact(value, self.path,
                                      self.line_of(start, end, key, depth))))
        return tuple(out)


def _only_store_words(name: str) -> bool:
    return set(_WORD.findall(name.lower())) <= _STORE_WORDS


def _bare_variable(value: Any) -> bool:
    """``var.name`` as a whole (the module's caller names the instance); not the
    environment's name (``domain_name = var.environment_name``: one per environment)."""
    found = re.fullmatch(r"\$\{var\.([\w-]+)\}", value) if isinstance(value, str) else None
    return found is not None and not _ENV_NAMES.match(found.group(1))


def add_terraform(reader: ManifestReader) -> None:
    """Declare every store of the snapshot's Terraform files in ``reader``, and link each one
    named after a known service to it; a known service a Terraform file deploys keeps the
    file among its ``manifests``, cited at the block."""
    stores, deploys = read_terraform(reader.snap)
    for deploy in deploys:  # only a service known from elsewhere: Terraform names many things
        ceid = reader.index.exact(deploy.name)
        app = reader.index.get(ceid) if ceid is not None else None
        if app is not None and app.label == "Service" and not app.pending_reason:
            ref = reader.snap.ref(deploy.path, deploy.line)
            app.add_evidence(ref)
            union(app.props, "manifests", [deploy.path])
            union(app.props, "terraform", [deploy.address])
            # the file as it is now, what it deploys the service as, the block's line
            union(app.props, "attribute_refs", [f"terraform|{deploy.path}|{deploy.what}|{ref}"])
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
