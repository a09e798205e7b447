"""Where each service's source lives: deployed entities linked to the folders of the tree.

A *module folder* is a folder (not the root) that holds a build file (``Dockerfile*``,
``pom.xml``, ``build.gradle(.kts)``, ``package.json``, ``go.mod``, ``pyproject.toml``,
``setup.py``, ``Cargo.toml``, ``*.csproj``, ``Gemfile``, ``mix.exs``): every member of a
workspace (``package.json`` ``workspaces``, ``go.work``, Maven ``<modules>``, Cargo or uv
workspaces) is one, by the build file its tool requires. Only the *presence* of build files is
used, never their content, so a history replay need not parse the commits that only bump a
dependency (see :mod:`path_filter`). A folder answers to its name.

A Service or Infrastructure entity is linked to, strongest first:

1. the folder of its Compose ``build:`` Dockerfile when that sits below the context
   (``context: src``, ``dockerfile: Services/Basket/Dockerfile``: ``dockerfile`` prop), else
   the context itself (``build_context`` prop; both set by :mod:`manifests`);
2. the module folder whose name is one of the entity's names (exactly or after the
   normalisation of :mod:`aliases`), preferring a folder that holds one of the entity's own
   manifests or charts (``src/ledger/balancereader`` for
   ``src/ledger/balancereader/k8s/base/x.yaml``), then the shallowest, then by path.

A Helm chart (a folder with ``Chart.yaml``) whose ``name`` or folder (``charts/<name>``,
``<name>/chart``) is one of the entity's names is kept in the entity's ``charts`` prop (its
``templates/`` are never read as manifests, see :mod:`k8s`).

The link sets the entity's ``path`` prop (``<folder>/``) when the folder holds a build file;
path-based ownership rules then apply to the folder. An entity with no folder is owned through
the file that deploys it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from substrate.connectors.aliases import Entity, NameIndex, normalise
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.manifests import union
from substrate.connectors.yamlnodes import compose_all, get, line_of, scalar

BUILD_FILES = (
    "Dockerfile", "pom.xml", "build.gradle", "build.gradle.kts", "package.json", "go.mod",
    "pyproject.toml", "setup.py", "Cargo.toml", "Gemfile", "mix.exs",
)  # fmt: skip
_CHART_DIRS = ("chart", "charts", "helm", "deploy", "deployment")
_SKIP = ("node_modules/", "vendor/", "third_party/", ".github/")


def is_build_path(path: str) -> bool:
    """A build file: its presence (not its content) decides the links."""
    return _is_build_file(posixpath.basename(path))


_NOT_SOURCE = ("docs", "doc", ".github", ".gitlab")


def is_readme_path(path: str) -> bool:
    """A folder's ``README.md`` (not under documentation or CI folders): its content describes
    a linked service."""
    parts = path.split("/")
    return parts[-1] == "README.md" and len(parts) > 1 and not set(parts[:-1]) & set(_NOT_SOURCE)


def is_layout_path(path: str) -> bool:
    """Files whose presence or content decides the links or what a linked folder says."""
    return is_build_path(path) or is_readme_path(path)


def _is_build_file(name: str) -> bool:
    return name in BUILD_FILES or name.startswith("Dockerfile") or name.endswith(".csproj")


def _chart_folder(chart: str) -> str:
    """The name a chart's folder gives it: ``src/cart/chart`` → ``cart``, ``charts/cart``."""
    base = posixpath.basename(chart)
    return posixpath.basename(posixpath.dirname(chart)) if base in _CHART_DIRS else base


# a project's inner source folder: "src/cartservice/src" (Online Boutique's .NET service)
# is cartservice's, named by its parent
GENERIC_LEAVES = frozenset({"src", "source", "sources", "code", "app"})


def module_name(folder: str) -> str:
    """What a module folder is called: its own name, or its parent's when its own is a
    generic source folder below one ("src/cartservice/src" -> "cartservice"; a top-level
    "src" stays "src")."""
    name, parent = posixpath.basename(folder), posixpath.dirname(folder)
    return posixpath.basename(parent) if name.lower() in GENERIC_LEAVES and parent else name


