"""Deployment manifests (Compose, Kubernetes) → Service / Infrastructure entities and edges.

* A Compose service or Kubernetes workload whose image is a known datastore or broker
  (postgres, mysql, mongo, redis, kafka, rabbitmq, nats, elasticsearch, ...) is
  ``Infrastructure`` with ``kind`` database | cache | queue | search | ...; anything else is a
  ``Service``. Names resolve through :class:`~substrate.connectors.aliases.NameIndex`.
* ``depends_on`` / ``links`` → ``DEPENDS_ON`` (confidence 1.0).
* An environment variable naming another entity's host or URL → ``CALLS`` (to a Service) or
  ``DEPENDS_ON`` (to Infrastructure), confidence 0.95 (a heuristic reading).
* A Kubernetes namespace is ``Infrastructure(kind=namespace)`` that ``HOSTS`` its workloads.

Every edge's evidence is ``path#L<line>@<commit>`` of the line that proves it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from substrate.connectors.aliases import NORMALISED, Entity, NameIndex
from substrate.connectors.compose import ComposeService, read_compose
from substrate.connectors.endpoints import HostRef, hosts_in
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.k8s import K8sManifests, Workload, read_k8s
from substrate.connectors.yamlnodes import Fact
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

HEURISTIC = 0.95
_KINDS: dict[str, tuple[str, ...]] = {
    "database": ("postgres", "postgis", "mysql", "mariadb", "mongo", "cassandra", "scylla",
                 "cockroach", "clickhouse", "timescale", "mssql", "couchdb", "dynamodb"),
    "cache": ("redis", "memcached", "valkey", "keydb", "dragonfly"),
    "queue": ("kafka", "rabbitmq", "nats", "activemq", "pulsar", "redpanda", "mosquitto"),
    "search": ("elasticsearch", "opensearch", "solr", "meilisearch", "typesense"),
    "coordination": ("zookeeper", "etcd", "consul"),
    "storage": ("minio",),
}  # fmt: skip
_SECRET = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|API_KEY|PRIVATE", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")


def infra_kind(image: str | None) -> str | None:
    """Infrastructure kind of a container image, ``None`` for an application image."""
    if not image:
        return None
    name = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0].lower()
    return next((k for k, words in _KINDS.items() if any(w in name for w in words)), None)


def redact(var: str, value: str) -> str:
    """``VAR=value`` with secrets masked (secret-named variables, passwords inside URLs)."""
    if _SECRET.search(var):
        return f"{var}=***"
    masked = _URL_PASSWORD.sub(r"\1***@", value)
    return f"{var}={masked}"


def _label(image: str | None) -> str:
    return "Infrastructure" if infra_kind(image) else "Service"


def _add_props(entity: Entity, image: Fact | None, env: dict[str, Fact], via: str) -> None:
    props = entity.props
    if image is not None:
        props.setdefault("image", image.value)
        kind = infra_kind(image.value)
        if kind:
            props.setdefault("kind", kind)
    if env:
        merged = set(props.get("env", [])) | {redact(k, f.value) for k, f in env.items()}
        props["env"] = sorted(merged)
    props["deployed_by"] = sorted(set(props.get("deployed_by", [])) | {via})


@dataclass
class _Deployed:
    """One compose service or k8s workload, resolved to its entity."""

    entity: Entity
    env: dict[str, Fact]
    namespace: str | None
    depends: dict[str, Fact]


class ManifestReader:
    """Registers manifest names in the index, then derives the edges between them."""

    def __init__(self, snap: GitSnapshot, index: NameIndex) -> None:
        self.snap, self.index = snap, index
        self.deployed: list[_Deployed] = []
        self.dns: dict[tuple[str, str], str] = {}  # (k8s service name, namespace) -> ceid
        self.batch = GraphBatch()

    def ref(self, fact: Fact) -> str:
        return self.snap.ref(fact.path, fact.line)

    def read(self) -> GraphBatch:
        for svc in read_compose(self.snap):
            self.add_compose(svc)
        self.add_k8s(read_k8s(self.snap))
        for item in self.deployed:
            self.edges_of(item)
        return self.batch

    def add_compose(self, svc: ComposeService) -> None:
        image = svc.image.value if svc.image else None
        entity = self.index.register(_label(image), svc.key, self.ref(svc.defined))
        for name, fact in sorted(svc.dns_names.items()):
            self.index.alias(entity.ceid, name, self.ref(fact))
        _add_props(entity, svc.image, svc.env, "compose")
        depends = {**svc.depends_on, **svc.links}
        self.deployed.append(_Deployed(entity, svc.env, None, depends))

    def add_k8s(self, manifests: K8sManifests) -> None:
        entities: list[Entity] = []
        for work in manifests.workloads:
            image = work.images[0].value if work.images else None
            entity = self.index.register(_label(image), work.name.value, self.ref(work.name))
            _add_props(entity, work.images[0] if work.images else None, work.env, "k8s")
            entity.props.setdefault("namespace", work.ns)
            entities.append(entity)
            self.deployed.append(_Deployed(entity, work.env, work.ns, {}))
            self.dns[(work.name.value, work.ns)] = entity.ceid
            self.hosts(work, entity)
        for svc in manifests.services:
            for work in manifests.targets(svc):
                entity = entities[manifests.workloads.index(work)]
                self.index.alias(entity.ceid, svc.name.value, self.ref(svc.name))
                self.dns[(svc.name.value, svc.ns)] = entity.ceid

    def hosts(self, work: Workload, entity: Entity) -> None:
        ns_id = ceid("infra", f"namespace-{work.ns}")
        proof = work.namespace or work.name
        props = {"name": f"{work.ns} namespace", "kind": "namespace"}
        self.batch.nodes.append(NodeRecord(ns_id, "Infrastructure", props, (self.ref(proof),)))
        self.batch.edges.append(
            EdgeRecord("HOSTS", ns_id, entity.ceid, self.ref(proof), source="git")
        )

    def target(self, host: HostRef, namespace: str | None) -> str | None:
        for ns in (host.namespace, namespace):
            if ns is not None and (host.host, ns) in self.dns:
                return self.dns[(host.host, ns)]
        exact = self.index.exact(host.host)
        if exact is not None:
            return exact
        res = self.index.resolve(host.host, fuzzy=False)
        return res.ceid if res.confidence >= NORMALISED else None

    def edges_of(self, item: _Deployed) -> None:
        src = item.entity.ceid
        for name, fact in sorted(item.depends.items()):
            dst = self.target(HostRef(name), item.namespace)
            if dst and dst != src:
                self.edge("DEPENDS_ON", src, dst, fact, 1.0, {"via": "depends_on"})
        for var, fact in sorted(item.env.items()):
            for host in hosts_in(var, fact.value):
                dst = self.target(host, item.namespace)
                if dst and dst != src:
                    kind = "CALLS" if self.index.get(dst).label == "Service" else "DEPENDS_ON"
                    self.edge(kind, src, dst, fact, HEURISTIC, {"via": "env", "var": var})

    def edge(
        self, kind: str, src: str, dst: str, fact: Fact, conf: float, props: dict[str, str]
    ) -> None:
        edge = EdgeRecord(kind, src, dst, self.ref(fact), conf, source="git", props=props)
        self.batch.edges.append(edge)


def manifest_batch(snap: GitSnapshot, index: NameIndex) -> GraphBatch:
    """Register every deployed entity in ``index``; return the edges (and namespace nodes)."""
    return ManifestReader(snap, index).read()
