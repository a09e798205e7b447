"""Kubernetes manifests (multi-document YAML) → workloads and Services with line numbers.

A file is read when it is ``*.yaml``/``*.yml`` and has at least one document with both
``apiVersion`` and ``kind``. Workloads: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
CronJob, Pod. A k8s ``Service`` is a DNS name for the workloads its selector picks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from yaml.nodes import Node

from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.yamlnodes import (
    Fact,
    compose_all,
    fact,
    get,
    items,
    path_get,
    scalar,
    string_map,
)

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
_SKIP_DIRS = (".github/", "docs/")


@dataclass
class Workload:
    kind: str
    name: Fact
    namespace: Fact | None
    labels: dict[str, str] = field(default_factory=dict)
    images: list[Fact] = field(default_factory=list)
    env: dict[str, Fact] = field(default_factory=dict)

    @property
    def ns(self) -> str:
        return self.namespace.value if self.namespace else "default"


@dataclass
class K8sService:
    name: Fact
    namespace: Fact | None
    selector: dict[str, str]

    @property
    def ns(self) -> str:
        return self.namespace.value if self.namespace else "default"

    def selects(self, workload: Workload) -> bool:
        same_ns = workload.ns == self.ns
        return same_ns and bool(self.selector) and self.selector.items() <= workload.labels.items()


@dataclass
class K8sManifests:
    workloads: list[Workload] = field(default_factory=list)
    services: list[K8sService] = field(default_factory=list)

    def targets(self, svc: K8sService) -> list[Workload]:
        return [w for w in self.workloads if svc.selects(w)]


def _pod_spec(kind: str, doc: Node) -> tuple[Node | None, Node | None]:
    """(pod template metadata, pod spec) of a workload document."""
    if kind == "Pod":
        return get(doc, "metadata"), get(doc, "spec")
    template = path_get(doc, "spec", "template")
    if kind == "CronJob":
        template = path_get(doc, "spec", "jobTemplate", "spec", "template")
    return get(template, "metadata"), get(template, "spec")


def _containers(spec: Node | None) -> Iterator[Node]:
    yield from items(get(spec, "initContainers"))
    yield from items(get(spec, "containers"))


def _workload(kind: str, doc: Node, path: str, name: Fact) -> Workload:
    meta, spec = _pod_spec(kind, doc)
    labels = string_map(get(meta, "labels")) or string_map(path_get(doc, "metadata", "labels"))
    namespace = fact(path_get(doc, "metadata", "namespace"), path)
    work = Workload(kind, name, namespace, labels)
    for container in _containers(spec):
        image = fact(get(container, "image"), path)
        if image is not None:
            work.images.append(image)
        for var in items(get(container, "env")):
            var_name, value = scalar(get(var, "name")), fact(get(var, "value"), path)
            if var_name and value is not None:
                work.env[var_name] = value
    return work


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
        out.services.append(K8sService(name, namespace, selector))


def read_k8s(snap: GitSnapshot) -> K8sManifests:
    """Every workload and Service of every Kubernetes manifest in the snapshot."""
    out = K8sManifests()
    paths = [
        p for p in snap.files() if p.endswith((".yaml", ".yml")) and not p.startswith(_SKIP_DIRS)
    ]
    snap.preload(paths)
    for path in paths:
        text = snap.read(path)
        if "apiVersion" not in text or "kind" not in text:
            continue
        for doc in compose_all(text):
            _read_doc(doc, path, out)
    return out
