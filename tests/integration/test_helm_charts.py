"""A repository deployed only by a Helm chart: Helm (built by ``substrate up``) renders it, the
workloads, Services and settings it renders are read, and every answer cites the chart's own
lines (the template line that writes a value, or the ``values.yaml`` line it comes from).
Gold: the files this test writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.k8s import read_k8s
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.settings import Settings
from substrate.stack.helm import find_binary
from tests.support.repo_tenant import ask, cited, repo_tenant

pytestmark = pytest.mark.integration

CHART = "apiVersion: v2\nname: shop\nversion: 0.3.0\ndependencies:\n" \
        "  - name: redis\n    version: 18.0.0\n    repository: https://charts.example.com\n"

HELPERS = """\
{{- define "shop.fullname" -}}
{{- printf "%s-%s" .Release.Name .name | trunc 63 | trimSuffix "-" }}
{{- end }}
"""

PAYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-payment
spec:
  selector:
    matchLabels:
      app: payment
  template:
    metadata:
      labels:
        app: payment
    spec:
      containers:
        - name: payment
          image: "{{ .Values.payment.image.repository }}:{{ .Values.payment.image.tag }}"
          env:
            - name: CART_URL
              value: "http://{{ .Release.Name }}-cart:80/api"
            - name: LOG_LEVEL
              value: {{ .Values.payment.logLevel | quote }}
          ports:
            - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-payment
spec:
  type: {{ .Values.payment.service.type }}
  selector:
    app: payment
  ports:
    - port: {{ .Values.payment.service.port }}
      targetPort: 8080
"""

CART = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shop.fullname" (dict "Release" .Release "name" "cart") }}
spec:
  template:
    metadata:
      labels:
        app: cart
    spec:
      containers:
        - name: cart
          image: example/cart:2.0
          ports:
            - containerPort: {{ .Values.cart.port }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-cart
spec:
  selector:
    app: cart
  ports:
    - port: 80
      targetPort: {{ .Values.cart.port }}
"""

VALUES = """\
payment:
  image:
    repository: example/payment
    tag: "1.4.1"
  logLevel: debug
  service:
    type: LoadBalancer
    port: 443
cart:
  port: 9090
"""

QUEUE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-queue
spec:
  template:
    spec:
      affinity: {{ .Values.queue.affinity }}
      containers:
        - name: queue
          image: example/queue:1.0
"""

BROKEN = "apiVersion: v2\nname: broken\nversion: 0.1.0\n"
BROKEN_TEMPLATE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n" \
                  "  name: {{ required \"set name\" .Values.name }}\n"

FILES = {
    "README.md": "# Shop\n\nA shop deployed with Helm.\n",
    "deploy/helm/Chart.yaml": CHART,
    "deploy/helm/values.yaml": VALUES,
    "deploy/helm/templates/_helpers.tpl": HELPERS,
    "deploy/helm/templates/payment.yaml": PAYMENT,
    "deploy/helm/templates/cart.yaml": CART,
    "deploy/helm/templates/queue.yaml": QUEUE,
    "deploy/broken/Chart.yaml": BROKEN,
    "deploy/broken/templates/config.yaml": BROKEN_TEMPLATE,
}
TEMPLATES = "deploy/helm/templates"


def test_charts_render_with_facts_at_the_lines_that_write_them(stack: Settings,
                                                               tmp_path: Path) -> None:
    assert find_binary() is not None, "substrate up builds Helm"
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, FILES, "chart", "2025-01-01T00:00:00Z")
    found = read_k8s(GitSnapshot(repo))
    work = {w.name.value: w for w in found.workloads}
    # undeclared subchart left out; the release's name taken out of the chart's names; the
    # template reading a value that is not set (queue) and the one with a required value left
    # out, the rest rendered
    assert sorted(work) == ["cart", "payment"]
    name = work["payment"].name
    assert (name.path, name.line) == (f"{TEMPLATES}/payment.yaml", 4)
    image = work["payment"].image
    assert image is not None and image.value == "example/payment:1.4.1"
    assert (image.path, image.line) == ("deploy/helm/values.yaml", 3)
    env = {k: (v.value, v.path, v.line) for k, v in work["payment"].env.items()}
    assert env == {"CART_URL": ("http://cart:80/api", f"{TEMPLATES}/payment.yaml", 19),
                   "LOG_LEVEL": ("debug", "deploy/helm/values.yaml", 5)}
    assert [(p.value, p.path, p.line) for p in work["payment"].ports] == \
        [("8080", f"{TEMPLATES}/payment.yaml", 23)]
    assert [(p.value, p.path, p.line) for p in work["cart"].ports] == \
        [("9090", "deploy/helm/values.yaml", 10)]
    services = {s.name.value: s for s in found.services}
    # the second document of a template file is cited in that document
    assert (services["payment"].name.path, services["payment"].name.line) == \
        (f"{TEMPLATES}/payment.yaml", 28)
    assert services["payment"].type == "LoadBalancer"
    assert [(p.value, p.path, p.line) for p in services["payment"].ports] == \
        [("443 -> 8080", "deploy/helm/values.yaml", 8)]


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("helm"), "t-helm", FILES) as name:
        yield name


def test_a_port_a_chart_writes_is_cited_at_its_template_line(stack: Settings,
                                                             tenant: str) -> None:
    body = ask(stack, tenant, "Which port does payment listen on?")
    assert "8080" in str(body["answer"]), body["answer"]
    assert any(r.startswith(f"{TEMPLATES}/payment.yaml#L23@") for r in cited(body)), body


def test_an_image_from_values_is_cited_at_the_values_line(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "Which docker image does payment run?")
    assert "example/payment:1.4.1" in str(body["answer"]), body["answer"]
    assert any(r.startswith("deploy/helm/values.yaml#L3@") for r in cited(body)), body


def test_a_dependency_on_a_release_named_service_is_found(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What does payment depend on?")
    assert "cart" in str(body["answer"]), body["answer"]
    assert any(r.startswith(f"{TEMPLATES}/payment.yaml#L19@") for r in cited(body)), body


def test_a_service_a_chart_deploys_names_the_chart(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "How is payment deployed?")
    assert "deployed by the Helm chart deploy/helm (deploy/helm/templates/payment.yaml)" in \
        str(body["answer"]), body["answer"]
    assert cited(body)[0].startswith(f"{TEMPLATES}/payment.yaml#L4@")
