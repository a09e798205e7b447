"""Kubernetes manifests (multi-document YAML) → workloads, Services and ConfigMaps with lines.

A file is read when it is ``*.yaml``/``*.yml`` and has at least one document with both
``apiVersion`` and ``kind``; a Helm chart's ``templates/`` (any Go-template: see
:func:`is_template`) are not read as files, but what Helm renders from the chart is
(:mod:`substrate.connectors.helm_charts`, cited at the chart's lines). Workloads:
Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod. A k8s ``Service`` is a DNS
name for the workloads its selector picks. A container's environment read from a ConfigMap
(``envFrom: [{configMapRef: {name}}]``, ``env[].valueFrom.configMapKeyRef``) resolves to the
ConfigMap of that name nearest the workload's file (same file, then the longest common folder,
then the shallowest path), keeping the line of the value in the ConfigMap and the line of the
reference. A kustomization's ``configMapGenerator`` makes ConfigMaps too (``literals``
``KEY=VALUE`` at their lines, ``envs`` files of ``KEY=VALUE`` read when named like ``*.env``),
in the kustomization's ``namespace``. Files are read shallowest first, so root manifests come
before variants.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import yaml
from yaml.nodes import Node
from yaml.tokens import FlowMappingStartToken, ScalarToken

from substrate.connectors.envfiles import is_env_file, parse_env_file
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.helm_charts import Chart, charts, relocate, rendered_documents
from substrate.connectors.yamlnodes import (
    LOADER,
    Fact,
    compose_all,
    fact,
    get,
    items,
    pairs,
    path_get,
    scalar,
    string_map,
)
from substrate.stack.helm import find_binary as find_helm

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
_SKIP_DIRS = (".github/", "docs/")
_TEMPLATE = re.compile(r"\{\{-?\s*[-.$A-Za-z_(\"/][^\n]*?\}\}")
# a Helm action inside a string ("{{ .Values.image }}", "{{- include ...}}"), unlike the
# placeholders of the texts a manifest carries (Grafana's "{{instance}}", Prometheus'
# "{{ $labels.pod }}" in a rendered chart's dashboards and alert rules)
_HELM_ACTION = re.compile(r"\{\{-?\s*(?:\.|(?:include|template|if|else|end|range|with|define"
                          r"|toYaml|tpl|required|default|quote)\b)")


def is_template(text: str) -> bool:
    """Is the text a Helm/Go template rather than YAML: placeholders where the YAML itself is
    (``image: {{ .Values.image }}``, ``{{- if ... }}`` lines: a plain scalar or a ``{{`` the
    YAML scanner reads as nested flow mappings), a Helm action inside a string, or text that
    does not scan. ``{{ }}`` only inside strings and block scalars (a rendered chart's
    Grafana dashboards and alert rules) is text the manifest carries, and the file is read."""
    if not _TEMPLATE.search(text):
        return False
    previous = None
    try:
        for token in yaml.scan(text, Loader=LOADER):
            if isinstance(token, FlowMappingStartToken) and \
                    isinstance(previous, FlowMappingStartToken):
                return True
            if isinstance(token, ScalarToken) and "{{" in token.value and (
                    token.plain or _HELM_ACTION.search(token.value)):
                return True
            previous = token
    except yaml.YAMLError:
        return True
    return False


@dataclass(frozen=True)
class ConfigRef:
    """Environment read from a ConfigMap: every key (``key`` None, envFrom, with ``prefix``) or
    one key into variable ``var`` (configMapKeyRef); ``at`` is the line of the reference."""

    configmap: str
    at: Fact
    key: str | None = None
    var: str = ""
    prefix: str = ""


@dataclass
class ConfigMap:
    name: Fact
    namespace: Fact | None
    data: dict[str, Fact] = field(default_factory=dict)

    @property
    def ns(self) -> str:
        return self.namespace.value if self.namespace else "default"


@dataclass(frozen=True)
class ConfigValue:
    """A variable's value as written in a ConfigMap (``value``) and where it is referenced."""

    value: Fact
    at: Fact
    configmap: str


@dataclass
class Workload:
    kind: str
    name: Fact
    namespace: Fact | None
    labels: dict[str, str] = field(default_factory=dict)
    image: Fact | None = None  # its main (first non-init) container's: what it runs
    env: dict[str, Fact] = field(default_factory=dict)
    config_refs: list[ConfigRef] = field(default_factory=list)
    ports: list[Fact] = field(default_factory=list)
    args: list[Fact] = field(default_factory=list)  # its containers' command and args words
    chart: str | None = None  # the folder of the Helm chart that rendered it ("." at the root)

    @property
    def ns(self) -> str:
        return self.namespace.value if self.namespace else "default"

    @property
    def path(self) -> str:
        return self.name.path


INSIDE = "inside the cluster only"  # how a ClusterIP Service is reached


@dataclass
class K8sService:
    name: Fact
    namespace: Fact | None
    selector: dict[str, str]
    type: str = "ClusterIP"
    # each port it serves, as it reads: "80 -> 8080" (its port, the container's), a node
    # port after it; at the line of its ``port``
    ports: list[Fact] = field(default_factory=list)

    def exposure(self, port: Fact) -> str:
        """How the service is reached on ``port``: "LoadBalancer Service frontend-external:
        port 80 -> 8080"; a ClusterIP Service is reached from inside the cluster only."""
        inside = f" ({INSIDE})" if self.type == "ClusterIP" else ""
        return f"{self.type} Service {self.name.value}{inside}: port {port.value}"

    @property
    def ns(self) -> str:
        return self.namespace.value if self.namespace else "default"

    def selects(self, workload: Workload) -> bool:
        same_ns = workload.ns == self.ns
        return same_ns and bool(self.selector) and self.selector.items() <= workload.labels.items()


@lru_cache(maxsize=65536)
def _nearness(path: str, other: str) -> tuple[int, int, str]:
    """Sort key: the same file first, then the longest common folder, then the shallowest."""
    if path == other:
        return (-1000, 0, other)
    common = posixpath.commonpath([posixpath.dirname(path) or ".", posixpath.dirname(other) or "."])
    shared = 0 if common in ("", ".") else common.count("/") + 1
    return (-shared, other.count("/"), other)


@dataclass
class K8sManifests:
    workloads: list[Workload] = field(default_factory=list)
    services: list[K8sService] = field(default_factory=list)
    configmaps: list[ConfigMap] = field(default_factory=list)

    def targets(self, svc: K8sService) -> list[Workload]:
        return [w for w in self.workloads if svc.selects(w)]

    def configmap(self, name: str, work: Workload) -> ConfigMap | None:
        """The ConfigMap ``name`` a workload reads (nearest its file, same namespace first)."""
        named = [c for c in self.configmaps if c.name.value == name]
        same_ns = [c for c in named if c.ns == work.ns] or named
        return min(same_ns, key=lambda c: _nearness(work.path, c.name.path), default=None)

    def config_env(self, work: Workload) -> dict[str, ConfigValue]:
        """Variables the workload reads from ConfigMaps (literal ``env`` values win)."""
        out: dict[str, ConfigValue] = {}
        for ref in work.config_refs:
            found = self.configmap(ref.configmap, work)
            if found is None:
                continue
            if ref.key is None:
                for key, value in found.data.items():
                    out[ref.prefix + key] = ConfigValue(value, ref.at, ref.configmap)
            elif ref.key in found.data:
                out[ref.var] = ConfigValue(found.data[ref.key], ref.at, ref.configmap)
        return {k: v for k, v in out.items() if k not in work.env}


def _pod_spec(kind: str, doc: Node) -> tuple[Node | None, Node | None]:
    """(pod template metadata, pod spec) of a workload document."""
    if kind == "Pod":
        return get(doc, "metadata"), get(doc, "spec")
    template = path_get(doc, "spec", "template")
    if kind == "CronJob":
        template = path_get(doc, "spec", "jobTemplate", "spec", "template")
    return get(template, "metadata"), get(template, "spec")


def _containers(spec: Node | None) -> Iterator[tuple[Node, bool]]:
    """The pod's containers, then its init containers, each with whether it is an init one."""
    yield from ((c, False) for c in items(get(spec, "containers")))
    yield from ((c, True) for c in items(get(spec, "initContainers")))


def _env_from(container: Node, path: str) -> Iterator[ConfigRef]:
    for source in items(get(container, "envFrom")):
        name = fact(path_get(source, "configMapRef", "name"), path)
        if name is not None:
            yield ConfigRef(name.value, name, prefix=scalar(get(source, "prefix")) or "")


def _read_container(work: Workload, container: Node, path: str, init: bool) -> None:
    image = fact(get(container, "image"), path)
    if image is not None and work.image is None and not init:
        # the workload's image is its main container's: an init container is a ``busybox``
        # waiting for a peer or a ``mongo`` client seeding the database
        work.image = image
    for port in items(get(container, "ports")):
        found = fact(get(port, "containerPort"), path)
        if found is not None:
            work.ports.append(found)
    work.config_refs.extend(_env_from(container, path))
    for part in ("command", "args"):
        work.args.extend(f for f in (fact(n, path) for n in items(get(container, part)))
                         if f is not None)
    for var in items(get(container, "env")):
        var_name, value = scalar(get(var, "name")), fact(get(var, "value"), path)
        if var_name and value is not None:
            work.env[var_name] = value
        key_ref = path_get(var, "valueFrom", "configMapKeyRef")
        map_name, key = fact(get(key_ref, "name"), path), scalar(get(key_ref, "key"))
        if var_name and map_name is not None and key:
            work.config_refs.append(ConfigRef(map_name.value, map_name, key, var_name))


def _workload(kind: str, doc: Node, path: str, name: Fact) -> Workload:
    meta, spec = _pod_spec(kind, doc)
    labels = string_map(get(meta, "labels")) or string_map(path_get(doc, "metadata", "labels"))
    namespace = fact(path_get(doc, "metadata", "namespace"), path)
    work = Workload(kind, name, namespace, labels)
    for container, init in _containers(spec):
        _read_container(work, container, path, init)
    return work


def _configmap(doc: Node, path: str, name: Fact) -> ConfigMap:
    namespace = fact(path_get(doc, "metadata", "namespace"), path)
    data = {str(k.value): f for k, v in pairs(get(doc, "data")) if (f := fact(v, path))}
    return ConfigMap(name, namespace, data)


def _read_doc(doc: Node, path: str, out: K8sManifests) -> None:
    kind = scalar(get(doc, "kind")) or ""
    name = fact(path_get(doc, "metadata", "name"), path)
    if name is None or scalar(get(doc, "apiVersion")) is None:
        return
    if kind in WORKLOAD_KINDS:
        out.workloads.append(_workload(kind, doc, path, name))
    elif kind == "Service":
        namespace = fact(path_get(doc, "metadata", "namespace"), path)
        selector = string_map(path_get(doc, "spec", "selector"))
        kind_of_service = scalar(path_get(doc, "spec", "type")) or "ClusterIP"
        out.services.append(K8sService(name, namespace, selector, kind_of_service,
                                       _service_ports(doc, path)))
    elif kind == "ConfigMap":
        out.configmaps.append(_configmap(doc, path, name))


def _service_ports(doc: Node, path: str) -> list[Fact]:
    """A Service's ports: "80 -> 8080" when its targetPort differs, ", node port 30001"
    after a NodePort's, each at its ``port`` line."""
    out = []
    for item in items(path_get(doc, "spec", "ports")):
        port = fact(get(item, "port"), path)
        if port is None:
            continue
        target, node = scalar(get(item, "targetPort")), scalar(get(item, "nodePort"))
        text = port.value + (f" -> {target}" if target and target != port.value else "") \
            + (f", node port {node}" if node else "")
        out.append(replace(port, value=text))
    return out


KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml")


def _generated(snap: GitSnapshot, path: str, out: K8sManifests) -> None:
    """ConfigMaps of a kustomization's ``configMapGenerator``."""
    docs = compose_all(snap.read(path))
    doc = docs[0] if docs else None
    namespace = fact(get(doc, "namespace"), path)
    folder = posixpath.dirname(path)
    for generator in items(get(doc, "configMapGenerator")):
        name = fact(get(generator, "name"), path)
        if name is None:
            continue
        data: dict[str, Fact] = {}
        for env in items(get(generator, "envs")) + items(get(generator, "env")):
            env_path = posixpath.normpath(posixpath.join(folder, scalar(env) or "."))
            if is_env_file(env_path) and snap.exists(env_path):
                data.update(parse_env_file(snap.read(env_path), env_path))
        for literal in items(get(generator, "literals")):
            found = fact(literal, path)
            key, sep, value = found.value.partition("=") if found else ("", "", "")
            if found is not None and sep:
                data[key.strip()] = Fact(value.strip().strip("\"'"), path, found.line)
        out.configmaps.append(ConfigMap(name, namespace, data))


def manifest_paths(files: tuple[str, ...]) -> list[str]:
    """YAML files that may be Kubernetes manifests, shallowest first."""
    paths = [p for p in files if p.endswith((".yaml", ".yml")) and not p.startswith(_SKIP_DIRS)]
    return sorted(paths, key=lambda p: (p.count("/"), p))


@lru_cache(maxsize=4096)
def _read_file(path: str, text: str) -> K8sManifests:
    """The workloads, Services and ConfigMaps of one manifest file (memoised: a history
    replay reads the same unchanged manifests at every commit; callers only read them)."""
    out = K8sManifests()
    if "apiVersion" not in text or "kind" not in text or is_template(text):
        return out
    for doc in compose_all(text):
        _read_doc(doc, path, out)
    return out


def read_k8s(snap: GitSnapshot) -> K8sManifests:
    """Every workload and Service of every Kubernetes manifest in the snapshot, and of the
    manifests its Helm charts render (:mod:`substrate.connectors.helm_charts`)."""
    out = K8sManifests()
    helm = find_helm()
    rendered = [_read_chart(chart, helm) for chart in charts(snap)] if helm is not None else []
    templates = {path for _, sources in rendered for path in sources}
    paths = [p for p in manifest_paths(snap.files()) if p not in templates]
    snap.preload(paths)
    for path in paths:
        text = snap.read(path)
        if posixpath.basename(path) in KUSTOMIZATIONS and "configMapGenerator" in text:
            _generated(snap, path, out)
        _merge(out, _read_file(path, text))
    for found, _ in rendered:
        _merge(out, found)
    return out


@lru_cache(maxsize=256)
def _read_chart(chart: Chart, helm: Path) -> tuple[K8sManifests, frozenset[str]]:
    """What a chart renders, each fact at the chart's line, and the templates that rendered
    it (a template with no Helm action in it is rendered, not read again as a file); memoised
    like :func:`_read_file`."""
    out = K8sManifests()
    docs = rendered_documents(chart, helm)
    for doc, locator in docs:
        _merge(out, relocate(_read_file(doc.source, doc.text), locator.locate))
    out.workloads = [replace(w, chart=chart.folder or ".") for w in out.workloads]
    return out, frozenset(doc.source for doc, _ in docs)


def _merge(out: K8sManifests, found: K8sManifests) -> None:
    out.workloads.extend(found.workloads)
    out.services.extend(found.services)
    out.configmaps.extend(found.configmaps)
