"""Docker Compose files of one commit, merged per directory, with the line of every fact.

Per directory the files merge in Compose's order: ``compose.yaml``/``compose.yml``/
``docker-compose.yaml``/``docker-compose.yml``, then the ``*.override.*`` files, then any other
``docker-compose.*.yml``/``compose.*.yaml`` in name order. Later files win per key
(``image``, each environment variable); ``depends_on``/``links``/``ports`` accumulate (a
``!reset``/``!override`` sequence replaces). Values are interpolated with the directory's
``.env`` (``${VAR}``, ``${VAR:-default}``, ...).

``include:`` (a path, a list of paths, or a list of ``{path, project_directory, env_file}``)
loads the included files into the project first; their relative paths (``build``,
``env_file``) and their ``.env`` are those of their own folder. ``build:`` (a context string or
``{context, dockerfile}``) names the service's source folder; ``profiles`` are kept.
The configuration files a service bind-mounts from the repository are read for their values
(:mod:`mounts`: an OpenTelemetry collector's exporter endpoint, an nginx ``proxy_pass``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from yaml.nodes import Node, SequenceNode

from substrate.connectors.cmdline import tokens
from substrate.connectors.envfiles import interpolate, parse_env_file
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.mounts import Mounted, config_values, mounted_files
from substrate.connectors.yamlnodes import Fact, compose_all, get, items, line_of, pairs, scalar

BASES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")
_OVERRIDE = re.compile(r"^(?:docker-)?compose\.override\.ya?ml$")
# overlays merged over the base file of their folder: "docker-compose.prod.yml",
# "compose.tracing.yaml"; a variant is a project of its own: "docker-compose-dev.yml",
# "docker-compose_kieker.yaml" (TeaStore's deployments, FAC's docker-compose-web.yml)
_EXTRA = re.compile(r"^(?:docker-)?compose\.[^/]+\.ya?ml$")
_VARIANT = re.compile(r"^(?:docker-)?compose[_-][^/]+\.ya?ml$")


@dataclass
class ComposeService:
    """One service of a merged Compose project."""

    key: str
    defined: Fact
    image: Fact | None = None
    env: dict[str, Fact] = field(default_factory=dict)
    depends_on: dict[str, Fact] = field(default_factory=dict)
    links: dict[str, Fact] = field(default_factory=dict)
    dns_names: dict[str, Fact] = field(default_factory=dict)
    build: Fact | None = None  # the build context, a repository folder ("" for the root)
    dockerfile: str = ""
    profiles: list[str] = field(default_factory=list)
    ports: list[Fact] = field(default_factory=list)
    mounted: list[Mounted] = field(default_factory=list)  # values of mounted config files
    command: list[Fact] = field(default_factory=list)  # its words, each at its line
    # a variable passed without a value (``- CART_ADDR``) takes it from the project's .env:
    # ``env`` holds the .env line (where the value is), this the line that passes it
    env_at: dict[str, Fact] = field(default_factory=dict)


def _rank(name: str) -> tuple[int, str]:
    if name in BASES:
        return 0, f"{BASES.index(name)}"
    if _OVERRIDE.match(name):
        return 1, name
    return 2, name


def is_compose_file(name: str) -> bool:
    return name in BASES or bool(_EXTRA.match(name) or _VARIANT.match(name))


def compose_files(files: Iterable[str]) -> dict[str, list[str]]:
    """Compose files grouped by project, each group in merge order: a folder's base file and
    its overlays (keyed by the folder), and each variant file alone (keyed by its path,
    after its folder's base project)."""
    groups: dict[str, list[str]] = {}
    for path in files:
        name = posixpath.basename(path)
        if name in BASES or _EXTRA.match(name):
            groups.setdefault(posixpath.dirname(path), []).append(path)
        elif _VARIANT.match(name):
            groups.setdefault(path, []).append(path)
    return {d: sorted(ps, key=lambda p: _rank(posixpath.basename(p))) for d, ps in groups.items()}


def _join(directory: str, relative: str) -> str:
    path = posixpath.normpath(posixpath.join(directory, relative))
    return "" if path == "." else path


def _include_entries(node: Node | None) -> list[tuple[str, str | None, str | None]]:
    """``(path, project_directory, env_file)`` of each ``include`` entry."""
    out: list[tuple[str, str | None, str | None]] = []
    for entry in [node] if scalar(node) else items(node):
        if scalar(entry):
            out.append((str(scalar(entry)), None, None))
            continue
        paths = [scalar(get(entry, "path"))] + [scalar(n) for n in items(get(entry, "path"))]
        env_file = scalar(get(entry, "env_file")) or next(
            (scalar(n) for n in items(get(entry, "env_file"))), None)
        for path in paths:
            if path:
                out.append((path, scalar(get(entry, "project_directory")), env_file))
    return out


class _Reader:
    """Reads the services of one file into the merged project."""

    def __init__(self, snap: GitSnapshot, directory: str, env: dict[str, Fact],
                 seen: set[str] | None = None) -> None:
        self.snap, self.directory, self.env_facts = snap, directory, env
        self.env = {k: f.value for k, f in env.items()}
        self.path = ""
        self.seen = seen if seen is not None else set()

    def fact(self, node: Node | None, line_node: Node | None = None) -> Fact | None:
        text = scalar(node)
        if node is None or text is None:
            return None
        return Fact(interpolate(text, self.env), self.path, line_of(line_node or node))

    def read_file(self, path: str, project: dict[str, ComposeService]) -> None:
        self.seen.add(path)
        docs = compose_all(self.snap.read(path))
        if docs:
            self.read_includes(path, get(docs[0], "include"), project)
        self.path = path
        services = get(docs[0], "services") if docs else None
        if services is None and docs:  # Compose file format 1: the services at the top level
            services = docs[0] if any(get(body, "image") is not None
                                      or get(body, "build") is not None
                                      for _, body in pairs(docs[0])) else None
        for key_node, body in pairs(services):
            if services is docs[0] and get(body, "image") is None \
                    and get(body, "build") is None:
                continue  # not a service of format 1 (a "version:" line, an "x-" block)
            key = str(key_node.value)
            if key not in project:
                project[key] = ComposeService(key, Fact(key, path, line_of(key_node)))
            self.read_service(project[key], body)

    def read_includes(self, path: str, node: Node | None,
                      project: dict[str, ComposeService]) -> None:
        """Load each included file (once) into ``project``, relative to its own folder."""
        for entry, project_dir, env_file in _include_entries(node):
            included = _join(posixpath.dirname(path), interpolate(entry, self.env))
            if included in self.seen or not self.snap.exists(included):
                continue
            base = _join(posixpath.dirname(path), project_dir) if project_dir else None
            directory = base if base is not None else posixpath.dirname(included)
            env = dotenv_facts(self.snap, directory, env_file)
            _Reader(self.snap, directory, env, self.seen).read_file(included, project)

    def read_build(self, svc: ComposeService, node: Node | None) -> None:
        context_node = node if scalar(node) is not None else get(node, "context")
        context = self.fact(context_node)
        if node is not None and context is None and get(node, "dockerfile") is not None:
            context = Fact(".", self.path, line_of(node))
        if context is None or "://" in context.value or context.value.startswith("git@"):
            return
        folder = _join(self.directory, context.value)
        svc.build = Fact(folder, context.path, context.line)
        svc.dockerfile = (self.fact(get(node, "dockerfile")) or Fact("", "", 0)).value

    def read_ports(self, svc: ComposeService, node: Node | None) -> None:
        if isinstance(node, SequenceNode) and node.tag in ("!reset", "!override"):
            svc.ports = []
        for item in items(node):
            found = self.fact(item)
            target, published = self.fact(get(item, "target")), self.fact(get(item, "published"))
            if found is None and target is not None:
                text = f"{published.value}:{target.value}" if published else target.value
                found = Fact(text, target.path, target.line)
            if found is not None and found.value not in {p.value for p in svc.ports}:
                svc.ports.append(found)

    def read_service(self, svc: ComposeService, body: Node) -> None:
        svc.image = self.fact(get(body, "image")) or svc.image
        if get(body, "build") is not None:
            self.read_build(svc, get(body, "build"))
        self.read_ports(svc, get(body, "ports"))
        for profile in items(get(body, "profiles")):
            name = scalar(profile)
            if name and name not in svc.profiles:
                svc.profiles.append(name)
        command = get(body, "command")
        if command is not None:  # a later file's command replaces the earlier one
            line = self.fact(command)
            svc.command = tokens(line) if line is not None else [
                f for f in (self.fact(n) for n in items(command)) if f is not None]
        self.read_env_files(svc, get(body, "env_file"))
        self.read_environment(svc, get(body, "environment"))
        self.read_mounts(svc, get(body, "volumes"))
        for name, found in self.names(get(body, "depends_on")):
            svc.depends_on.setdefault(name, found)
        for name, found in self.names(get(body, "links")):
            svc.links.setdefault(name.split(":", 1)[0], found)
        dns = [get(body, "container_name"), get(body, "hostname")]
        dns += [a for _, net in pairs(get(body, "networks")) for a in items(get(net, "aliases"))]
        for node in dns:
            fact = self.fact(node)
            if fact is not None:
                svc.dns_names.setdefault(fact.value, fact)

    def read_mounts(self, svc: ComposeService, node: Node | None) -> None:
        for path, volume in mounted_files(node, self.directory, self.env):
            if path in {m.value.path for m in svc.mounted} or not self.snap.exists(path):
                continue
            mount = Fact(path, self.path, line_of(volume))
            svc.mounted.extend(Mounted(key, value, mount)
                               for key, value in config_values(self.snap.read(path), path))

    def names(self, node: Node | None) -> list[tuple[str, Fact]]:
        """Names listed in a sequence or as keys of a mapping (``depends_on`` long form)."""
        found = [self.fact(item) for item in items(node)]
        found += [self.fact(key) for key, _ in pairs(node)]
        return [(f.value, f) for f in found if f is not None]

    def read_environment(self, svc: ComposeService, node: Node | None) -> None:
        for key, value in pairs(node):
            given = self.fact(value, key)
            if given is None:
                self.passed(svc, str(key.value), Fact("", self.path, line_of(key)))
            else:
                svc.env[str(key.value)] = given
                svc.env_at.pop(str(key.value), None)
        for item in items(node):
            entry = self.fact(item)
            if entry is None:
                continue
            name, sep, text = entry.value.partition("=")
            if sep:
                svc.env[name.strip()] = Fact(text, entry.path, entry.line)
                svc.env_at.pop(name.strip(), None)
            else:
                self.passed(svc, name.strip(), entry)

    def passed(self, svc: ComposeService, name: str, at: Fact) -> None:
        """``name`` passed without a value: the project's .env value, at its line."""
        found = self.env_facts.get(name)
        svc.env[name] = found if found is not None else Fact("", at.path, at.line)
        if found is not None:
            svc.env_at[name] = at
        else:
            svc.env_at.pop(name, None)

    def read_env_files(self, svc: ComposeService, node: Node | None) -> None:
        entries = [scalar(node)] + [scalar(n) or scalar(get(n, "path")) for n in items(node)]
        for entry in entries:
            if not entry:
                continue
            path = posixpath.normpath(posixpath.join(self.directory, entry))
            if self.snap.exists(path):
                for name, fact in parse_env_file(self.snap.read(path), path).items():
                    svc.env[name] = fact
                    svc.env_at.pop(name, None)


def dotenv_facts(snap: GitSnapshot, directory: str, name: str | None = None) -> dict[str, Fact]:
    """Variables of the ``.env`` (or ``name``) next to the Compose files, each with its line
    (for interpolation, and for a variable passed without a value)."""
    path = _join(directory, name or ".env")
    if not snap.exists(path):
        return {}
    return parse_env_file(snap.read(path), path)


def read_compose(snap: GitSnapshot) -> list[ComposeService]:
    """Every Compose service of the snapshot (projects in name order)."""
    out: list[ComposeService] = []
    for _, paths in sorted(compose_files(snap.files()).items()):  # a base before its variants
        snap.preload(paths)
        directory = posixpath.dirname(paths[0])
        reader = _Reader(snap, directory, dotenv_facts(snap, directory), set(paths))
        project: dict[str, ComposeService] = {}
        for path in paths:
            reader.read_file(path, project)
        out.extend(project.values())
    return out
