"""Compose and Kubernetes manifests → services, datastores and their edges, with exact lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.compose import compose_files
from substrate.connectors.endpoints import HostRef, hosts_in, is_probe
from substrate.connectors.envfiles import interpolate, parse_env_file
from substrate.connectors.gitrepo import DEFAULT_THRESHOLD, batch_at
from substrate.connectors.infra_kinds import infra_kind, name_kind, redact, telemetry_product
from substrate.connectors.manifests import NAMED_AFTER
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import EdgeRecord, GraphBatch

ENV = {"TAG": "1.2", "EMPTY": "", "KAFKA_HOST": "kafka"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("img:${TAG}", "img:1.2"),
        ("$TAG-x", "1.2-x"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${EMPTY-fallback}", ""),
        ("${TAG:+set}", "set"),
        ("${MISSING:+set}", ""),
        ("${MISSING:-${KAFKA_HOST}}:9092", "kafka:9092"),
        ("cost $$5", "cost $5"),
        ("${MISSING}", ""),
    ],
)
def test_interpolation(text: str, expected: str) -> None:
    assert interpolate(text, ENV) == expected


def test_env_file_lines_quotes_and_comments() -> None:
    text = "# comment\nexport A=1\nB=\"two words\"\nC=plain # trailing\n\nD='x#y'\n"
    parsed = {k: (f.value, f.line) for k, f in parse_env_file(text, ".env").items()}
    assert parsed == {"A": ("1", 2), "B": ("two words", 3), "C": ("plain", 4), "D": ("x#y", 6)}


def test_env_file_values_use_the_variables_set_above_them() -> None:
    """Compose interpolates a .env value with the variables before it (opentelemetry-demo:
    ``CART_SERVICE_ADDR=cartservice:${CART_SERVICE_PORT}``); single quotes keep it literal."""
    text = ("CART_PORT=7070\nCART_ADDR=cartservice:${CART_PORT}\nEMAIL=\"http://email:${PORT:-8080}\"\n"
            "RAW='a${CART_PORT}'\nLATER=${UNSET_YET}x\nUNSET_YET=1\n")
    parsed = {k: f.value for k, f in parse_env_file(text, ".env").items()}
    assert parsed == {"CART_PORT": "7070", "CART_ADDR": "cartservice:7070",
                      "EMAIL": "http://email:8080", "RAW": "a${CART_PORT}", "LATER": "x",
                      "UNSET_YET": "1"}


@pytest.mark.parametrize(
    ("var", "value", "hosts"),
    [
        ("PAYMENT_URL", "http://paymentservice:8080/v1", [HostRef("paymentservice")]),
        ("DATABASE_URL", "postgres://u:p@orders-db:5432/orders", [HostRef("orders-db")]),
        ("DB_HOST", "orders-db", [HostRef("orders-db")]),
        ("KAFKA_BROKERS", "kafka:9092,kafka-2:9092", [HostRef("kafka"), HostRef("kafka-2")]),
        ("JDBC_URL", "jdbc:postgresql://db:5432/x", [HostRef("db")]),
        ("CATALOG_URL", "http://catalog.shop.svc.cluster.local:80", [HostRef("catalog", "shop")]),
        ("LOG_LEVEL", "debug", []),
        ("DB_HOST", "localhost", []),
        ("DB_HOST", "10.0.0.3", []),
        ("GREETING", "hello world", []),
        # key=value connection strings (ADO.NET, Npgsql): eShopOnContainers' SQL Server
        ("ConnectionStrings__CatalogDb",
         "Server=sqldata;Database=CatalogDb;User Id=sa;Password=Pass@word", [HostRef("sqldata")]),
        ("DB", "Server=tcp:sql.example.net,1433;Initial Catalog=x;Pwd=p",
         [HostRef("sql.example.net")]),
        ("PG", "Host=pg1,pg2;Port=5432;Database=app", [HostRef("pg1"), HostRef("pg2")]),
        ("DB", "Data Source=(local);Initial Catalog=x", []),
        ("FLAGS", "a=1;b=2", []),
        # libpq's keyword/value string (psycopg, lib/pq): opentelemetry-demo's product-reviews
        ("DB_CONNECTION_STRING", "host=astronomy-db user=u password=p dbname=x",
         [HostRef("astronomy-db")]),
        ("PG_DSN", "host=/var/run/postgresql dbname=x", []),
        ("OPTIONS", "mode=fast retries=3", []),
        # a host and a port, or a Kubernetes DNS name, say it under any variable name
        ("mongo", "user-db:27017", [HostRef("user-db")]),
        ("ZIPKIN", "zipkin.jaeger.svc.cluster.local", [HostRef("zipkin", "jaeger")]),
        ("IMAGE", "nginx:latest", []),
        ("VERSION", "1.2:30", []),
    ],
)
def test_hosts_in_env_values(var: str, value: str, hosts: list[HostRef]) -> None:
    assert hosts_in(var, value) == hosts


@pytest.mark.parametrize(
    ("image", "kind"),
    [
        ("postgres:16", "database"),
        ("bitnami/kafka:3.7", "queue"),
        ("redis:7@sha256:abc", "cache"),
        ("docker.elastic.co/elasticsearch/elasticsearch:8.14.0", "search"),
        ("rabbitmq:3-management", "queue"),
        ("ghcr.io/acme/checkout:1.0", None),
        # ftgo: DynamoDB Local built as "dynamodblocal"; a CDC service is not the database
        ("ftgo/dynamodblocal:latest", "database"), ("mysql/mysql-server:8.0", "database"),
        ("eventuateio/eventuate-tram-cdc-mysql-service:0.3.0", None),
        ("provectuslabs/kafka-ui:latest", None), ("prometheuscommunity/postgres-exporter", None),
        ("confluentinc/cp-kafka-connect:7.5.0", None), ("ftgo/dynamodblocal-init", None),
    ],
)
def test_infra_kind(image: str, kind: str | None) -> None:
    assert infra_kind(image) == kind


@pytest.mark.parametrize(
    ("image", "product"),
    [
        ("otel/opentelemetry-collector-contrib:0.98.0", "opentelemetry-collector"),
        ("ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-contrib"
         ":0.146.1", "opentelemetry-collector"),
        ("jaegertracing/all-in-one:1.57", "jaeger"), ("openzipkin/zipkin", "zipkin"),
        ("prom/prometheus", "prometheus"), ("gcr.io/datadoghq/agent:7", "datadog-agent"),
        ("grafana/otel-lgtm", "otel-lgtm"), ("fluent/fluent-bit:3", "fluent-bit"),
        # an application, a feature-flag service, a datastore, the demo's own images
        ("ghcr.io/acme/checkout:1.0", None), ("ghcr.io/open-feature/flagd:v0.14.2", None),
        ("redis:7", None), ("ghcr.io/open-telemetry/demo:latest-checkout", None),
    ],
)
def test_telemetry_product(image: str, product: str | None) -> None:
    assert telemetry_product(image) == product


def test_a_workload_named_as_a_datastore_is_one() -> None:
    """Sock Shop's Compose ``user-db`` runs ``weaveworksdemos/user-db`` with no port; its
    Kubernetes manifest listens on 27017: both are the datastore ``user-db``."""
    assert name_kind("user-db") == "database"
    assert name_kind("orders_database") == "database"
    assert name_kind("tockdb") == "database" and name_kind("mydb") is None  # 18F/tock
    assert name_kind("orders-mongo") == "database"
    assert name_kind("cart-redis") == "cache"
    assert name_kind("frontend") is None and name_kind("dbadmin") is None
    assert name_kind(None) is None


def test_compose_and_k8s_give_one_datastore_of_one_name(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "deploy/docker-compose.yml": (
            "services:\n  user:\n    image: acme/user:1\n    environment:\n"
            "      - MONGO_HOST=user-db:27017\n  user-db:\n    image: acme/user-db:1\n"),
        "deploy/k8s.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: user-db\nspec:\n"
            "  template:\n    spec:\n      containers:\n      - name: user-db\n"
            "        image: acme/user-db:1\n        ports:\n        - containerPort: 27017\n"),
    }, "init", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    named = {n.ceid: n.label for n in batch.nodes if n.props.get("name") == "user-db"}
    assert named == {"infra:user-db": "Infrastructure"}
    edges = {(e.type, e.src, e.dst) for e in batch.edges}
    assert ("DEPENDS_ON", "service:user", "infra:user-db") in edges


def test_a_datastore_built_from_the_repository_takes_its_kind_from_its_name(tmp_path: Path
                                                                         ) -> None:
    """OpenTelemetry demo's ``kafka`` runs ``ghcr.io/open-telemetry/demo:latest-kafka`` (built
    from the repository, no port published): its name says it is a broker."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {
        "docker-compose.yml": (
            "services:\n  checkout:\n    image: ghcr.io/acme/demo:latest-checkout\n"
            "    environment:\n      - KAFKA_ADDR=kafka:9092\n"
            "  kafka:\n    image: ghcr.io/acme/demo:latest-kafka\n    build:\n"
            "      context: ./\n      dockerfile: src/kafka/Dockerfile\n"),
    }, "init", "2026-08-03T09:00:00Z")
    kafka = next(n for n in batch_at(repo).nodes if n.props.get("name") == "kafka")
    assert (kafka.label, kafka.props["kind"]) == ("Infrastructure", "queue")


