"""Helm charts (connectors/helm_charts): which files are charts, how rendered documents are
split and where each fact read from them is cited. Rendering itself (the Helm binary) is
tested in tests/integration/test_helm_charts.py."""

from __future__ import annotations

from substrate.connectors.helm_charts import (
    Locator,
    RenderedDoc,
    align,
    chart_folders,
    is_chart_path,
    relocate,
    split_rendered,
    strip_release,
    template_part,
    template_parts,
)
from substrate.connectors.k8s import K8sManifests, _read_file
from substrate.connectors.yamlnodes import Fact

TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "payment.fullname" . }}
  labels:
    {{- include "payment.labels" . | nindent 4 }}
spec:
  template:
    spec:
      containers:
        - name: payment
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          env:
            - name: CART_URL
              value: {{ .Values.cart.url | quote }}
            - name: LOG_LEVEL
              value: info
          ports:
            - containerPort: 8080
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""

VALUES = """\
image:
  repository: example/payment
  tag: "1.2.0"
cart:
  url: http://cart:8080
resources:
  limits:
    memory: 512Mi
"""

RENDERED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: payment
  labels:
    app.kubernetes.io/name: payment
spec:
  template:
    spec:
      containers:
        - name: payment
          image: "example/payment:1.2.0"
          env:
            - name: CART_URL
              value: "http://cart:8080"
            - name: LOG_LEVEL
              value: info
          ports:
            - containerPort: 8080
          resources:
            limits:
              memory: 512Mi
"""

SOURCE = "deploy/helm/templates/deployment.yaml"


def _locator() -> Locator:
    return Locator(RenderedDoc(SOURCE, RENDERED), TEMPLATE, "deploy/helm/values.yaml", VALUES)


def test_chart_files_for_the_replay_filter() -> None:
    for path in ("deploy/helm/Chart.yaml", "charts/cart/values.yaml", "x/templates/svc.yaml",
                 "x/templates/_helpers.tpl", "helm-chart/files/nginx.conf",
                 "src/cart/chart/.helmignore", "values-prod.yaml"):
        assert is_chart_path(path), path
    for path in ("src/cart/Main.java", "README.md", "k8s/cart.yaml", "docs/charts.md"):
        assert not is_chart_path(path), path


def test_chart_folders_leave_out_subcharts() -> None:
    files = ["Chart.yaml", "charts/redis/Chart.yaml", "src/cart/chart/Chart.yaml",
             "README.md"]
    assert chart_folders(files) == [""]  # the root chart renders its subchart
    files = ["deploy/app/Chart.yaml", "deploy/app/charts/db/Chart.yaml",
             "src/cart/chart/Chart.yaml"]
    assert chart_folders(files) == ["deploy/app", "src/cart/chart"]


def test_the_release_name_is_taken_out_of_names() -> None:
    text = "name: zzrelease-payment\nurl: http://zzrelease-cart-db:8000\ninstance: zzrelease\n"
    assert strip_release(text, "Payment Chart") == \
        "name: payment\nurl: http://cart-db:8000\ninstance: payment-chart\n"


def test_rendered_output_is_split_by_source_template() -> None:
    text = ("---\n# Source: payment/templates/service.yaml\napiVersion: v1\nkind: Service\n"
            "---\n# Source: payment/charts/redis/templates/redis.yaml\nkind: StatefulSet\n"
            f"---\n# Source: payment/templates/deployment.yaml\n{RENDERED}")
    exists = {"deploy/helm/templates/service.yaml", SOURCE}.__contains__
    docs = split_rendered(text, "deploy/helm", exists)
    assert [d.source for d in docs] == ["deploy/helm/templates/service.yaml", SOURCE]
    assert docs[0].text == "apiVersion: v1\nkind: Service\n"  # no Source comment: lines count
    assert docs[1].text == RENDERED  # from a packaged subchart: no file to cite, left out


def test_rendered_lines_align_with_their_template_lines_in_order() -> None:
    rendered, template = RENDERED.splitlines(), TEMPLATE.splitlines()
    aligned = align(rendered, template)
    assert aligned[3] == 3  # name:
    assert aligned[18] == 18  # - containerPort: 8080
    assert 5 not in aligned  # a label line the helper made
    assert 21 not in aligned  # memory: 512Mi, from toYaml


def test_each_fact_is_cited_where_the_chart_writes_it() -> None:
    locate = _locator().locate
    values = "deploy/helm/values.yaml"
    # written in the template
    assert locate(Fact("8080", SOURCE, 19)) == Fact("8080", SOURCE, 19)
    assert locate(Fact("info", SOURCE, 17)) == Fact("info", SOURCE, 17)
    # a value the template line names: the values line that holds it (or a part of it)
    assert locate(Fact("http://cart:8080", SOURCE, 15)) == Fact("http://cart:8080", values, 5)
    assert locate(Fact("example/payment:1.2.0", SOURCE, 12)) == \
        Fact("example/payment:1.2.0", values, 2)
    # made by a helper: the template line that renders it
    assert locate(Fact("payment", SOURCE, 4)) == Fact("payment", SOURCE, 4)
    # expanded by toYaml: the one values line holding it
    assert locate(Fact("512Mi", SOURCE, 22)) == Fact("512Mi", values, 8)


def test_facts_of_a_rendered_document_are_relocated() -> None:
    read = _read_file(SOURCE, RENDERED)
    moved: K8sManifests = relocate(read, _locator().locate)
    (work,) = moved.workloads
    assert work.name == Fact("payment", SOURCE, 4)
    assert work.image == Fact("example/payment:1.2.0", "deploy/helm/values.yaml", 2)
    assert work.env["CART_URL"] == Fact("http://cart:8080", "deploy/helm/values.yaml", 5)
    assert work.ports == [Fact("8080", SOURCE, 19)]
    assert read.workloads[0].image == Fact("example/payment:1.2.0", SOURCE, 12)  # not changed


def test_a_document_is_aligned_with_the_template_document_of_its_kind() -> None:
    template = ["{{- if .Values.config }}", "apiVersion: v1", "kind: ConfigMap", "{{- end }}",
                "---", "apiVersion: v1", "kind: Service", "metadata:", "  name: x",
                "---", "apiVersion: v1", "kind: Service", "metadata:", "  name: y"]
    assert template_parts(template) == [(0, 4), (5, 9), (10, 14)]
    service = ["apiVersion: v1", "kind: Service", "metadata:", "  name: x"]
    # the ConfigMap left out by its ``if``: the first Service document, then the second
    assert template_part(service, template) == (1, (5, 9))
    assert template_part(service, template, after=2) == (2, (10, 14))
    locator = Locator(RenderedDoc("t.yaml", "\n".join(service)), "\n".join(template),
                      "values.yaml", None, (10, 14))
    assert locator.locate(Fact("x", "t.yaml", 4)) == Fact("x", "t.yaml", 14)
