"""Deployment manifests (Compose, Kubernetes) → Service / Infrastructure entities and edges.

* A Compose service or Kubernetes workload whose image is a known datastore or broker
  (postgres, mysql, mongo, redis, kafka, rabbitmq, nats, elasticsearch, ...) is
  ``Infrastructure`` with ``kind`` database | cache | queue | search | ...; anything else is a
  ``Service``. Names resolve through :class:`~substrate.connectors.aliases.NameIndex`.
  An image that names none is classified by the well-known port it listens on (a workload on
  5432 is a database). Image names match by whole word (``postgrest`` is no ``postgres``)
  (:mod:`infra_kinds`). A Kubernetes workload's image is its main container's.
* ``depends_on`` / ``links`` → ``DEPENDS_ON`` (confidence 1.0).
* An environment variable naming another entity's host or URL → ``CALLS`` (to a Service) or
  ``DEPENDS_ON`` (to Infrastructure), confidence 0.95 (a heuristic reading), with the
  ``address`` as written, its ``host`` and ``port`` as edge properties. A Kubernetes variable
  read from a ConfigMap (``envFrom``, ``configMapKeyRef``) has its evidence on the ConfigMap's
  line and the reference's line in ``evidence_refs``. So does an address written in a
  configuration file a Compose service mounts (``via: mounted_config``; the volume line in
  ``evidence_refs``).
* A datastore named after the one service declared beside it (``carts-db`` next to ``carts``
  in one Compose project or Kubernetes namespace) that no setting links to it →
  ``DEPENDS_ON`` (``via: naming``, confidence 0.6, evidence at the store's declaration): images
  that hard-code their hosts (Sock Shop's) name none in their environment.
* A Kubernetes namespace is ``Infrastructure(kind=namespace)`` that ``HOSTS`` its workloads.
* A workload keeps how each Kubernetes Service selecting it exposes it (``exposure``: its
  type, name and ports, "LoadBalancer Service frontend-external: port 80 -> 8080").
* Entities keep ``manifests`` (the files defining them), ``ports``, compose ``profiles`` and the
  compose ``build_context`` (the source folder, see :mod:`layout`), and ``attribute_refs``: the
  line of each image, port and (non-secret) environment variable, ``kind|value|path#Lline@commit``.

Every edge's evidence is ``path#L<line>@<commit>`` of the line that proves it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from substrate.connectors.aliases import NORMALISED, Entity, NameIndex
from substrate.connectors.app_config import app_config_values, is_app_config_path
from substrate.connectors.cmdline import arg_addresses
from substrate.connectors.compose import ComposeService, read_compose
from substrate.connectors.dockerfile_env import (
    copied_configs,
    dockerfile_path,
    dockerfile_ports,
    dockerfile_values,
)
from substrate.connectors.endpoints import HostRef, hosts_in
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.infra_kinds import (
    JOINED,
    KINDS,
    SECRET,
    kind_of,
    redact,
    telemetry_product,
)
from substrate.connectors.k8s import ConfigValue, K8sManifests, Workload, read_k8s
from substrate.connectors.mounts import Mounted, config_values
from substrate.connectors.source_calls import CONFIDENCE as SOURCE_CONFIDENCE
from substrate.connectors.source_calls import VIA as SOURCE_VIA
from substrate.connectors.source_calls import is_source_path, same_platform, source_peers
from substrate.connectors.yamlnodes import Fact
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

HEURISTIC = 0.95
NAMED_AFTER = 0.6  # a store linked to a service by its name alone ("carts-db" of "carts")
# "<service>-db", "<service>_database", "<service>db", "<service>-mongo", "<service>-redis"...
# (the datastore products infra_kinds knows, as written or run together: "mongodb")
_STORE_WORDS = sorted({"db", "database", "datastore", "store", "data", "cache", "sql", "pg",
                       *(f"{n}{j}" for kind in ("database", "cache") for n in KINDS[kind]
                         for j in ("", *JOINED))}, key=lambda w: (-len(w), w))
_STORE_NAME = re.compile(r"^(?P<service>[a-z0-9][\w.-]*?)[-_]?(?:"
                         + "|".join(map(re.escape, _STORE_WORDS)) + r")$", re.I)
RUN_TO_COMPLETION = ("Job", "CronJob")


def _dockerfile_in(context: str, dockerfile: str) -> str | None:
    """The repository path of a Dockerfile named relative to its build context, when it sits
    in a folder below the context (``context: src``, ``dockerfile: Services/Basket/Dockerfile``:
    the monorepo way of building each service from the shared root); None otherwise."""
    if not dockerfile or posixpath.isabs(dockerfile):
        return None
    path = posixpath.normpath(posixpath.join(context, dockerfile))
    folder = posixpath.dirname(path)
    inside = context in ("", ".") or folder.startswith(context.rstrip("/") + "/")
    return path if inside and folder not in ("", ".", context.rstrip("/")) else None


INSTANCE_LABEL = "app.kubernetes.io/instance"


_VERSION_LABELS = ("version", "app.kubernetes.io/version")
_APP_LABELS = ("app", "app.kubernetes.io/name")


def _version_stripped(work: Workload) -> str | None:
    """A workload named ``<app>-<version>`` and labelled so (Istio's Bookinfo runs
    ``reviews-v1``, ``-v2`` and ``-v3``, each ``app: reviews`` with its ``version:``, all behind
    the one Service ``reviews``): the app it is a version of, None otherwise."""
    version = next((work.labels[k] for k in _VERSION_LABELS if work.labels.get(k)), "")
    app = next((work.labels[k] for k in _APP_LABELS if work.labels.get(k)), "")
    return app if version and app and work.name.value == f"{app}-{version}" else None


def _release_stripped(work: Workload) -> str | None:
    """A rendered Helm chart names a workload ``<release>-<component>`` and labels it
    ``app.kubernetes.io/instance: <release>`` (Kubernetes' recommended labels): the component's
    own name (``opentelemetry-demo-adservice`` -> ``adservice``), as a Compose file or a
    service folder calls it; None when the name does not start with the release's. The reader
    uses it only for a service whose short name is already a service's: a datastore's short
    name is its product's (``orders-rabbitmq`` of release ``orders`` is not the Compose file's
    ``rabbitmq``, and another chart's ``catalog-mysql`` would be "mysql" as much as
    ``orders-mysql``)."""
    release = work.labels.get(INSTANCE_LABEL, "")
    name = work.name.value
    if release and name.startswith(release + "-") and len(name) > len(release) + 1:
        return name[len(release) + 1:]
    return None


def _label(image: str | None, ports: list[Fact], name: str | None = None) -> str:
    return "Infrastructure" if kind_of(image, ports, name) else "Service"


def union(props: dict[str, object], key: str, values: list[str]) -> None:
    if values:
        old = props.get(key)
        props[key] = sorted(set(old if isinstance(old, list) else []) | set(values))


def add_props(
    entity: Entity, image: Fact | None, env: dict[str, Fact], via: str, ports: list[Fact],
    ref: Callable[[Fact], str],
) -> None:
    props = entity.props
    if image is not None:
        props.setdefault("image", image.value)
    # the line of each attribute, ``kind|value|path#Lline@commit``: attribute answers cite it
    union(props, "attribute_refs",
           ([f"image|{image.value}|{ref(image)}"] if image is not None else [])
           + [f"port|{p.value}|{ref(p)}" for p in ports]
           + [f"env|{k}|{ref(f)}" for k, f in env.items() if not SECRET.search(k)])
    # the entity's own name when the image names no product ("kafka" built from the repository
    # as ghcr.io/open-telemetry/demo:latest-kafka), as the label was decided
    kind = kind_of(image.value if image else None, ports, str(props.get("name") or entity.name))
    if kind and entity.label == "Infrastructure":
        props.setdefault("kind", kind)
    telemetry = telemetry_product(image.value if image else None)
    if telemetry and entity.label == "Service":  # no path passes through it (cypher/_direct.j2)
        props.setdefault("telemetry", telemetry)
    union(props, "env", [redact(k, f.value) for k, f in env.items()])
    union(props, "ports", [p.value for p in ports])
    props["deployed_by"] = sorted(set(props.get("deployed_by", [])) | {via})


@dataclass
class Deployed:
    """One compose service or k8s workload, resolved to its entity."""

    entity: Entity
    env: dict[str, Fact]
    namespace: str | None
    depends: dict[str, Fact]
    config: dict[str, ConfigValue] | None = None
    mounted: list[Mounted] = field(default_factory=list)
    env_at: dict[str, Fact] = field(default_factory=dict)  # where a .env value is passed
    args: list[Fact] = field(default_factory=list)  # its command line's words


class ManifestReader:
    """Registers manifest names in the index, then derives the edges between them."""

    def __init__(self, snap: GitSnapshot, index: NameIndex) -> None:
        self.snap, self.index = snap, index
        self.deployed: list[Deployed] = []
        self.dns: dict[tuple[str, str], str] = {}  # (k8s service name, namespace) -> ceid
        # the entities each Compose project (its folder) or namespace declares, and where
        self.declared: dict[tuple[str, str], set[str]] = {}
        self.declared_at: dict[tuple[tuple[str, str], str], tuple[str, str]] = {}
        self.batch = GraphBatch()

    def ref(self, fact: Fact) -> str:
        return self.snap.ref(fact.path, fact.line)

    def read(self, *more: Callable[[ManifestReader], None]) -> GraphBatch:
        """``more``: readers of other formats (:mod:`cloudfoundry`), declaring before any edge."""
        for svc in read_compose(self.snap):
            self.add_compose(svc)
        self.add_k8s(read_k8s(self.snap))
        for add in more:
            add(self)
        for item in self.deployed:
            self.edges_of(item)
        self.named_stores()
        return self.batch

    def declare(self, scope: tuple[str, str], label: str, name: str, ref: str) -> Entity:
        """Register a name a manifest declares; the names declared beside it are distinct."""
        declared = self.declared.setdefault(scope, set())
        entity = self.index.register(label, name, ref, distinct=declared)
        declared.add(entity.ceid)
        self.declared_at.setdefault((scope, entity.ceid), (name, ref))
        return entity

    def named_stores(self) -> None:
        """``DEPENDS_ON`` from a service to the datastore named after it in the same Compose
        project or namespace, when nothing links the two already."""
        linked = {(e.src, e.dst) for e in self.batch.edges}
        for scope, ceids in sorted(self.declared.items()):
            services = {self.declared_at[(scope, c)][0].lower(): c for c in ceids
                        if self.index.get(c).label == "Service"}
            for store in sorted(ceids):
                name, ref = self.declared_at[(scope, store)]
                found = _STORE_NAME.match(name)
                service = services.get(found.group("service").lower()) if found else None
                if service is None or self.index.get(store).label != "Infrastructure" \
                        or (service, store) in linked:
                    continue
                linked.add((service, store))
                self.batch.edges.append(EdgeRecord("DEPENDS_ON", service, store, ref,
                                                   NAMED_AFTER, source="git",
                                                   props={"via": "naming"}))

    def add_compose(self, svc: ComposeService) -> None:
        image = svc.image.value if svc.image else None
        entity = self.declare(("compose", posixpath.dirname(svc.defined.path)),
                              _label(image, svc.ports, svc.key), svc.key, self.ref(svc.defined))
        for name, fact in sorted(svc.dns_names.items()):
            self.index.alias(entity.ceid, name, self.ref(fact))
        add_props(entity, svc.image, svc.env, "compose", svc.ports, self.ref)
        union(entity.props, "manifests", [svc.defined.path])
        union(entity.props, "profiles", svc.profiles)
        if svc.build is not None:
            entity.props.setdefault("build_context", svc.build.value)
            dockerfile = _dockerfile_in(svc.build.value, svc.dockerfile)
            if dockerfile:
                entity.props.setdefault("dockerfile", dockerfile)
            if svc.dockerfile and not posixpath.isabs(svc.dockerfile):  # node.Dockerfile
                entity.props.setdefault("build_dockerfile", posixpath.normpath(
                    posixpath.join(svc.build.value, svc.dockerfile)))
        depends = {**svc.depends_on, **svc.links}
        self.deployed.append(Deployed(entity, svc.env, None, depends, mounted=svc.mounted,
                                       env_at=svc.env_at, args=svc.command))

    def add_k8s(self, manifests: K8sManifests) -> None:
        entities: list[Entity] = []
        for work in manifests.workloads:
            image = work.image.value if work.image else None
            # a Job/CronJob runs to completion: one that loads a database (its image is the
            # database's client) is neither a datastore nor a service: Infrastructure(kind=job)
            batch = work.kind in RUN_TO_COMPLETION
            label = "Infrastructure" if batch else _label(image, work.ports, work.name.value)
            short = _release_stripped(work) if label == "Service" else None
            known = self.index.exact(short) if short else None
            if known is None or self.index.get(known).label != "Service" \
                    or self.index.exact(work.name.value) is not None:
                short = None  # known by its rendered name, or its short name names no service
            short = short or (_version_stripped(work) if label == "Service" else None)
            entity = self.declare(("k8s", work.ns or ""), label, short or work.name.value,
                                  self.ref(work.name))
            if short:  # the rendered name is a name of it too
                self.index.alias(entity.ceid, work.name.value, self.ref(work.name))
            if batch:
                entity.props.setdefault("kind", "job")
            # the environment a ConfigMap gives it (envFrom, configMapKeyRef) is its own too:
            # its attribute lines are the ConfigMap's (POSTGRES_DB of a database's config)
            config = manifests.config_env(work)
            env = {**{k: v.value for k, v in config.items()}, **work.env}
            add_props(entity, work.image, env, "k8s", work.ports,
                       self.ref)
            union(entity.props, "manifests", [work.path])
            if work.chart is not None:  # its manifest is a template the chart rendered
                union(entity.props, "rendered_charts", [work.chart])
            entity.props.setdefault("namespace", work.ns)
            entities.append(entity)
            self.deployed.append(Deployed(entity, work.env, work.ns, {}, config,
                                           args=work.args))
            self.dns[(work.name.value, work.ns)] = entity.ceid
            self.hosts(work, entity)
        for svc in manifests.services:
            for work in manifests.targets(svc):
                entity = entities[manifests.workloads.index(work)]
                self.index.alias(entity.ceid, svc.name.value, self.ref(svc.name))
                self.dns[(svc.name.value, svc.ns)] = entity.ceid
                # how it is reached: each port of each Service selecting it, at its line
                said = [(svc.exposure(p), self.ref(p)) for p in svc.ports]
                union(entity.props, "exposure", [text for text, _ in said])
                union(entity.props, "attribute_refs",
                      [f"exposure|{text}|{ref}" for text, ref in said])

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

    def edges_of(self, item: Deployed) -> None:
        src = item.entity.ceid
        for name, fact in sorted(item.depends.items()):
            dst = self.target(HostRef(name), item.namespace)
            if dst and dst != src:
                self.edge("DEPENDS_ON", src, dst, fact, 1.0, {"via": "depends_on"})
        for var, fact in sorted(item.env.items()):
            at = item.env_at.get(var)
            self.env_edges(item, var, fact, {"via": "env", "var": var} if at is None else {
                "via": "env", "var": var, "evidence_refs": [self.ref(fact), self.ref(at)]})
        for var, value in sorted((item.config or {}).items()):
            props: dict[str, object] = {
                "via": "configmap", "var": var, "configmap": value.configmap,
                "evidence_refs": [self.ref(value.value), self.ref(value.at)],
            }
            self.env_edges(item, var, value.value, props)
        for flag, name, said in arg_addresses(item.args):  # "-h edge-router", "--db-host db"
            self.env_edges(item, name, said, {"via": "args", "var": flag})
        for m in item.mounted:
            self.env_edges(item, m.key, m.value, {
                "via": "mounted_config", "var": m.key, "config_file": m.value.path,
                "evidence_refs": [self.ref(m.value), self.ref(m.mount)]})

    def env_edges(self, item: Deployed, var: str, fact: Fact, props: dict[str, object],
                  confidence: float = HEURISTIC,
                  peer: Callable[[dict[str, object]], bool] | None = None) -> None:
        """``peer``: which targets (their props) may be linked (None: any)."""
        src = item.entity.ceid
        for host in hosts_in(var, fact.value):
            dst = self.target(host, item.namespace)
            if dst and dst != src and (peer is None or peer(self.index.get(dst).props)):
                kind = "CALLS" if self.index.get(dst).label == "Service" else "DEPENDS_ON"
                self.edge(kind, src, dst, fact, confidence, {**props, **host.edge_props()})

    def edge(
        self, kind: str, src: str, dst: str, fact: Fact, conf: float, props: dict[str, object]
    ) -> None:
        edge = EdgeRecord(kind, src, dst, self.ref(fact), conf, source="git", props=props)
        self.batch.edges.append(edge)


def app_config_batch(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]) -> GraphBatch:
    """The edges the configuration in each service's source folder names: its application
    configuration (:mod:`substrate.connectors.app_config`: Spring Boot's ``application.yml``,
    ASP.NET Core's ``appsettings.json``), its Dockerfile's ``ENV`` defaults and the
    configuration files the Dockerfile copies into the image
    (:mod:`substrate.connectors.dockerfile_env`), and the peers its source code names
    (:mod:`substrate.connectors.source_calls`)."""
    reader = ManifestReader(snap, index)
    candidates = [p for p in snap.files() if is_app_config_path(p)]
    sources = [p for p in snap.files() if is_source_path(p)]
    snap.preload(p for p in map(dockerfile_path, dirs.values()) if snap.exists(p))
    for cid, folder in sorted(dirs.items()):
        if cid not in index or index.get(cid).label != "Service":
            continue
        item = Deployed(index.get(cid), {}, None, {})
        served_as = str(item.entity.props.get("name") or item.entity.name)
        for key, fact in app_config_values(snap, folder, candidates, served_as) \
                if candidates else ():
            reader.env_edges(item, key, fact, {"via": "app_config", "var": key,
                                               "config_file": fact.path})
        if not item.entity.props.get("ports"):  # no deployment says: what the image exposes
            exposed = dockerfile_ports(snap, folder)
            union(item.entity.props, "ports", [p.value for p in exposed])
            union(item.entity.props, "attribute_refs",
                  [f"port|{p.value}|{reader.ref(p)}" for p in exposed])
        deployed = frozenset(str(e).split("=", 1)[0] for e in item.entity.props.get("env") or ())
        for key, fact in dockerfile_values(snap, folder, deployed):
            reader.env_edges(item, key, fact, {"via": "dockerfile", "var": key,
                                               "config_file": fact.path})
        copied = copied_configs(snap, folder)
        snap.preload(copied)
        for path in copied:
            for key, fact in config_values(snap.read(path), path):
                reader.env_edges(item, key, fact, {"via": "image_config", "var": key,
                                                   "config_file": path})
        for key, fact, beside in source_peers(snap, folder, sources):
            if not beside & deployed:  # a default the deployment overrides is not used
                reader.env_edges(item, key, fact, {"via": SOURCE_VIA, "var": key,
                                                   "source_file": fact.path},
                                 SOURCE_CONFIDENCE, partial(same_platform, item.entity.props))
    return reader.batch


def manifest_batch(
    snap: GitSnapshot, index: NameIndex, *more: Callable[[ManifestReader], None]
) -> GraphBatch:
    """Register every deployed entity in ``index``; return the edges (and namespace nodes)."""
    return ManifestReader(snap, index).read(*more)
