"""Paths that are not services, as ``Module`` nodes, so path ownership is answerable.

"Who owns the Terraform for production?", "who owns docs/?": ownership rules name paths, and
most paths of a repository are no service. A ``Module`` (``module:<path slug>``, ``path`` prop
without a trailing slash, ``kind`` ``folder`` or ``file``) is made for:

* every path an ownership rule names literally: a CODEOWNERS pattern (GitHub/GitLab) with no
  wildcard but a trailing ``/``, ``/*`` or ``/**`` (``/backend/manifests/``, ``docs/*``,
  ``/.github/workflows/deploy.yml``); its ``name`` is the pattern as written, its evidence the
  rule's line. Catch-all patterns (``*``, ``/**``) name the whole repository: no module;
* every folder holding an ``OWNERS`` file (evidence: its first line);
* every *module folder* no service is linked to: a folder holding a build file (see
  :mod:`layout`) or the top folder of a Python package (``__init__.py`` with none in the
  parent folder; ``src/registrar``, ``backend/audit``), outside tests and vendored code; its
  ``name`` is the folder's name, its evidence the first line of its README, ``__init__.py``,
  build file or first file.

Each module is ``PART_OF`` the repository and is owned like a service (:func:`gitrepo.ownership`
runs every ownership convention over it): CODEOWNERS rules (catch-all included, last match
wins, per GitLab section), ``OWNERS`` files, component maps with path keys. Only presence of
``__init__.py`` and build files counts (see :mod:`path_filter`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from substrate.connectors.codeowners import find_codeowners, parse_codeowners
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.layout import ModuleFolders, is_build_path
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, slug

_WILDCARD = re.compile(r"[*?\[\]]")
_SKIP_PARTS = frozenset({"node_modules", "vendor", "third_party", "tests", "test", "testdata",
                         "fixtures", "__pycache__", "migrations", ".git"})
PACKAGE_MARKER = "__init__.py"
_DEEPER_FILES = 50  # files below a module folder read for a non-empty line, at most


def is_package_marker(path: str) -> bool:
    """A Python package's ``__init__.py``: its presence places a module folder."""
    return posixpath.basename(path) == PACKAGE_MARKER and "/" in path


def module_ceid(path: str) -> str:
    return f"module:{slug(path)}"


def rule_path(pattern: str) -> str | None:
    """The path a CODEOWNERS pattern names literally, None for a wildcard or catch-all one:
    ``/backend/manifests/`` -> ``backend/manifests``, ``docs/*`` -> ``docs``."""
    body = pattern
    for tail in ("/**", "/*"):
        if body.endswith(tail):
            body = body[: -len(tail)]
            break
    body = body.strip("/")
    if not body or _WILDCARD.search(body):
        return None
    return body


def _skipped(folder: str) -> bool:
    return bool(set(folder.split("/")) & _SKIP_PARTS) or folder.startswith(".")


def package_roots(files: Iterable[str]) -> set[str]:
    """Folders holding an ``__init__.py`` whose parent folder holds none."""
    packages = {posixpath.dirname(p) for p in files if is_package_marker(p)}
    return {p for p in packages if posixpath.dirname(p) not in packages and not _skipped(p)}


@dataclass(frozen=True)
class Module:
    path: str
    name: str
    kind: str  # folder | file
    via: str  # CODEOWNERS | OWNERS | build file | python package
    ref: str


def _proof(snap: GitSnapshot, folder: str, first: str) -> str:
    """The first line of a non-empty file of ``folder`` (README, ``__init__.py``, ``first``,
    then any file directly in it): a ref that resolves to a line."""
    direct = [p for p in snap.files() if posixpath.dirname(p) == folder]
    order = [f"{folder}/README.md", f"{folder}/{PACKAGE_MARKER}", first, *direct]
    candidates = [p for p in dict.fromkeys(order) if snap.exists(p)]
    snap.preload(candidates)
    # then files deeper in it (a package whose only direct file is an empty __init__.py):
    # an empty file has no line 1 to cite (issue 9: every ref resolves)
    deeper = [p for p in snap.files() if p.startswith(f"{folder}/") and p not in candidates]
    for path in [*candidates, *deeper[:_DEEPER_FILES]]:
        if snap.read(path).strip():
            return snap.ref(path, next(i for i, line in enumerate(
                snap.read(path).splitlines(), start=1) if line.strip()))
    return snap.ref(first, 1)


def _rule_modules(snap: GitSnapshot) -> list[Module]:
    path = find_codeowners(snap)
    if path is None:
        return []
    out = []
    for rule in parse_codeowners(snap.read(path)):
        named = rule_path(rule.pattern)
        if named is not None:
            kind = "file" if snap.exists(named) else "folder"
            out.append(Module(named, rule.pattern, kind, "CODEOWNERS",
                              snap.ref(path, rule.line)))
    return out


def _folder_modules(snap: GitSnapshot) -> list[Module]:
    files = snap.files()
    out = [Module(posixpath.dirname(p), posixpath.basename(posixpath.dirname(p)), "folder",
                  "OWNERS", snap.ref(p, 1))
           for p in files if posixpath.basename(p) == "OWNERS" and "/" in p]
    builds = {f: next(p for p in files if posixpath.dirname(p) == f and is_build_path(p))
              for f in ModuleFolders(snap).names if not _skipped(f)}
    for folder, build in sorted(builds.items()):
        out.append(Module(folder, posixpath.basename(folder), "folder", "build file",
                          _proof(snap, folder, build)))
    for folder in sorted(package_roots(files) - set(builds)):
        out.append(Module(folder, posixpath.basename(folder), "folder", "python package",
                          _proof(snap, folder, f"{folder}/{PACKAGE_MARKER}")))
    return out


def module_batch(snap: GitSnapshot, service_dirs: dict[str, str], repository: str,
                 ) -> tuple[GraphBatch, dict[str, str]]:
    """Module nodes (see the module docstring), each ``PART_OF`` ``repository``, and
    ``ceid -> path`` of each, for ownership. Folders that are a service's are left out."""
    claimed = {d.strip("/") for d in service_dirs.values()}
    batch = GraphBatch()
    paths: dict[str, str] = {}
    for module in [*_rule_modules(snap), *_folder_modules(snap)]:
        if module.path in claimed:
            continue
        cid = module_ceid(module.path)
        props = {"name": module.name, "path": module.path, "kind": module.kind,
                 "via": module.via}
        batch.nodes.append(NodeRecord(cid, "Module", props, (module.ref,)))
        if cid not in paths:
            paths[cid] = module.path
            batch.edges.append(EdgeRecord("PART_OF", cid, repository, module.ref,
                                          source="git"))
    return batch, paths
