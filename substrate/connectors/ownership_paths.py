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
  ``name`` is the folder's name, its evidence the first line of its README or non-empty
  ``__init__.py``, else the line of the CODEOWNERS rule covering it (a folder with none of
  these is left out: evidence only comes from files a history replay watches).

Each module is ``PART_OF`` the repository and is owned like a service (:func:`gitrepo.ownership`
runs every ownership convention over it): CODEOWNERS rules (catch-all included, last match
wins, per GitLab section), ``OWNERS`` files, component maps with path keys. The presence of
build files and the content of ``__init__.py`` files count (see :mod:`path_filter`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from substrate.connectors.codeowners import Rule, find_codeowners, parse_codeowners, winning_rules
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.layout import ModuleFolders, module_name
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


def _proof(snap: GitSnapshot, folder: str, rules: list[Rule], rules_path: str | None,
           ) -> str | None:
    """The line proving a module folder, from files a history replay watches (so a replay that
    skips commits yields the same ref): its README's first line, else its non-empty
    ``__init__.py``'s, else the line of the ownership rule covering it; None: no such line."""
    for path in (f"{folder}/README.md", f"{folder}/{PACKAGE_MARKER}"):
        if snap.exists(path):
            lines = snap.read(path).splitlines()
            first = next((i for i, line in enumerate(lines, start=1) if line.strip()), None)
            if first is not None:
                return snap.ref(path, first)
    won = winning_rules(rules, folder)
    if won and rules_path is not None:
        return snap.ref(rules_path, won[-1].line)
    return None


def _rule_modules(snap: GitSnapshot, rules: list[Rule], rules_path: str | None) -> list[Module]:
    out = []
    for rule in rules:
        named = rule_path(rule.pattern)
        if named is not None and rules_path is not None:
            kind = "file" if snap.exists(named) else "folder"
            out.append(Module(named, rule.pattern, kind, "CODEOWNERS",
                              snap.ref(rules_path, rule.line)))
    return out


def _folder_modules(snap: GitSnapshot, rules: list[Rule], rules_path: str | None,
                    ) -> list[Module]:
    files = snap.files()
    out = [Module(posixpath.dirname(p), posixpath.basename(posixpath.dirname(p)), "folder",
                  "OWNERS", snap.ref(p, 1))
           for p in files if posixpath.basename(p) == "OWNERS" and "/" in p]
    builds = {f for f in ModuleFolders(snap).names if not _skipped(f)}
    found = [(f, "build file") for f in sorted(builds)]
    found += [(f, "python package") for f in sorted(package_roots(files) - builds)]
    for folder, via in found:
        ref = _proof(snap, folder, rules, rules_path)
        if ref is not None:
            out.append(Module(folder, module_name(folder), "folder", via, ref))
    return out


def module_batch(snap: GitSnapshot, service_dirs: dict[str, str], repository: str,
                 ) -> tuple[GraphBatch, dict[str, str]]:
    """Module nodes (see the module docstring), each ``PART_OF`` ``repository``, and
    ``ceid -> path`` of each, for ownership. Folders that are a service's are left out."""
    claimed = {d.strip("/") for d in service_dirs.values()}
    batch = GraphBatch()
    paths: dict[str, str] = {}
    rules_path = find_codeowners(snap)
    rules = parse_codeowners(snap.read(rules_path)) if rules_path is not None else []
    found = [*_rule_modules(snap, rules, rules_path), *_folder_modules(snap, rules, rules_path)]
    for module in found:
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
