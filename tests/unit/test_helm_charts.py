"""Helm charts (connectors/helm_charts): which files are charts, how rendered documents are
split and where each fact read from them is cited. Rendering itself (the Helm binary) is
tested in tests/integration/test_helm_charts.py."""

from __future__ import annotations

from yaml.nodes import Node

from substrate.connectors.helm_charts import (
    Chart,
    Locator,
    RenderedDoc,
    _contains,
    _values_layers,
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
from substrate.connectors.yamlnodes import Fact, compose_all

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
    return Locator(RenderedDoc(SOURCE, RENDERED), TEMPLATE, _layers(("deploy/helm/values.yaml",
                                                                   VALUES)))


def _layers(*files: tuple[str, str]) -> list[tuple[str, Node]]:
    return [(path, compose_all(text)[0]) for path, text in files]


def test_chart_files_for_the_replay_filter() -> None:
    for path in ("deploy/helm/Chart.yaml", "charts/cart/values.yaml", "x/templates/svc.yaml",
                 "x/templates/_helpers.tpl", "helm-chart/files/nginx.conf",
                 "src/cart/chart/.helmignore", "values-prod.yaml"):
        assert is_chart_path(path), path
    for path in ("src/cart/Main.java", "README.md", "k8s/cart.yaml", "docs/charts.md",
                 "src/registrar/templates/home.html", "web/src/components/charts/Line.tsx"):
        assert not is_chart_path(path), path


def test_chart_folders_leave_out_subcharts() -> None:
    files = ["Chart.yaml", "charts/redis/Chart.yaml", "examples/demo/Chart.yaml",
             "README.md"]
    assert chart_folders(files) == ["", "examples/demo"]  # the root chart renders redis
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


def test_a_document_is_matched_with_the_template_document_of_its_kind_and_name() -> None:
    template = ["{{- if .Values.config }}", "apiVersion: v1", "kind: ConfigMap", "{{- end }}",
                "---", "apiVersion: v1", "kind: Service", "metadata:",
                "  name: {{ .Release.Name }}-api",
                "---", "apiVersion: v1", "kind: Service", "metadata:",
                "  name: {{ .Release.Name }}-web"]
    assert template_parts(template) == [(0, 4), (5, 9), (10, 14)]
    service_web = ["apiVersion: v1", "kind: Service", "metadata:", "  name: web"]
    made = ["apiVersion: v1", "kind: Service", "metadata:", "  name: made-by-a-helper"]
    # Helm sorts documents by kind: a file's are not in its order; the name decides
    assert template_part(service_web, template) == (2, (10, 14))
    # no name written: the first Service not taken yet
    assert template_part(made, template) == (1, (5, 9))
    assert template_part(made, template, used=[1]) == (2, (10, 14))
    locator = Locator(RenderedDoc("t.yaml", "\n".join(made)), "\n".join(template), [],
                      (10, 14))
    assert locator.locate(Fact("made-by-a-helper", "t.yaml", 4)) == \
        Fact("made-by-a-helper", "t.yaml", 14)


def test_a_line_is_matched_by_its_literal_value_or_an_action_that_can_render_it() -> None:
    template = """\
env:
  {{- if .Values.ui.message }}
  - name: UI_MESSAGE
    value: {{ quote .Values.ui.message }}
  {{- end }}
  - name: UI_COLOR
    value: {{ quote .Values.ui.color }}
ports:
  {{- if .Values.tls.enabled }}
  - port: {{ .Values.tls.port | default 9899 }}
  {{- end }}
  - port: {{ .Values.service.grpcPort }}
""".splitlines()
    rendered = ["env:", "  - name: UI_COLOR", "    value: \"#34577c\"", "ports:",
                "  - port: 9999"]
    values = "ui:\n  color: \"#34577c\"\n  message: \"\"\ntls:\n  port: 9899\n" \
             "service:\n  grpcPort: 9999\n"
    locator = Locator(RenderedDoc("t.yaml", "\n".join(rendered)), "\n".join(template),
                      _layers(("values.yaml", values)))
    # not the first ``name:`` (UI_MESSAGE, in a false branch), not the TLS port
    assert locator.aligned == {0: 0, 1: 5, 2: 6, 3: 7, 4: 11}
    assert locator.locate(Fact("#34577c", "t.yaml", 3)) == Fact("#34577c", "values.yaml", 2)
    assert locator.locate(Fact("9999", "t.yaml", 5)) == Fact("9999", "values.yaml", 7)


def test_a_pod_spec_written_in_a_helper_is_cited_there_or_at_its_values() -> None:
    template = ["apiVersion: apps/v1", "kind: Deployment", "metadata:",
                "  name: {{ include \"pgw.fullname\" . }}", "spec:", "  template:",
                "    spec:", "      {{- include \"pgw.podSpec\" . | nindent 6 }}"]
    helpers = ["{{- define \"pgw.podSpec\" -}}", "containers:", "  - name: pushgateway",
               "    image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"",
               "    ports:", "      - containerPort: 9091", "{{- end }}"]
    rendered = ["apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: pgw",
                "spec:", "  template:", "    spec:", "      containers:",
                "        - name: pushgateway", "          image: \"prom/pushgateway:v1.11\"",
                "          ports:", "            - containerPort: 9091"]
    values = "image:\n  repository: prom/pushgateway\n  tag: v1.11\nport: 9091\n" \
             "probe:\n  port: 9091\n"
    locator = Locator(RenderedDoc("t.yaml", "\n".join(rendered)), "\n".join(template),
                      _layers(("values.yaml", values)), None, [("_helpers.tpl", helpers)])
    assert locator.locate(Fact("prom/pushgateway:v1.11", "t.yaml", 10)) == \
        Fact("prom/pushgateway:v1.11", "values.yaml", 2)
    assert locator.locate(Fact("9091", "t.yaml", 12)) == Fact("9091", "_helpers.tpl", 6)


def test_a_parent_chart_sets_its_subcharts_values() -> None:
    template = ["kind: Deployment", "spec:", "  env:", "    - name: COLOR",
                "      value: {{ .Values.ui.color | quote }}"]
    rendered = ["kind: Deployment", "spec:", "  env:", "    - name: COLOR",
                "      value: \"#ff0000\""]
    parent = "podinfo:\n  ui:\n    color: \"#ff0000\"\n"
    own = "ui:\n  color: \"#34577c\"\n"
    layers = _values_layers(Chart("deploy/app", "app", (("values.yaml", parent),
                                                        ("charts/podinfo/values.yaml", own))),
                            "deploy/app/charts/podinfo/templates/deployment.yaml")
    assert [p for p, _ in layers] == ["deploy/app/values.yaml",
                                      "deploy/app/charts/podinfo/values.yaml"]
    locator = Locator(RenderedDoc("d.yaml", "\n".join(rendered)), "\n".join(template), layers)
    assert locator.locate(Fact("#ff0000", "d.yaml", 5)) == \
        Fact("#ff0000", "deploy/app/values.yaml", 3)


def test_a_piece_of_a_value_is_a_whole_word_of_it() -> None:
    assert _contains("example/app:1.0", "example/app")
    assert _contains("http://cart:80/api", "cart")
    assert not _contains("8080", "80")
    assert not _contains("1.2.0", "1.2")