def test_redaction() -> None:
    assert redact("DB_PASSWORD", "x") == "DB_PASSWORD=***"
    assert redact("DSN", "postgres://u:secret@db:5432/x") == "DSN=postgres://u:***@db:5432/x"


def test_a_connection_string_password_is_masked_in_the_graph_and_on_the_edge() -> None:
    """``Password=`` inside a connection string was stored as written in the entity's
    ``env`` (eShopOnContainers: ``...;User Id=sa;Password=Pass@word;...``)."""
    value = "Server=sqldata;Database=CatalogDb;User Id=sa;Password=Pass@word;Encrypt=False"
    assert redact("ConnectionStrings__CatalogDb", value) == (
        "ConnectionStrings__CatalogDb=Server=sqldata;Database=CatalogDb;User Id=sa;"
        "Password=***;Encrypt=False")
    (ref,) = hosts_in("ConnectionStrings__CatalogDb", value)
    assert "Pass@word" not in ref.address and ref.address.endswith("Password=***;Encrypt=False")
    assert redact("DSN", "postgres://db/x?user=u&password=s3cret") == \
        "DSN=postgres://db/x?user=u&password=***"
    assert redact("DSN", "host=db dbname=x password=s3cret") == "DSN=host=db dbname=x password=***"


def test_compose_file_order() -> None:
    files = ["docker-compose.prod.yml", "docker-compose.override.yml", "compose.yaml", "x.yml"]
    assert compose_files(files) == {
        "": ["compose.yaml", "docker-compose.override.yml", "docker-compose.prod.yml"]
    }


