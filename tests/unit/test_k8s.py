"""Kubernetes ConfigMaps read through envFrom / configMapKeyRef, addresses on edges, templates."""

from __future__ import annotations

from pathlib import Path

from substrate.connectors.endpoints import hosts_in
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.k8s import is_template
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import EdgeRecord, GraphBatch

CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: api-config
data:
  ORDERS_API_ADDR: "orders:8080"
  LOG_LEVEL: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: db-config
data:
  DB_URI: postgresql://app:s3cret@orders-db:5432/orders
"""

FRONTEND = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  template:
    spec:
      containers:
        - name: frontend
          image: example/frontend:1
          envFrom:
            - configMapRef:
                name: api-config
"""

ORDERS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  template:
    spec:
      containers:
        - name: orders
          image: example/orders:1
          env:
            - name: DATABASE
              valueFrom:
                configMapKeyRef:
                  name: db-config
                  key: DB_URI
            - name: MISSING
              valueFrom:
                configMapKeyRef:
                  name: no-such-config
                  key: X
"""

ORDERS_DB = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: orders-db
spec:
  template:
    spec:
      containers:
        - name: db
          image: registry.example/team/orders-db:1
          ports:
            - containerPort: 5432
"""

HELM_TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "chart.fullname" . }}
spec:
  template:
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}"
"""

VARIANT_CONFIG = CONFIG.replace("orders:8080", "orders-variant:9090")


def _edge(batch: GraphBatch, src: str, dst: str) -> EdgeRecord:
    return next(e for e in batch.edges if e.src == src and e.dst == dst)


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        "k8s/config.yaml": CONFIG,
        "k8s/frontend.yaml": FRONTEND,
        "k8s/orders.yaml": ORDERS,
        "k8s/orders-db.yaml": ORDERS_DB,
        "variants/far/away/config.yaml": VARIANT_CONFIG,
        "charts/orders/Chart.yaml": "apiVersion: v2\nname: orders\nversion: 0.1.0\n",
        "charts/orders/templates/deployment.yaml": HELM_TEMPLATE,
    }
    return repo, commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]


def test_envfrom_configmap_gives_a_call_with_address_on_the_configmap_line(tmp_path: Path) -> None:
    repo, short = _repo(tmp_path)
    batch = batch_at(repo)
    call = _edge(batch, "service:frontend", "service:orders")
    assert call.type == "CALLS"
    assert call.evidence_ref == f"k8s/config.yaml#L6@{short}"  # the nearest ConfigMap's line
    assert call.props["address"] == "orders:8080"
    assert (call.props["host"], call.props["port"]) == ("orders", 8080)
    assert call.props["via"] == "configmap" and call.props["configmap"] == "api-config"
    assert f"k8s/frontend.yaml#L13@{short}" in call.props["evidence_refs"]  # envFrom line


def test_config_map_key_ref_and_datastore_by_port(tmp_path: Path) -> None:
    repo, short = _repo(tmp_path)
    batch = batch_at(repo)
    db = next(n for n in batch.nodes if n.name == "orders-db")
    assert (db.ceid, db.label, db.props["kind"]) == ("infra:orders-db", "Infrastructure",
                                                     "database")
    dep = _edge(batch, "service:orders", "infra:orders-db")
    assert dep.type == "DEPENDS_ON"
    assert dep.evidence_ref == f"k8s/config.yaml#L14@{short}"
    assert dep.props["address"] == "postgresql://app:***@orders-db:5432/orders"  # no secret
    assert dep.props["port"] == 5432 and dep.props["var"] == "DATABASE"
    assert f"k8s/orders.yaml#L15@{short}" in dep.props["evidence_refs"]  # configMapKeyRef


def test_unresolved_configmap_and_templates_create_nothing(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    batch = batch_at(repo)
    names = sorted(n.name for n in batch.nodes if n.label in ("Service", "Infrastructure")
                   and not n.ceid.startswith("infra:namespace"))
    assert names == ["frontend", "orders", "orders-db"]  # nothing from the Helm template
    assert not any("orders-variant" in str(e.props) for e in batch.edges)
    assert not any("{{" in str(n.props) for n in batch.nodes)


def test_is_template() -> None:
    assert is_template(HELM_TEMPLATE)
    assert is_template("a: {{- .Values.x }}\n")
    assert not is_template(FRONTEND)
    assert not is_template('json: "{{not a template"\n')


def test_addresses_and_ports_of_env_values() -> None:
    (ref,) = hosts_in("LEDGER_ADDR", "ledgerwriter:8080")
    assert (ref.host, ref.address, ref.port) == ("ledgerwriter", "ledgerwriter:8080", 8080)
    (ref,) = hosts_in("SPRING_DATASOURCE_URL", "jdbc:postgresql://ledger-db:5432/postgresdb")
    assert ref.edge_props() == {"address": "jdbc:postgresql://ledger-db:5432/postgresdb",
                                "host": "ledger-db", "port": 5432}
    (ref,) = hosts_in("RABBITMQ_ADDRESSES", "rabbitmq:5672")
    assert ref.port == 5672
    (ref,) = hosts_in("DB_URL", "postgres://user:pw@db/app")
    assert ref.port is None and "port" not in ref.edge_props()
    assert hosts_in("FOO_ADDR", "not an address") == []


KUSTOMIZATION = """\
resources:
  - worker.yaml
