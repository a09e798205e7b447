"""Docker Compose files of one commit, merged per directory, with the line of every fact.

Per directory the files merge in Compose's order: ``compose.yaml``/``compose.yml``/
``docker-compose.yaml``/``docker-compose.yml``, then the ``*.override.*`` files, then any other
``docker-compose.*.yml``/``compose.*.yaml`` in name order. Later files win per key
(``image``, each environment variable); ``depends_on``/``links`` accumulate. Values are
interpolated with the directory's ``.env`` (``${VAR}``, ``${VAR:-default}``, ...).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from yaml.nodes import Node

from substrate.connectors.envfiles import interpolate, parse_env_file
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.yamlnodes import Fact, compose_all, get, items, line_of, pairs, scalar

BASES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")
_OVERRIDE = re.compile(r"^(?:docker-)?compose\.override\.ya?ml$")
_EXTRA = re.compile(r"^(?:docker-)?compose\.[^/]+\.ya?ml$")


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


def _rank(name: str) -> tuple[int, str]:
    if name in BASES:
        return 0, f"{BASES.index(name)}"
    if _OVERRIDE.match(name):
        return 1, name
    return 2, name


def compose_files(files: Iterable[str]) -> dict[str, list[str]]:
    """Compose files grouped by directory, each group in merge order."""
    groups: dict[str, list[str]] = {}
    for path in files:
        name = posixpath.basename(path)
        if name in BASES or _EXTRA.match(name):
            groups.setdefault(posixpath.dirname(path), []).append(path)
    return {d: sorted(ps, key=lambda p: _rank(posixpath.basename(p))) for d, ps in groups.items()}


class _Reader:
    """Reads the services of one file into the merged project."""

    def __init__(self, snap: GitSnapshot, directory: str, env: dict[str, str]) -> None:
        self.snap, self.directory, self.env = snap, directory, env
        self.path = ""

    def fact(self, node: Node | None, line_node: Node | None = None) -> Fact | None:
        text = scalar(node)
        if node is None or text is None:
            return None
        return Fact(interpolate(text, self.env), self.path, line_of(line_node or node))

    def read_file(self, path: str, project: dict[str, ComposeService]) -> None:
        self.path = path
        docs = compose_all(self.snap.read(path))
        services = get(docs[0], "services") if docs else None
        for key_node, body in pairs(services):
            key = str(key_node.value)
            if key not in project:
                project[key] = ComposeService(key, Fact(key, path, line_of(key_node)))
            self.read_service(project[key], body)

    def read_service(self, svc: ComposeService, body: Node) -> None:
        svc.image = self.fact(get(body, "image")) or svc.image
        self.read_env_files(svc, get(body, "env_file"))
        self.read_environment(svc, get(body, "environment"))
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

    def names(self, node: Node | None) -> list[tuple[str, Fact]]:
        """Names listed in a sequence or as keys of a mapping (``depends_on`` long form)."""
        found = [self.fact(item) for item in items(node)]
        found += [self.fact(key) for key, _ in pairs(node)]
        return [(f.value, f) for f in found if f is not None]

    def read_environment(self, svc: ComposeService, node: Node | None) -> None:
        for key, value in pairs(node):
            unset = Fact(self.env.get(str(key.value), ""), self.path, line_of(key))
            svc.env[str(key.value)] = self.fact(value, key) or unset
        for item in items(node):
            entry = self.fact(item)
            if entry is None:
                continue
            name, sep, text = entry.value.partition("=")
            text = text if sep else self.env.get(name, "")
            svc.env[name.strip()] = Fact(text, entry.path, entry.line)

    def read_env_files(self, svc: ComposeService, node: Node | None) -> None:
        entries = [scalar(node)] + [scalar(n) or scalar(get(n, "path")) for n in items(node)]
        for entry in entries:
            if not entry:
                continue
            path = posixpath.normpath(posixpath.join(self.directory, entry))
            if self.snap.exists(path):
                for name, fact in parse_env_file(self.snap.read(path), path).items():
                    svc.env[name] = fact


def dotenv(snap: GitSnapshot, directory: str) -> dict[str, str]:
    """Variables of the ``.env`` next to the Compose files (for interpolation)."""
    path = posixpath.join(directory, ".env") if directory else ".env"
    if not snap.exists(path):
        return {}
    return {k: f.value for k, f in parse_env_file(snap.read(path), path).items()}


def read_compose(snap: GitSnapshot) -> list[ComposeService]:
    """Every Compose service of the snapshot (directories in name order)."""
    out: list[ComposeService] = []
    for directory, paths in sorted(compose_files(snap.files()).items()):
        snap.preload(paths)
        reader = _Reader(snap, directory, dotenv(snap, directory))
        project: dict[str, ComposeService] = {}
        for path in paths:
            reader.read_file(path, project)
        out.extend(project.values())
    return out