def test_a_compose_variant_is_a_project_of_its_own() -> None:
    """TeaStore's examples/docker/docker-compose_default.yaml and _kieker.yaml, FAC's
    backend/docker-compose-web.yml beside backend/docker-compose.yml: read, but not merged
    over the base file as an overlay is."""
    files = ["backend/docker-compose.yml", "backend/docker-compose-web.yml",
             "examples/docker/docker-compose_default.yaml",
             "examples/docker/docker-compose_kieker.yaml", "docker-composer.yml"]
    assert compose_files(files) == {
        "backend": ["backend/docker-compose.yml"],
        "backend/docker-compose-web.yml": ["backend/docker-compose-web.yml"],
        "examples/docker/docker-compose_default.yaml":
            ["examples/docker/docker-compose_default.yaml"],
        "examples/docker/docker-compose_kieker.yaml":
            ["examples/docker/docker-compose_kieker.yaml"],
    }


COMPOSE = """\
services:
  checkout-service:
    image: acme/checkout:${TAG:-dev}
    environment:
      PAYMENT_URL: http://paymentservice:8080
      KAFKA_BROKERS: ${KAFKA_HOST}:9092
      PSP_URL: https://psp.example.com
      SELF_URL: http://checkout-service:8080
    depends_on:
      - orders-db
  paymentservice:
    image: acme/payment:1
    hostname: payment-api
    environment:
      - DATABASE_URL=postgres://pay:${DB_PASSWORD}@orders-db:5432/pay
    links:
      - "checkout-service:co"
  orders-db:
    image: postgres:16
  kafka:
    image: bitnami/kafka:3.7
"""
OVERRIDE = """\
services:
  checkout-service:
    environment:
      PAYMENT_URL: http://payment-api:8080
    depends_on:
      kafka:
        condition: service_started
"""
K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: reporting-api
  namespace: data
spec:
  template:
    metadata:
      labels:
        app: reporting
    spec:
      containers:
        - name: reporting
          image: acme/reporting:1
          env:
            - name: CHECKOUT_URL
              value: http://checkout-service:8080
            - name: WAREHOUSE_DSN
              value: clickhouse://warehouse.data.svc.cluster.local:9000
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: warehouse-0
  namespace: data
spec:
  template:
    metadata:
      labels:
        app: warehouse
    spec:
      containers:
        - name: clickhouse
          image: clickhouse/clickhouse-server:24.8
---
apiVersion: v1
kind: Service
metadata:
  name: warehouse
  namespace: data
spec:
  selector:
    app: warehouse