namespace: shop
configMapGenerator:
  - name: worker-config
    literals:
      - ORDERS_URL=http://orders:8080
    envs:
      - worker.env
      - not-an-env-file.properties
"""
WORKER = FRONTEND.replace("frontend", "worker").replace("api-config", "worker-config").replace(
    "metadata:\n  name: worker\n", "metadata:\n  name: worker\n  namespace: shop\n")
ORDERS_IN_SHOP = ORDERS.replace("metadata:\n  name: orders\n",
                                "metadata:\n  name: orders\n  namespace: shop\n")


def test_kustomize_config_map_generator(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files = {"app/kustomization.yaml": KUSTOMIZATION, "app/worker.yaml": WORKER,
             "app/worker.env": "# cache\nCACHE_HOST=redis-cache\n",
             "app/not-an-env-file.properties": "SEARCH_URL=http://search:9200\n",
             "app/orders.yaml": ORDERS_IN_SHOP,
             "app/search.yaml": FRONTEND.replace("frontend", "search").replace(
                 "metadata:\n  name: search\n", "metadata:\n  name: search\n  namespace: shop\n"),
             "app/redis.yaml": ORDERS_DB.replace("orders-db", "redis-cache").replace(
                 "team/orders-db:1", "redis:7")}
    short = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")[:7]
    batch = batch_at(repo)
    call = _edge(batch, "service:worker", "service:orders")
    assert call.evidence_ref == f"app/kustomization.yaml#L7@{short}"  # the literal's line
    assert (call.props["address"], call.props["configmap"]) == ("http://orders:8080",
                                                                "worker-config")
    cache = _edge(batch, "service:worker", "infra:redis-cache")
    assert cache.evidence_ref == f"app/worker.env#L2@{short}"
    assert "service:search" in {n.ceid for n in batch.nodes}
    assert not any(e.src == "service:worker" and e.dst == "service:search" for e in batch.edges)


POPULATE_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: populate-orders-db
spec:
  template:
    spec:
      containers:
      - name: populate
        image: postgres:16
        env:
        - name: DATABASE
          value: postgresql://orders-db:5432/orders
"""


def test_a_job_that_populates_a_database_is_neither_a_datastore_nor_a_service(
        tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"k8s/orders-db.yaml": ORDERS_DB, "k8s/populate.yaml": POPULATE_JOB},
                "init", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    job = next(n for n in batch.nodes if n.name == "populate-orders-db")
    assert (job.ceid, job.label, job.props["kind"]) == ("infra:populate-orders-db",
                                                        "Infrastructure", "job")
    db = next(n for n in batch.nodes if n.name == "orders-db")
    assert (db.label, db.props["kind"]) == ("Infrastructure", "database")
    assert _edge(batch, "infra:populate-orders-db", "infra:orders-db").type == "DEPENDS_ON"


RENDERED = """\
# Source: shop/templates/dashboards.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-dashboards
data:
  pods.json: |
    {"targets": [{"legendFormat": "{{instance}}"}]}
  rules.yaml: |
    summary: "{{ $labels.pod }} is down"
---
# Source: shop/templates/component.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-cart
  labels:
    app.kubernetes.io/instance: shop
    app.kubernetes.io/component: cart
spec:
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: shop
    spec:
      containers:
        - name: cart
          image: example/cart:1
          env:
            - name: CATALOG_ADDR
              value: "shop-catalog:8080"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-catalog
  labels:
    app.kubernetes.io/instance: shop
spec:
  template:
    spec:
      containers:
        - name: catalog
          image: example/catalog:1
"""


