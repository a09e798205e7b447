"""What a container image, a port or a name says a workload is: a datastore or broker
(``Infrastructure`` of a kind: database, cache, queue, search, coordination, storage) or an
application (``None``); and the environment with its secrets masked. Shared by the Compose,
Kubernetes (:mod:`manifests`) and Cloud Foundry (:mod:`cloudfoundry`) readers."""

from __future__ import annotations

import re
from functools import lru_cache

from substrate.connectors.endpoints import mask_passwords
from substrate.connectors.yamlnodes import Fact

KINDS: dict[str, tuple[str, ...]] = {
    "database": ("postgres", "postgis", "mysql", "mariadb", "mongo", "cassandra", "scylla",
                 "cockroach", "clickhouse", "timescale", "mssql", "couchdb", "dynamodb"),
    "cache": ("redis", "memcached", "valkey", "keydb", "dragonfly"),
    "queue": ("kafka", "rabbitmq", "nats", "activemq", "pulsar", "redpanda", "mosquitto"),
    "search": ("elasticsearch", "opensearch", "solr", "meilisearch", "typesense"),
    "coordination": ("zookeeper", "etcd", "consul"),
    "storage": ("minio",),
}  # fmt: skip
_PORTS = {
    5432: "database", 3306: "database", 27017: "database", 9042: "database", 26257: "database",
    1433: "database", 6379: "cache", 11211: "cache", 9092: "queue", 5672: "queue",
    4222: "queue", 9200: "search",
}  # fmt: skip
SECRET = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|API_KEY|PRIVATE", re.IGNORECASE)
WORD = re.compile(r"[a-z0-9]+")


# words of an image that runs beside a datastore rather than being one: its admin UI, exporter,
# change-data-capture or connector, init job, operator ("kafka-ui", "postgres-exporter",
# "eventuate-tram-cdc-mysql-service", "dynamodblocal-init", "cp-kafka-connect")
_BESIDE = frozenset({
    "ui", "gui", "web", "admin", "console", "dashboard", "dashboards", "commander", "express",
    "insight", "insights", "exporter", "cdc", "connect", "connector", "proxy", "init",
    "migrate", "migrations", "operator", "manager", "client", "cli", "service", "setup",
})  # fmt: skip
# a product's name run together with one of these is still the product ("dynamodblocal",
# "postgresql", "mongodb", "mysqlserver")
JOINED = ("ql", "db", "local", "server")


def infra_product(image: str | None) -> str | None:
    """The datastore or broker product a container image runs ("mongo:3.4" -> mongo,
    "bitnami/rabbitmq:3.12" -> rabbitmq); ``None`` when it names none (or runs beside one)."""
    words = _image_words(image)
    if not words or words & _BESIDE:
        return None
    for names in KINDS.values():
        for w in names:
            if w in words or any(f"{w}{j}" in words for j in JOINED):
                return w
    return None


def _image_words(image: str | None) -> set[str]:
    if not image:
        return set()
    path = image.split("@")[0].lower()
    path = path.rsplit(":", 1)[0] if ":" in path.rsplit("/", 1)[-1] else path
    return set(WORD.findall(path.split("/", 1)[-1] if "." in path.split("/")[0] else path))


@lru_cache(maxsize=4096)  # asked per workload and commit, for a few hundred images at most
def infra_kind(image: str | None) -> str | None:
    """Infrastructure kind of a container image, ``None`` for an application image (and for
    a tool that runs beside a datastore: ``_BESIDE``)."""
    words = _image_words(image)
    if not words or words & _BESIDE:
        return None
    for kind, names in KINDS.items():
        if any(w in words or any(f"{w}{j}" in words for j in JOINED) for w in names):
            return kind
    return None


# observability products, each with the words its image holds (the first that matches): where
# services send traces, metrics and logs. A service is not down because its collector is, so a
# dependency or impact path never passes through one (``cypher/_direct.j2``); it is still a
# peer of its own.
TELEMETRY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("opentelemetry-collector", ("opentelemetry", "collector")),
    ("otel-collector", ("otel", "collector")), ("otelcol", ("otelcol",)),
    ("otel-lgtm", ("otel", "lgtm")), ("jaeger", ("jaeger",)), ("jaeger", ("jaegertracing",)),
    ("zipkin", ("zipkin",)), ("tempo", ("tempo",)), ("loki", ("loki",)),
    ("alloy", ("alloy",)), ("promtail", ("promtail",)), ("prometheus", ("prometheus",)),
    ("pushgateway", ("pushgateway",)), ("alertmanager", ("alertmanager",)),
    ("grafana", ("grafana",)), ("datadog-agent", ("datadog", "agent")),
    ("datadog-agent", ("datadoghq", "agent")), ("fluentd", ("fluentd",)),
    ("fluent-bit", ("fluent", "bit")), ("signoz", ("signoz",)), ("apm-server", ("apm", "server")),
    ("victoriametrics", ("victoriametrics",)), ("statsd", ("statsd",)),
    ("graphite", ("graphite",)),
)  # fmt: skip


@lru_cache(maxsize=4096)
def telemetry_product(image: str | None) -> str | None:
    """The observability product a container image runs ("otel/opentelemetry-collector-contrib:
    0.98" -> opentelemetry-collector, "jaegertracing/all-in-one" -> jaeger), ``None`` for any
    other image."""
    words = _image_words(image)
    return next((product for product, names in TELEMETRY
                 if all(name in words for name in names)), None)


def port_kind(ports: list[str]) -> str | None:
    """Infrastructure kind of a workload listening on a well-known datastore port."""
    for text in ports:
        target = text.rsplit(":", 1)[-1].split("/")[0]
        if target.isdigit() and int(target) in _PORTS:
            return _PORTS[int(target)]
    return None


@lru_cache(maxsize=16_384)
def redact(var: str, value: str) -> str:
    """``VAR=value`` with secrets masked (secret-named variables, passwords inside URLs and
    connection strings)."""
    if SECRET.search(var):
        return f"{var}=***"
    return f"{var}={mask_passwords(value)}"


# "user-db", "orders_database", and run together after a word: "tockdb", "usersdb"
_DB_NAME = re.compile(r"(?:^|[-_.]|(?<=[a-z]{3}))(?:db|database)$", re.IGNORECASE)


def name_kind(name: str | None) -> str | None:
    """Infrastructure kind a workload's name states when nothing else does: ``user-db``,
    ``orders_database``, ``orders-mongo`` (Sock Shop's Compose file runs its own
    ``weaveworksdemos/user-db`` image with no port, its Kubernetes manifest the same workload
    on 27017: one datastore, not a service and a datastore of one name)."""
    if not name:
        return None
    return "database" if _DB_NAME.search(name) else infra_kind(name)


def kind_of(image: str | None, ports: list[Fact], name: str | None = None) -> str | None:
    if image and infra_kind(image):
        return infra_kind(image)
    return port_kind([p.value for p in ports]) or name_kind(name)
