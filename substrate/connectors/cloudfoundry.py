"""Cloud Foundry application manifests (cloud.gov, GOV.UK PaaS, Tanzu) → Services, the service
instances they bind, and the edges between them.

A manifest is a file named ``manifest.yml``/``manifest.yaml``/``manifest-*.yml``/
``*-manifest.yml`` anywhere in the tree whose first document has a top-level ``applications:``
list of mappings that each have a ``name`` (a Kubernetes or extension ``manifest.yml`` is
none). Files are read shallowest first. Each application is a ``Service`` declared through
:class:`~substrate.connectors.manifests.ManifestReader` (one of the same name in a Compose file
or a Kubernetes manifest is the same entity), ``deployed_by`` ``cloudfoundry``, with its
``image`` (``docker.image``), ``env`` (secrets redacted as for Compose), ``buildpacks``,
``instances``, ``memory``, ``processes`` (the types of its ``processes:`` entries, no services
of their own) and ``routes``, each in ``attribute_refs`` with its line (a route as
``address|<route>|<ref>``); ``path:`` (its source folder) is its ``build_context``.

* each bound service instance (``services: [name]`` or ``[{name: x}]``) is ``Infrastructure``
  whose ``kind`` its name tells (``postgres``, ``rds``, ``-db`` database; ``redis``,
  ``elasticache`` cache; ``s3``, ``bucket`` storage; ``sqs``, ``sns`` queue; ``ses``, ``smtp``
  email), with ``DEPENDS_ON`` app → instance (confidence 1.0, ``via: service_binding``) at the
  list item's line; an instance named like another application of the repository is
  ``CALLS`` to it;
* an environment value or a command naming another application's route or name is ``CALLS``
  through :meth:`ManifestReader.env_edges`, as in Compose.

``((var))`` placeholders are resolved from the vars files ``cf push --vars-file`` would take:
a YAML file beside or under the manifest's folder not named like a manifest (``vars.yml``,
``deploy-config/staging.yml``), outside ``.github/`` and not a Compose file. A placeholder
resolves only when exactly one value (or several identical) exists among them; otherwise its
text is kept, and an application or instance whose name keeps one is not read.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field

from yaml.nodes import MappingNode, Node

from substrate.connectors.aliases import Entity
from substrate.connectors.cmdline import tokens
from substrate.connectors.compose import is_compose_file
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.infra_kinds import JOINED, KINDS, WORD, name_kind
from substrate.connectors.manifests import Deployed, ManifestReader, add_props, union
from substrate.connectors.yamlnodes import Fact, compose_all, fact, get, items, pairs, path_get
from substrate.graph.records import slug

DEPLOYED_BY = "cloudfoundry"
# what a buildpack (by name or URL) runs: the application's language; the first that matches
# (nodejs before java: "java" is no part of it; apt/staticfile/binary name none)
BUILDPACK_LANGUAGES = (("python", "Python"), ("nodejs", "JavaScript"), ("node", "JavaScript"),
                       ("ruby", "Ruby"), ("php", "PHP"), ("dotnet", "C#"), ("java", "Java"),
                       ("go_buildpack", "Go"), ("go-buildpack", "Go"))
SCOPE = "(cloudfoundry)"  # the routes of the applications, as ManifestReader.dns keys
_MANIFEST = re.compile(r"^(?:manifest|manifest-[^/]+|[^/]+-manifest)\.ya?ml$")
_YAML = (".yml", ".yaml")
_PLACEHOLDER = re.compile(r"\(\(\s*([^()\s]+?)\s*\)\)")
_ARCHIVE = (".jar", ".war", ".zip", ".tgz", ".tar.gz")
# the environment a manifest is named for: manifest-staging.yml, production-manifest.yml
_MANIFEST_ENV = re.compile(r"^(?:manifest[-_.](?P<a>[^/]+)|(?P<b>[^/]+)[-_.]manifest)\.ya?ml$",
                           re.I)
_ENV_STAND_INS = frozenset({"ENVIRONMENT", "ENV", "SPACE", "STAGE"})


_ENV_WORDS = frozenset({"dev", "development", "test", "testing", "qa", "uat", "staging", "stage",
                        "stg", "prod", "production", "preview", "demo", "sandbox", "stable",
                        "perf", "int", "integration", "preprod", "live"})


def manifest_env(path: str) -> str | None:
    """``staging`` for ``deploy/manifest-staging.yml``; None for ``manifest.yml``."""
    m = _MANIFEST_ENV.match(posixpath.basename(path))
    return (m["a"] or m["b"]).lower() if m else None


def manifest_envs(paths: list[str]) -> dict[str, str]:
    """The environment each manifest is named for, when it is one: a word environments are
    called by (``manifest-staging.yml``), or any name in a folder of two or more manifests
    named so (``manifest-aa.yaml``, ``manifest-cw.yaml``: a sandbox per developer); not the
    application a lone ``manifest-fac.yml`` names."""
    named = {p: e for p in paths if (e := manifest_env(p)) is not None}
    per_folder = Counter(posixpath.dirname(p) for p in named)
    return {p: e for p, e in named.items()
            if e in _ENV_WORDS or per_folder[posixpath.dirname(p)] > 1}
# the words of a brokered service instance's name (AWS brokers of cloud.gov and GOV.UK PaaS)
_INSTANCE_KINDS: dict[str, tuple[str, ...]] = {
    "database": ("rds", "aurora", "db", "database", "sql", "psql", "pg"),
    "cache": ("elasticache", "cache"),
    "storage": ("s3", "bucket", "buckets", "storage", "blob"),
    "queue": ("sqs", "sns", "queue", "queues", "mq"),
    "email": ("ses", "smtp", "email", "mail"),
}  # fmt: skip


def is_manifest_path(path: str) -> bool:
    """Is the file named like a Cloud Foundry manifest (its content decides whether it is)?"""
    return bool(_MANIFEST.match(posixpath.basename(path)))


def is_cloudfoundry_path(path: str) -> bool:
    """A manifest, or a YAML file that may be a manifest's vars file (the replay's filter)."""
    return is_manifest_path(path) or (path.endswith(_YAML) and not path.startswith(".github/"))


def instance_kind(name: str) -> str | None:
    """Infrastructure kind a bound service instance's name states (``notify-redis-service``,
    ``app-rds-postgres``, ``csv-upload-bucket``), None when it states none."""
    words = set(WORD.findall(name.lower()))
    for kind, names in (*KINDS.items(), *_INSTANCE_KINDS.items()):
        if any(w in words or any(f"{w}{j}" in words for j in JOINED) for w in names):
            return kind
    return name_kind(name)


_NAME_PLACEHOLDER = re.compile(r"[-_.]?\(\([^()]*\)\)")


@dataclass(frozen=True)
class Resolved:
    """A value with its placeholders resolved where they could be, and the vars-file lines."""

    fact: Fact
    vars: tuple[Fact, ...] = ()

    @property
    def unresolved(self) -> bool:
        return bool(_PLACEHOLDER.search(self.fact.value))

    def for_every(self, env: str | None) -> Resolved:
        """The name every environment deploys: without the word naming the environment
        ``env`` its manifest is named for (``getgov-staging`` and ``getgov-staging-database``
        in ``manifest-staging.yaml`` are ``getgov`` and ``getgov-database``), or a capitalised
        stand-in for one (``getgov-ENVIRONMENT``); unchanged when that is all of it."""
        value = self.fact.value
        words = re.split(r"([-_.])", value)  # words and the separators between them
        drop = {i for i, w in enumerate(words[::2]) if w in _ENV_STAND_INS
                or (env is not None and w.lower() == env)}
        if not drop or len(drop) == len(words[::2]):
            return self
        parts: list[str] = []
        for i, word in enumerate(words[::2]):
            if i not in drop:  # each kept word after the first with the separator before it
                parts += [words[2 * i - 1], word] if parts else [word]
        return Resolved(Fact("".join(parts), self.fact.path, self.fact.line), self.vars)

    def as_name(self) -> Resolved:
        """The value as a name: a placeholder the vars files give several values
        (``notify-api-((env))`` pushed as notify-api-staging and notify-api-production) is
        left out with its separator, naming what every environment deploys
        (``notify-api``); unchanged when nothing would be left."""
        if not self.unresolved:
            return self
        bare = _NAME_PLACEHOLDER.sub("", self.fact.value).strip("-_. ")
        return self if not bare or "((" in bare else \
            Resolved(Fact(bare, self.fact.path, self.fact.line), self.vars)


class _Vars:
    """The values of the vars files a manifest of one folder may be pushed with."""

    def __init__(self, docs: list[tuple[str, Node]] | None = None) -> None:
        self.docs = docs or []  # (path, its first document)
        self.known: dict[str, Fact | None] = {}

    def value(self, name: str) -> Fact | None:
        """The one value of ``name`` among the vars files, None when none or several differ."""
        if name not in self.known:
            found = [f for p, doc in self.docs
                     if (f := fact(path_get(doc, *name.split(".")), p)) is not None]
            self.known[name] = found[0] if len({f.value for f in found}) == 1 else None
        return self.known[name]

    def resolve(self, given: Fact) -> Resolved:
        used: list[Fact] = []

        def sub(match: re.Match[str]) -> str:
            found = self.value(match[1])
            if found is None:
                return match[0]
            used.append(found)
            return found.value

        text = _PLACEHOLDER.sub(sub, given.value) if "((" in given.value else given.value
        return Resolved(Fact(text, given.path, given.line), tuple(used))


@dataclass
class CfApp:
    """One application of a manifest, its values resolved (placeholder text where not)."""

    name: Resolved
    path: str  # the manifest
    image: Fact | None = None
    source: str | None = None  # ``path:``, a folder of the repository
    env: dict[str, Fact] = field(default_factory=dict)
    services: list[Resolved] = field(default_factory=list)
    routes: list[Fact] = field(default_factory=list)
    command: list[Fact] = field(default_factory=list)  # its and its processes' words
    attributes: list[tuple[str, Fact]] = field(default_factory=list)  # (kind, value) with lines


# where ``cf push --vars-file`` files live, below the manifest's folder: a file named for them
# (``vars.yml``, ``vars-staging.yml``) or a folder of them (``vars/``, ``deploy-config/``,
# ``.cloudgov/``): not every YAML file of the repository, which Helm and Kubernetes fill
_VARS_NAME = re.compile(r"(?:^|[-_.])vars?(?:[-_.]|$)", re.I)
_VARS_DIRS = frozenset({"vars", "deploy-config", "deploy", "deployment", "config", "configs",
                        "environments", "env", "envs", "cloudgov", ".cloudgov", "manifests"})
_VARS_DEPTH = 3


def _may_hold_vars(relative: str) -> bool:
    parts = relative.split("/")
    stem = posixpath.splitext(parts[-1])[0]
    return len(parts) <= _VARS_DEPTH and (bool(_VARS_NAME.search(stem))
                                          or any(d.lower() in _VARS_DIRS for d in parts[:-1]))


def vars_files(snap: GitSnapshot, folder: str) -> _Vars:
    """The vars files of the manifests of ``folder`` (see the module docstring and
    :data:`_VARS_DIRS`)."""
    prefix = folder + "/" if folder else ""
    paths = [p for p in snap.files() if p.startswith(prefix) and p.endswith(_YAML)
             and not p.startswith(".github/") and not is_manifest_path(p)
             and not is_compose_file(posixpath.basename(p))
             and _may_hold_vars(p[len(prefix):])]
    snap.preload(paths)
    return _Vars([(p, docs[0]) for p in paths
                  if (docs := compose_all(snap.read(p))) and isinstance(docs[0], MappingNode)])


def _manifest_apps(text: str) -> list[Node]:
    """The ``applications`` of a manifest, ``[]`` when the file is no CF manifest."""
    docs = compose_all(text)
    apps = items(get(docs[0], "applications")) if docs else []
    valid = all(isinstance(a, MappingNode) and fact(get(a, "name"), "") for a in apps)
    return apps if valid else []


def _source(snap: GitSnapshot, manifest: str, given: Fact | None) -> str | None:
    if given is None or "((" in given.value or given.value.endswith(_ARCHIVE):
        return None
    folder = posixpath.normpath(posixpath.join(posixpath.dirname(manifest), given.value))
    inside = folder not in (".", "") and not folder.startswith("../")
    return folder if inside and any(p.startswith(folder + "/") for p in snap.files()) else None


def _read_app(snap: GitSnapshot, node: Node, path: str, found: _Vars,
              env: str | None = None) -> CfApp | None:
    def value(at: Node | None) -> Fact | None:
        given = fact(at, path)
        return found.resolve(given).fact if given is not None else None

    name = found.resolve(fact(get(node, "name"), path) or Fact("", path, 0)).as_name() \
        .for_every(env)
    if name.unresolved or not name.fact.value.strip():
        return None
    app = CfApp(name, path, image=value(path_get(node, "docker", "image")),
                source=_source(snap, path, value(get(node, "path"))))
    for key, at in pairs(get(node, "env")):
        if (given := value(at)) is not None:
            app.env[str(key.value)] = given
    for item in items(get(node, "services")):
        given = fact(item, path) or fact(get(item, "name"), path)
        if given is not None:
            app.services.append(found.resolve(given).as_name().for_every(env))
    app.routes = [f for r in items(get(node, "routes")) if (f := value(get(r, "route")))]
    packs = [*items(get(node, "buildpacks")), get(node, "buildpack")]
    app.attributes = [("buildpack", f) for b in packs if (f := value(b))]
    app.attributes += [(k, f) for k in ("instances", "memory") if (f := value(get(node, k)))]
    for process in [node, *items(get(node, "processes"))]:
        kind = value(get(process, "type")) if process is not node else None
        if kind is not None:
            app.attributes.append(("process", kind))
        if (command := value(get(process, "command"))) is not None:
            app.command += tokens(command)
    app.attributes += [("address", f) for f in app.routes]
    return app


def read_cloudfoundry(snap: GitSnapshot) -> list[CfApp]:
    """Every application of the snapshot's manifests (shallowest manifest first). An
    application a manifest per environment declares again (``getgov`` in each of
    manage.get.gov's ~25 ``manifest-<env>.yaml``) is read from the first of them only: the
    others state the same application elsewhere, and a new environment's manifest would
    otherwise change the graph (one more snapshot in a replay) for nothing it adds."""
    paths = sorted((p for p in snap.files() if is_manifest_path(p)),
                   key=lambda p: (p.count("/"), p))
    snap.preload(paths)
    by_folder: dict[str, _Vars] = {}
    envs = manifest_envs(paths)
    out: list[CfApp] = []
    per_env: set[str] = set()  # the names read from a manifest per environment
    for path in paths:
        text = snap.read(path)
        folder = posixpath.dirname(path)
        for node in _manifest_apps(text):
            if folder not in by_folder and "((" in text:
                by_folder[folder] = vars_files(snap, folder)
            app = _read_app(snap, node, path, by_folder.get(folder) or _Vars(), envs.get(path))
            if app is None:
                continue
            named = app.name.fact.value.lower()
            if path in envs:
                if named in per_env:
                    continue
                per_env.add(named)
            out.append(app)
    return out


def _route_host(route: str) -> str | None:
    host = route.split("/", 1)[0].rsplit(":", 1)[0].lower()
    return host if host and "((" not in host and "*" not in host else None


def _declare_app(reader: ManifestReader, app: CfApp) -> Entity:
    ref, name = reader.ref, app.name.fact
    entity = reader.declare((DEPLOYED_BY, app.path), "Service", name.value, ref(name))
    for line in app.name.vars:
        entity.add_evidence(ref(line))
    add_props(entity, app.image, app.env, DEPLOYED_BY, [], ref)
    props = entity.props
    union(props, "manifests", [app.path])
    union(props, "routes", [f.value for f in app.routes])
    union(props, "buildpacks", [f.value for k, f in app.attributes if k == "buildpack"])
    union(props, "processes", [f.value for k, f in app.attributes if k == "process"])
    for key, found in app.attributes:
        if key in ("instances", "memory"):
            props.setdefault(key, found.value)
    union(props, "attribute_refs", [f"{k}|{f.value}|{ref(f)}" for k, f in app.attributes])
    language = next(((lang, f) for k, f in app.attributes if k == "buildpack"
                     for word, lang in BUILDPACK_LANGUAGES if word in f.value.lower()), None)
    if language and not props.get("language"):  # python_buildpack: the app is Python
        props["language"] = language[0]
        union(props, "attribute_refs", [f"language|{language[0]}|{ref(language[1])}"])
    if app.source:
        props.setdefault("build_context", app.source)
    for route in app.routes:
        host = _route_host(route.value)
        if host:
            reader.dns[(host, SCOPE)] = entity.ceid
    reader.deployed.append(Deployed(entity, app.env, SCOPE, {}, args=app.command))
    return entity


def _bind(reader: ManifestReader, src: str, bound: Resolved, apps: dict[str, str]) -> None:
    """The edge of one service binding: CALLS another application, else DEPENDS_ON the
    service instance."""
    found, ref = bound.fact, reader.ref
    props: dict[str, object] = {"via": "service_binding"}
    if bound.vars:
        props["evidence_refs"] = [ref(found), *(ref(v) for v in bound.vars)]
    dst = apps.get(slug(found.value))
    if dst is None:
        infra = reader.declare((DEPLOYED_BY, found.path), "Infrastructure", found.value,
                               ref(found))
        kind = instance_kind(found.value)
        if kind:
            infra.props.setdefault("kind", kind)
        add_props(infra, None, {}, DEPLOYED_BY, [], ref)
        union(infra.props, "manifests", [found.path])
        dst = infra.ceid
    if dst != src:
        kind = "CALLS" if reader.index.get(dst).label == "Service" else "DEPENDS_ON"
        reader.edge(kind, src, dst, found, 1.0, props)


def add_cloudfoundry(reader: ManifestReader) -> None:
    """Declare every application and bound service instance of the snapshot's manifests in
    ``reader`` (its edges from the environment follow with the Compose and k8s ones)."""
    apps = read_cloudfoundry(reader.snap)
    entities = [_declare_app(reader, app) for app in apps]
    names = {slug(app.name.fact.value): e.ceid for app, e in zip(apps, entities, strict=True)}
    for app, entity in zip(apps, entities, strict=True):
        for bound in app.services:
            if not bound.unresolved:
                _bind(reader, entity.ceid, bound, names)