def test_a_rendered_chart_is_read_though_its_texts_hold_placeholders() -> None:
    """opentelemetry-demo's kubernetes/opentelemetry-demo.yaml: Grafana legends and
    Prometheus alert texts inside strings are not a template; Helm actions are, even quoted."""
    assert not is_template(RENDERED)
    assert is_template('apiVersion: v1\nkind: Pod\nmetadata:\n  name: "{{ .Release.Name }}"\n')
    assert is_template("apiVersion: v1\nkind: Pod\n{{- if .Values.on }}\nmetadata: {}\n"
                       "{{- end }}\n")


def test_a_release_prefixed_workload_is_the_component_compose_names(tmp_path: Path) -> None:
    """``shop-cart`` labelled ``app.kubernetes.io/instance: shop`` is the ``cart`` of the
    Compose file: one entity, the rendered name an alias; a component no other source names,
    and a datastore (``shop-rabbitmq``), keep their rendered names."""
    compose = ("services:\n  cart:\n    image: example/cart:1\n  rabbitmq:\n"
               "    image: rabbitmq:3-management\n")
    broker = ("---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: shop-rabbitmq\n"
              "  labels:\n    app.kubernetes.io/instance: shop\nspec:\n  template:\n    spec:\n"
              "      containers:\n        - name: rabbitmq\n"
              "          image: rabbitmq:3-management\n")
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"docker-compose.yml": compose, "k8s/shop.yaml": RENDERED + broker},
                "init", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    services = sorted(n.ceid for n in batch.nodes if n.label == "Service")
    # shop-catalog keeps its rendered name: no other source calls anything "catalog"
    assert services == ["service:cart", "service:shop-catalog"]
    cart = next(n for n in batch.nodes if n.ceid == "service:cart")
    assert "shop-cart" in cart.props["aliases"]
    assert _edge(batch, "service:cart", "service:shop-catalog").props["address"] == \
        "shop-catalog:8080"
    # a datastore's short name is its product's: the release's broker is its own entity
    assert {"infra:rabbitmq", "infra:shop-rabbitmq"} <= {n.ceid for n in batch.nodes}


LOADGEN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: loadgen
spec:
  template:
    spec:
      initContainers:
        - name: wait-for-frontend
          image: busybox:latest
          command: ["/bin/sh", "-c", "until wget -qO- http://frontend:80; do sleep 2; done"]
      containers:
        - name: main
          image: example/loadgen:1
          env:
            - name: FRONTEND_ADDR
              value: "frontend:80"
"""


def test_the_image_is_the_containers_not_the_init_containers(tmp_path: Path) -> None:
    """An init container (a busybox waiting for a peer) is listed first in the pod spec;
    the workload's image is still its container's."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"k8s/frontend.yaml": FRONTEND, "k8s/loadgen.yaml": LOADGEN}, "init",
                "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    loadgen = next(n for n in batch.nodes if n.ceid == "service:loadgen")
    assert loadgen.props["image"] == "example/loadgen:1"
    assert _edge(batch, "service:loadgen", "service:frontend").type == "CALLS"


EXPOSED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  selector:
    matchLabels:
      app: frontend
  template:
    metadata:
      labels:
        app: frontend
    spec:
      containers:
      - name: server
        image: example/frontend:1
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: frontend
spec:
  type: ClusterIP
  selector:
    app: frontend
  ports:
  - name: http
    port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: frontend-external
spec:
  type: NodePort
  selector:
    app: frontend
  ports:
  - name: http
    port: 80
    targetPort: 8080
    nodePort: 30001
"""


def test_the_services_selecting_a_workload_say_how_it_is_reached(tmp_path: Path) -> None:
    """Online Boutique's frontend: a ClusterIP Service and an external one (NodePort here),
    each port read as "80 -> 8080" at its ``port`` line."""
    repo = init_repo(tmp_path / "r")
    commit = commit_tree(repo, {"k8s/frontend.yaml": EXPOSED}, "c", "2024-01-01T00:00:00Z")
    node = next(n for n in batch_at(repo).nodes if n.ceid == "service:frontend")
    assert node.props["exposure"] == [
        "ClusterIP Service frontend (inside the cluster only): port 80 -> 8080",
        "NodePort Service frontend-external: port 80 -> 8080, node port 30001"]
    refs = {r.split("|")[1]: r.rsplit("|", 1)[1] for r in node.props["attribute_refs"]
            if r.startswith("exposure|")}
    assert refs == {node.props["exposure"][0]: f"k8s/frontend.yaml#L30@{commit[:7]}",
                    node.props["exposure"][1]: f"k8s/frontend.yaml#L43@{commit[:7]}"}