"""


def _batch(tmp_path: Path) -> tuple[GraphBatch, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        "docker-compose.yml": COMPOSE,
        "docker-compose.override.yml": OVERRIDE,
        ".env": "TAG=2.0\nKAFKA_HOST=kafka\nDB_PASSWORD=secret\n",
        "k8s/data.yaml": K8S,
        "services/checkout/README.md": "# checkout\n\nBuys things.\n",
        "services/reporting/README.md": "# reporting\n",
    }
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")
    return batch_at(repo), sha[:7]


def test_compose_and_k8s_nodes(tmp_path: Path) -> None:
    batch, short = _batch(tmp_path)
    nodes = {n.ceid: n for n in batch.nodes}
    checkout = nodes["service:checkout"]
    assert checkout.props["image"] == "acme/checkout:2.0"
    assert checkout.props["aliases"] == ["checkout-service"]
    assert checkout.props["description"] == "Buys things."
    assert "PAYMENT_URL=http://payment-api:8080" in checkout.props["env"]
    assert nodes["service:paymentservice"].props["aliases"] == ["payment-api"]
    assert (nodes["infra:orders-db"].label, nodes["infra:orders-db"].props["kind"]) == (
        "Infrastructure", "database",
    )  # fmt: skip
    assert nodes["infra:warehouse-0"].props["kind"] == "database"
    assert nodes["infra:namespace-data"].props["kind"] == "namespace"
    assert nodes["service:reporting"].props["aliases"] == ["reporting-api"]
    assert (
        "DATABASE_URL=postgres://pay:***@orders-db:5432/pay"
        in (nodes["service:paymentservice"].props["env"])
    )
    assert not batch.pending


def test_manifest_edges_with_exact_evidence(tmp_path: Path) -> None:
    batch, short = _batch(tmp_path)
    got = {
        (e.type, e.src, e.dst): (e.evidence_ref, e.confidence)
        for e in batch.edges
        if e.type in ("CALLS", "DEPENDS_ON", "HOSTS")
    }
    base, over, k8s = (f"{p}#L{{}}@{short}" for p in ("docker-compose.yml",
                       "docker-compose.override.yml", "k8s/data.yaml"))  # fmt: skip
    assert got == {
        ("CALLS", "service:checkout", "service:paymentservice"): (over.format(4), 0.95),
        # depends_on (override L6) and KAFKA_BROKERS (base L6): the line holding the address
        ("DEPENDS_ON", "service:checkout", "infra:kafka"): (base.format(6), 1.0),
        ("DEPENDS_ON", "service:checkout", "infra:orders-db"): (base.format(10), 1.0),
        ("DEPENDS_ON", "service:paymentservice", "infra:orders-db"): (base.format(15), 0.95),
        ("DEPENDS_ON", "service:paymentservice", "service:checkout"): (base.format(17), 1.0),
        ("CALLS", "service:reporting", "service:checkout"): (k8s.format(17), 0.95),
        ("DEPENDS_ON", "service:reporting", "infra:warehouse-0"): (k8s.format(19), 0.95),
        ("HOSTS", "infra:namespace-data", "service:reporting"): (k8s.format(5), 1.0),
        ("HOSTS", "infra:namespace-data", "infra:warehouse-0"): (k8s.format(25), 1.0),
    }
    kafka_env = next(
        e for e in batch.edges if e.eid == "service:checkout-[DEPENDS_ON]->infra:kafka"
    )
    assert kafka_env.props["evidence_refs"] == [base.format(6), over.format(6)]
    assert (kafka_env.props["host"], kafka_env.props["port"]) == ("kafka", 9092)


@pytest.mark.parametrize(("address", "probe"), [
    ("http://basket-api/hc", True), ("http://orders:8080/healthz", True),
    ("http://users/actuator/health", True), ("http://cart:7070/ready/", True),
    ("http://basket-api", False), ("http://basket-api:81", False),
    ("http://catalog/api/v1/items", False), ("basket-api:80", False), ("", False),
])
def test_probe_addresses(address: str, probe: bool) -> None:
    assert is_probe(address) is probe


def test_an_edge_keeps_the_address_peers_call_not_the_health_check(tmp_path: Path) -> None:
    """Two variables name the same peer; the health-check URL sorts first by name and
    comes first in the file, yet the edge states the base URL and cites its line."""
    compose = ("services:\n  basket:\n    image: shop/basket\n  aggregator:\n"
               "    image: shop/agg\n    environment:\n"
               "      - BasketHealthUrl=http://basket/hc\n"
               "      - urls__basket=http://basket\n")
    repo = tmp_path / "r"
    init_repo(repo)
    sha = commit_tree(repo, {"docker-compose.yml": compose}, "compose", "2026-01-01T00:00:00Z")
    batch = batch_at(repo, sha)
    (edge,) = [e for e in batch.edges if e.type == "CALLS"]
    assert edge.props["address"] == "http://basket"
    assert edge.props["var"] == "urls__basket"
    assert edge.evidence_ref == f"docker-compose.yml#L8@{sha[:7]}"
    assert edge.props["evidence_refs"] == [edge.evidence_ref, f"docker-compose.yml#L7@{sha[:7]}"]


def test_a_variable_passed_without_a_value_cites_the_env_line_and_the_passing_line(
        tmp_path: Path) -> None:
    """opentelemetry-demo's shape: ``environment: [CART_ADDR]`` takes the value from the
    project's .env, itself built from another variable; the edge's evidence is the .env line
    that holds the address, then the line that passes it."""
    compose = ("services:\n  checkout:\n    image: shop/checkout\n    environment:\n"
               "      - CART_ADDR\n      - LOG_LEVEL\n  cart:\n    image: shop/cart\n")
    env = "CART_PORT=7070\nCART_ADDR=cart:${CART_PORT}\n"
    repo = tmp_path / "r"
    init_repo(repo)
    sha = commit_tree(repo, {"docker-compose.yml": compose, ".env": env}, "init",
                      "2026-01-01T00:00:00Z")[:7]
    (edge,) = [e for e in batch_at(repo).edges if e.type == "CALLS"]
    assert (edge.src, edge.dst, edge.props["address"], edge.props["port"]) == \
        ("service:checkout", "service:cart", "cart:7070", 7070)
    assert edge.evidence_ref == f".env#L2@{sha}"
    assert edge.props["evidence_refs"] == [f".env#L2@{sha}", f"docker-compose.yml#L5@{sha}"]


def test_versions_of_one_app_are_one_service(tmp_path: Path) -> None:
    """Istio's Bookinfo: reviews-v1, -v2 and -v3, each labelled app: reviews and its version,
    behind the one Service reviews."""
    repo = init_repo(tmp_path / "repo")

    def deployment(version: str) -> str:
        return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: reviews-{version}\n"
                f"  labels:\n    app: reviews\n    version: {version}\nspec:\n  template:\n"
                f"    metadata:\n      labels:\n        app: reviews\n        version: {version}\n"
                f"    spec:\n      containers:\n      - name: reviews\n"
                f"        image: istio/examples-bookinfo-reviews-{version}:1.20.1\n")
    commit_tree(repo, {"platform/kube/bookinfo.yaml": "---\n".join(
        deployment(v) for v in ("v1", "v2", "v3"))}, "init", "2026-08-03T09:00:00Z")
    nodes = {n.ceid: n for n in batch_at(repo).nodes if n.ceid.startswith("service:")}
    assert list(nodes) == ["service:reviews"]
    assert nodes["service:reviews"].props["aliases"] == ["reviews-v1", "reviews-v2", "reviews-v3"]


SOCK_COMPOSE = """\
services:
  carts:
    image: weaveworksdemos/carts:0.4.8
  carts-db:
    image: mongo:3.4
  user:
    image: weaveworksdemos/user:0.4.7
    environment:
      - MONGO_HOST=user-db:27017
  user-db:
    image: weaveworksdemos/user-db:0.4.0
  session-db:
    image: redis:alpine