class ModuleFolders:
    """The module folders of a snapshot and the names each one answers to."""

    def __init__(self, snap: GitSnapshot) -> None:
        files = [p for p in snap.files() if not p.startswith(_SKIP) and "/node_modules/" not in p]
        self.names: dict[str, set[str]] = {}
        for path in files:
            if _is_build_file(posixpath.basename(path)) and posixpath.dirname(path):
                folder = posixpath.dirname(path)
                self.names[folder] = {normalise(posixpath.basename(folder)),
                                      normalise(module_name(folder))}
        for folder, rest in _without_shared_prefix(self.names).items():
            self.names[folder].add(normalise(rest))
        self.charts: dict[str, list[str]] = {}
        self.chart_lines: dict[str, int] = {}  # chart folder -> the line of its name
        charts = [p for p in files if posixpath.basename(p) == "Chart.yaml"]
        snap.preload(charts)
        for path in charts:
            docs = compose_all(snap.read(path))
            chart = posixpath.dirname(path)
            named = get(docs[0], "name") if docs else None
            self.chart_lines[chart] = line_of(named) if named is not None else 1
            for name in {scalar(named), _chart_folder(chart)}:
                if name:
                    self.charts.setdefault(normalise(name), []).append(chart)

    def charts_of(self, names: Iterable[str]) -> list[str]:
        return sorted({c for n in names for c in self.charts.get(normalise(n), [])})

    def matching(self, names: Iterable[str]) -> list[str]:
        keys = {normalise(n) for n in names} - {""}
        return sorted(f for f, own in self.names.items() if own & keys)


_TOKEN = re.compile(r"[-_.]")


def _without_shared_prefix(folders: Iterable[str]) -> dict[str, str]:
    """``folder -> its name without the project prefix`` for module folders of one parent
    whose names begin with the same words (Maven's ``spring-petclinic-customers-service``,
    ``spring-petclinic-api-gateway``, ...; a ``docker`` folder beside them aside): the service
    is ``customers-service``. Three such folders at least, so that two names sharing a word by
    chance are not cut."""
    by_first: dict[tuple[str, str], list[str]] = {}  # (parent, first word) -> folders
    for folder in folders:
        first = _TOKEN.split(posixpath.basename(folder))[0].lower()
        by_first.setdefault((posixpath.dirname(folder), first), []).append(folder)
    out: dict[str, str] = {}
    for group in by_first.values():
        if len(group) < 3:
            continue
        words = [_TOKEN.split(posixpath.basename(f)) for f in group]
        shared = 0
        while all(len(w) > shared + 1 for w in words) \
                and len({w[shared].lower() for w in words}) == 1:
            shared += 1
        if shared:
            out.update({f: "-".join(w[shared:]) for f, w in zip(group, words, strict=True)})
    return out


def _rank(folder: str, manifests: list[str]) -> tuple[int, int, str]:
    holds = any(m.startswith(folder + "/") for m in manifests)
    return (0 if holds else 1, folder.count("/"), folder)


def source_folder(entity: Entity, modules: ModuleFolders) -> str | None:
    """The folder holding ``entity``'s source (see the module docstring), or None."""
    dockerfile = entity.props.get("dockerfile")  # built from a shared context: its own folder
    if isinstance(dockerfile, str) and dockerfile:
        return posixpath.dirname(dockerfile)
    context = entity.props.get("build_context")
    if isinstance(context, str) and context:
        return context
    manifests = [m for m in entity.props.get("manifests", []) if isinstance(m, str)]
    manifests += [f"{c}/Chart.yaml" for c in modules.charts_of([entity.name, *entity.aliases])]
    found = modules.matching([entity.name, *entity.aliases])
    return min(found, key=lambda f: _rank(f, manifests)) if found else None


def link_sources(snap: GitSnapshot, index: NameIndex, known: dict[str, str]) -> dict[str, str]:
    """``ceid -> folder`` for every entity not in ``known`` whose source folder is found;
    sets each linked entity's ``path`` prop."""
    modules = ModuleFolders(snap)
    linked: dict[str, str] = {}
    for entity in index.sorted_entities():
        if entity.label not in ("Service", "Infrastructure"):
            continue
        charts = modules.charts_of([entity.name, *entity.aliases])
        if charts:
            entity.props["charts"] = charts
            # where each chart names itself ("how is cart deployed?" cites it)
            union(entity.props, "attribute_refs", [
                f"chart|{c}|{snap.ref(f'{c}/Chart.yaml', modules.chart_lines[c])}"
                for c in charts])
        if entity.ceid in known:
            continue
        context = entity.props.get("build_context")  # when the Dockerfile named is not there
        for folder in (source_folder(entity, modules), context if context else None):
            if folder is not None and any(p.startswith(folder + "/") and is_build_path(p)
                                          for p in snap.files()):
                entity.props["path"] = folder + "/"
                linked[entity.ceid] = folder
                break
    return linked


def deploying_file(entity: Entity) -> str | None:
    """The shallowest file that deploys ``entity`` (ownership when it has no folder)."""
    manifests = [m for m in entity.props.get("manifests", []) if isinstance(m, str)]
    return min(manifests, key=lambda m: (m.count("/"), m), default=None)
