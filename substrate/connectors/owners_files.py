"""Ownership files other than CODEOWNERS → OWNS / PRIMARY_OWNER edges.

``OWNERS`` files (any folder), inherited from the root down to the service's folder; a file
that says ``set noparent`` (Chromium) or ``options: {no_parent_owners: true}`` (Kubernetes)
stops the inheritance:

* Kubernetes style, YAML: ``approvers:`` (owners), ``reviewers:`` (not owners), ``filters:``
  (only the ``.*`` filter covers a whole folder); names listed in the root
  ``OWNERS_ALIASES`` (``aliases: {name: [members]}``) are Teams with ``MEMBER_OF`` edges.
* Chromium style, one owner per line (e-mail or user), ``#`` comments, ``set noparent``,
  ``file://path`` (that file's owners), ``per-file`` lines (they name files, not the folder:
  skipped), ``*`` (anyone: no owner).

YAML maps of component → owners (``owners.yaml``/``.yml``, ``OWNERS.yaml``,
``MAINTAINERS.yaml``, ``maintainers.yml``, ``ownership.yaml``, ``codeowners.yaml``, in any
folder): ``{component: [people]}``, ``{component: person}``, ``{components: [{name, owners}]}``
and ``{services: {name: {owners, team}}}`` (``component``/``service``/``owners``/
``maintainers``/``team``/``teams`` keys alike). A key holding ``/`` is a path: it owns the
services whose folder lies under it. Owners: ``@org/team`` → Team, ``@user`` or an e-mail →
Developer, ``group:x``/``team:x`` → Team, ``user:x`` → Developer, a bare word → Team under a
``team``/``teams`` key, else Developer.

The nearest ``OWNERS`` file and the map give ``PRIMARY_OWNER`` (their first owner). Every edge's
evidence is the line naming the owner.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from substrate.connectors.aliases import NORMALISED, NameIndex
from substrate.connectors.codeowners import Owner, parse_owner
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.yamlnodes import compose_all, get, items, line_of, pairs, scalar
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

OWNER_MAPS = ("owners.yaml", "owners.yml", "maintainers.yaml", "maintainers.yml",
              "ownership.yaml", "ownership.yml", "codeowners.yaml", "codeowners.yml")
_ENTRY_KEYS = ("name", "component", "service", "id")
_OWNER_KEYS = ("owners", "owner", "maintainers", "maintainer", "team", "teams", "approvers",
               "people")
_TEAM_KEYS = ("team", "teams")
_LIST_KEYS = ("components", "services", "owners", "ownership", "maintainers", "entries")
_NOPARENT = re.compile(r"^\s*set\s+noparent\s*$")


def is_owners_path(path: str) -> bool:
    name = posixpath.basename(path)
    return name in ("OWNERS", "OWNERS_ALIASES") or name.lower() in OWNER_MAPS


@dataclass(frozen=True)
class Named:
    """An owner and the line naming it."""

    owner: Owner
    path: str
    line: int


def owner_token(token: str, team: bool = False) -> Owner | None:
    """An owner from a token of an ownership file (see the module docstring)."""
    token = token.strip().strip(",")
    kind, sep, rest = token.partition(":")
    if sep and kind.lower() in ("group", "team", "user") and rest and "//" not in rest:
        name = rest.rsplit("/", 1)[-1]
        return (Owner("Developer", ceid("dev", name), name, token) if kind.lower() == "user"
                else Owner("Team", ceid("team", name), name, token))
    found = parse_owner(token)
    if found is not None or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", token):
        return found
    label, prefix = ("Team", "team") if team else ("Developer", "dev")
    return Owner(label, ceid(prefix, token), token, token)


# --- OWNERS files -----------------------------------------------------------------------


@dataclass
class OwnersFile:
    path: str
    owners: list[Named]
    noparent: bool


def _k8s_owners(doc: Node, path: str, aliases: set[str]) -> OwnersFile:
    nodes = items(get(doc, "approvers"))
    for key, value in pairs(get(doc, "filters")):
        if key.value in (".*", "*"):
            nodes += items(get(value, "approvers"))
    found: list[Named] = []
    for node in nodes:
        text = scalar(node)
        owner = owner_token(text, team=text in aliases) if text else None
        if owner is not None:
            found.append(Named(owner, path, line_of(node)))
    no_parent = scalar(get(get(doc, "options"), "no_parent_owners")) in ("true", "True")
    return OwnersFile(path, found, no_parent)


def _chromium_owners(snap: GitSnapshot, text: str, path: str, depth: int = 0) -> OwnersFile:
    out = OwnersFile(path, [], False)
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("per-file") or line == "*":
            continue
        if _NOPARENT.match(line):
            out.noparent = True
        elif line.startswith(("file://", "include ")) and depth < 3:
            target = line.split("file://", 1)[-1].split()[-1].lstrip("/")
            if snap.exists(target):
                out.owners += _chromium_owners(snap, snap.read(target), target, depth + 1).owners
        elif " " not in line and "=" not in line:
            owner = owner_token(line)
            if owner is not None:
                out.owners.append(Named(owner, path, no))
    return out


def read_owners_file(snap: GitSnapshot, path: str, aliases: set[str]) -> OwnersFile:
    text = snap.read(path)
    docs = compose_all(text)
    if docs and isinstance(docs[0], MappingNode) and any(
        k.value in ("approvers", "reviewers", "options", "filters") for k, _ in pairs(docs[0])
    ):
        return _k8s_owners(docs[0], path, aliases)
    return _chromium_owners(snap, text, path)


def alias_teams(snap: GitSnapshot) -> tuple[set[str], GraphBatch]:
    """Team names of the root ``OWNERS_ALIASES`` and their MEMBER_OF edges."""
    batch = GraphBatch()
    if not snap.exists("OWNERS_ALIASES"):
        return set(), batch
    docs = compose_all(snap.read("OWNERS_ALIASES"))
    names: set[str] = set()
    for key, members in pairs(get(docs[0], "aliases") if docs else None):
        team = Owner("Team", ceid("team", key.value), key.value, key.value)
        names.add(key.value)
        ref = snap.ref("OWNERS_ALIASES", line_of(key))
        batch.nodes.append(NodeRecord(team.ceid, "Team", team.node().props, (ref,)))
        for node in items(members):
            person = owner_token(scalar(node) or "")
            if person is not None and person.label == "Developer":
                member_ref = snap.ref("OWNERS_ALIASES", line_of(node))
                batch.nodes.append(NodeRecord(person.ceid, "Developer", person.node().props,
                                              (member_ref,)))
                batch.edges.append(EdgeRecord("MEMBER_OF", person.ceid, team.ceid, member_ref,
                                              source="git", props={"via": "OWNERS_ALIASES"}))
    return names, batch


def _ancestors(path: str) -> Iterator[str]:
    """``a/b/c`` → ``a/b/c``, ``a/b``, ``a``, ``""``."""
    while True:
        yield path
        if not path:
            return
        path = posixpath.dirname(path)


def folder_owners(files: dict[str, OwnersFile], folder: str) -> list[OwnersFile]:
    """The OWNERS files that apply to ``folder``, nearest first, up to a ``noparent``."""
    out: list[OwnersFile] = []
    for directory in _ancestors(folder):
        found = files.get(posixpath.join(directory, "OWNERS") if directory else "OWNERS")
        if found is not None:
            out.append(found)
            if found.noparent:
                break
    return out


# --- component -> owners maps -----------------------------------------------------------


@dataclass(frozen=True)
class MapEntry:
    key: str  # a component name, or a path
    owners: tuple[Named, ...]


def _owner_nodes(node: Node | None, team: bool) -> Iterator[tuple[ScalarNode, bool]]:
    if isinstance(node, ScalarNode):
        yield node, team
    elif isinstance(node, SequenceNode):
        for item in node.value:
            yield from _owner_nodes(item, team)
    elif isinstance(node, MappingNode):
        for key, value in pairs(node):
            if key.value in _OWNER_KEYS:
                yield from _owner_nodes(value, key.value in _TEAM_KEYS)


def _entry(key: str, value: Node, path: str) -> MapEntry:
    found: list[Named] = []
    for node, team in _owner_nodes(value, False):
        for token in str(node.value).replace(",", " ").split():
            owner = owner_token(token, team)
            if owner is not None:
                found.append(Named(owner, path, line_of(node)))
    return MapEntry(key, tuple(found))


def parse_owner_map(text: str, path: str) -> list[MapEntry]:
    """Every component → owners entry of a YAML ownership map (see the module docstring)."""
    docs = compose_all(text)
    out: list[MapEntry] = []
    for key, value in pairs(docs[0] if docs else None):
        if key.value in _LIST_KEYS and isinstance(value, SequenceNode):
            for item in value.value:
                name = next((scalar(get(item, k)) for k in _ENTRY_KEYS if scalar(get(item, k))),
                            None)
                if name:
                    out.append(_entry(name, item, path))
        elif key.value in _LIST_KEYS and isinstance(value, MappingNode):
            out.extend(_entry(str(k.value), v, path) for k, v in pairs(value))
        else:
            out.append(_entry(str(key.value), value, path))
    return [e for e in out if e.owners]


# --- edges ------------------------------------------------------------------------------


def _edges(snap: GitSnapshot, service: str, named: list[Named], via: str) -> GraphBatch:
    batch = GraphBatch()
    for i, item in enumerate(named):
        ref = snap.ref(item.path, item.line)
        owner = item.owner
        batch.nodes.append(NodeRecord(owner.ceid, owner.label, owner.node().props, (ref,)))
        props = {"handle": owner.handle, "via": via}
        batch.edges.append(EdgeRecord("OWNS", owner.ceid, service, ref, source="git", props=props))
        if i == 0:
            batch.edges.append(
                EdgeRecord("PRIMARY_OWNER", owner.ceid, service, ref, source="git", props=props)
            )
    return batch


def owners_files_batch(snap: GitSnapshot, service_paths: dict[str, str]) -> GraphBatch:
    """OWNS / PRIMARY_OWNER from ``OWNERS`` files (``ceid -> folder or deploying file``)."""
    paths = [p for p in snap.files() if posixpath.basename(p) == "OWNERS"]
    if not paths:
        return GraphBatch()
    snap.preload(paths)
    aliases, batch = alias_teams(snap)
    files = {p: read_owners_file(snap, p, aliases) for p in paths}
    for service, owned in sorted(service_paths.items()):
        folder = posixpath.dirname(owned) if snap.exists(owned) else owned
        applying = folder_owners(files, folder)
        named = [n for f in applying for n in f.owners]
        unique = list({n.owner.ceid: n for n in reversed(named)}.values())[::-1]
        batch.extend(_edges(snap, service, unique, "OWNERS"))
    return batch


def _map_targets(key: str, index: NameIndex, service_paths: dict[str, str]) -> list[str]:
    if "/" in key:
        prefix = key.strip("/")
        return sorted(c for c, p in service_paths.items() if p == prefix or
                      p.startswith(prefix + "/"))
    res = index.resolve(key, fuzzy=False)
    return [res.ceid] if res.ceid is not None and res.confidence >= NORMALISED else []


def owner_maps_batch(
    snap: GitSnapshot, index: NameIndex, service_paths: dict[str, str]
) -> GraphBatch:
    """OWNS / PRIMARY_OWNER from YAML component → owners maps."""
    paths = [p for p in snap.files() if posixpath.basename(p).lower() in OWNER_MAPS]
    snap.preload(paths)
    batch = GraphBatch()
    for path in paths:
        for entry in parse_owner_map(snap.read(path), path):
            for service in _map_targets(entry.key, index, service_paths):
                batch.extend(_edges(snap, service, list(entry.owners), "owners-map"))
    return batch