"""


def test_a_datastore_named_after_the_service_beside_it_is_a_suggested_dependency(
        tmp_path: Path) -> None:
    """Sock Shop's images hard-code their hosts: nothing in carts' settings names carts-db.
    The store named after it in the same Compose project is its dependency by name, under the
    verification threshold: it waits in the queue, at the store's line; user's is linked by
    its MONGO_HOST already, and session-db is named after no service."""
    repo = init_repo(tmp_path / "r")
    commit = commit_tree(repo, {"docker-compose.yml": SOCK_COMPOSE}, "c", "2024-01-01T00:00:00Z")
    batch = batch_at(repo)
    named = [e for e in [*batch.edges, *batch.pending]
             if isinstance(e, EdgeRecord) and e.props.get("via") == "naming"]
    assert [(e.type, e.src, e.dst, e.evidence_ref, e.confidence) for e in named] == [
        ("DEPENDS_ON", "service:carts", "infra:carts-db",
         f"docker-compose.yml#L4@{commit[:7]}", NAMED_AFTER)]
    assert named[0] in batch.pending and NAMED_AFTER < DEFAULT_THRESHOLD
    # user -> user-db by its setting, in the graph; nothing to session-db
    assert any(e.src == "service:user" and e.dst == "infra:user-db" and e.props["via"] == "env"
               for e in batch.edges)
    assert not any(e.dst == "infra:session-db" for e in [*batch.edges, *batch.pending]
                   if isinstance(e, EdgeRecord))
