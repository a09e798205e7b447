"""Where each service's source lives: deployed entities linked to the folders of the tree.

A *module folder* is a folder (not the root) that holds a build file (``Dockerfile``,
``pom.xml``, ``build.gradle(.kts)``, ``package.json``, ``go.mod``, ``pyproject.toml``,
``setup.py``, ``Cargo.toml``, ``*.csproj``, ``Gemfile``, ``mix.exs``) or is a member of a
workspace (``package.json`` ``workspaces``, ``pnpm-workspace.yaml``, ``go.work`` ``use``,
Maven ``<modules>``, Cargo ``[workspace] members``, uv ``[tool.uv.workspace] members``). Its
names are its folder name and the name its build file declares (``package.json`` ``name``
without the scope, the Maven ``artifactId``, the last segment of the Go ``module``, the
``[project]``/``[tool.poetry]``/``[package]`` name).

A Service or Infrastructure entity is linked to, strongest first:

1. its Compose ``build:`` context (``build_context`` prop, set by :mod:`manifests`);
2. the module folder whose name is one of the entity's names (exactly or after the
   normalisation of :mod:`aliases`), preferring a folder that holds one of the entity's own
   manifests (``src/ledger/balancereader`` for ``src/ledger/balancereader/k8s/base/x.yaml``),
   then the shallowest, then by path.

The link sets the entity's ``path`` prop (``<folder>/``); path-based ownership rules then apply
to the folder. An entity with no folder is owned through the file that deploys it. A folder is
only linked when it holds a build file or a ``README.md`` (files the history path filter
watches, so a replay that skips commits touching nothing read yields the same links).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import tomllib
from collections.abc import Iterable

from substrate.connectors.aliases import Entity, NameIndex, normalise
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.yamlnodes import compose_all, get, items, scalar

BUILD_FILES = (
    "Dockerfile", "pom.xml", "build.gradle", "build.gradle.kts", "package.json", "go.mod",
    "pyproject.toml", "setup.py", "Cargo.toml", "Gemfile", "mix.exs",
)  # fmt: skip
WORKSPACE_FILES = ("package.json", "pnpm-workspace.yaml", "go.work", "pom.xml", "Cargo.toml",
                   "pyproject.toml")
_DECLARES = ("package.json", "pom.xml", "go.mod", "pyproject.toml", "Cargo.toml")
_SKIP = ("node_modules/", "vendor/", "third_party/", ".github/")
_ARTIFACT = re.compile(r"<artifactId>\s*([^<\s]+)\s*</artifactId>")
_PARENT = re.compile(r"<parent>.*?</parent>", re.S)
_MODULE = re.compile(r"<module>\s*([^<\s]+)\s*</module>")
_GO_MODULE = re.compile(r"^module\s+(\S+)", re.M)
_GO_USE = re.compile(r"^\s*(?:use\s+)?(\.{1,2}/[^\s)]*|\.)\s*$", re.M)


def is_layout_path(path: str) -> bool:
    """Files whose presence or content decides the links or what a linked folder says (its
    build files, its ``README.md``), for the history path filter."""
    name = posixpath.basename(path)
    return (name in BUILD_FILES or name in WORKSPACE_FILES or name.startswith("Dockerfile")
            or name.endswith(".csproj") or (name == "README.md" and "/" in path))


def _is_build_file(name: str) -> bool:
    return name in BUILD_FILES or name.startswith("Dockerfile.") or name.endswith(".csproj")


def _join(folder: str, member: str) -> str:
    path = posixpath.normpath(posixpath.join(folder, member.strip().rstrip("/")))
    return "" if path == "." else path


def _toml(text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _dig(data: object, *keys: str) -> object:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _package_json(text: str) -> tuple[str | None, list[str]]:
    try:
        data = json.loads(text)
    except ValueError:
        return None, []
    if not isinstance(data, dict):
        return None, []
    name = data.get("name")
    spaces = data.get("workspaces")
    members = _strings(spaces.get("packages") if isinstance(spaces, dict) else spaces)
    return (name.rsplit("/", 1)[-1] if isinstance(name, str) else None), members


def declared(path: str, text: str) -> tuple[str | None, list[str]]:
    """``(declared name, workspace member patterns)`` of one build or workspace file."""
    name = posixpath.basename(path)
    if name == "package.json":
        return _package_json(text)
    if name == "pom.xml":
        artifact = _ARTIFACT.search(_PARENT.sub("", text))
        return (artifact.group(1) if artifact else None), _MODULE.findall(text)
    if name == "go.mod":
        module = _GO_MODULE.search(text)
        parts = module.group(1).split("/") if module else []
        parts = parts[:-1] if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]) else parts
        return (parts[-1] if parts else None), []
    if name == "go.work":
        return None, [m for m in _GO_USE.findall(text) if m != "."]
    if name == "pnpm-workspace.yaml":
        docs = compose_all(text)
        return None, [scalar(n) or "" for n in items(get(docs[0], "packages"))] if docs else []
    data = _toml(text) if name in ("pyproject.toml", "Cargo.toml") else {}
    found = _dig(data, "project", "name") or _dig(data, "tool", "poetry", "name")
    found = found or _dig(data, "package", "name")
    members = _strings(_dig(data, "workspace", "members"))
    members += _strings(_dig(data, "tool", "uv", "workspace", "members"))
    return (found if isinstance(found, str) else None), members


def _expand(pattern: str, folders: set[str]) -> list[str]:
    if not any(c in pattern for c in "*?["):
        return [pattern] if pattern in folders else []
    return sorted(f for f in folders if fnmatch.fnmatchcase(f, pattern))


class ModuleFolders:
    """The module folders of a snapshot and the names each one answers to."""

    def __init__(self, snap: GitSnapshot) -> None:
        files = [p for p in snap.files() if not p.startswith(_SKIP) and "/node_modules/" not in p]
        self.names: dict[str, set[str]] = {}
        folders = {posixpath.dirname(p) for p in files} - {""}
        readable = [p for p in files if posixpath.basename(p) in (*_DECLARES, *WORKSPACE_FILES)]
        snap.preload(readable)
        for path in files:
            if _is_build_file(posixpath.basename(path)):
                self.add(posixpath.dirname(path))
        for path in readable:
            name, members = declared(path, snap.read(path))
            folder = posixpath.dirname(path)
            if name and folder:
                self.add(folder, name)
            for pattern in members:
                for member in _expand(_join(folder, pattern), folders):
                    self.add(member)

    def add(self, folder: str, name: str | None = None) -> None:
        if not folder:
            return
        keys = self.names.setdefault(folder, {normalise(posixpath.basename(folder))})
        if name:
            keys.add(normalise(name))

    def matching(self, names: Iterable[str]) -> list[str]:
        keys = {normalise(n) for n in names} - {""}
        return sorted(f for f, own in self.names.items() if own & keys)


def _rank(folder: str, manifests: list[str]) -> tuple[int, int, str]:
    holds = any(m.startswith(folder + "/") for m in manifests)
    return (0 if holds else 1, folder.count("/"), folder)


def source_folder(entity: Entity, modules: ModuleFolders) -> str | None:
    """The folder holding ``entity``'s source (see the module docstring), or None."""
    context = entity.props.get("build_context")
    if isinstance(context, str) and context:
        return context
    manifests = [m for m in entity.props.get("manifests", []) if isinstance(m, str)]
    found = modules.matching([entity.name, *entity.aliases])
    return min(found, key=lambda f: _rank(f, manifests)) if found else None


def link_sources(snap: GitSnapshot, index: NameIndex, known: dict[str, str]) -> dict[str, str]:
    """``ceid -> folder`` for every entity not in ``known`` whose source folder is found;
    sets each linked entity's ``path`` prop."""
    modules = ModuleFolders(snap)
    linked: dict[str, str] = {}
    for entity in index.sorted_entities():
        if entity.ceid in known or entity.label not in ("Service", "Infrastructure"):
            continue
        folder = source_folder(entity, modules)
        if folder is not None and any(p.startswith(folder + "/") and is_layout_path(p)
                                      for p in snap.files()):
            entity.props["path"] = folder + "/"
            linked[entity.ceid] = folder
    return linked


def deploying_file(entity: Entity) -> str | None:
    """The shallowest file that deploys ``entity`` (ownership when it has no folder)."""
    manifests = [m for m in entity.props.get("manifests", []) if isinstance(m, str)]
    return min(manifests, key=lambda m: (m.count("/"), m), default=None)
