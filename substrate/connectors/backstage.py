"""Backstage catalog descriptors (``catalog-info.yaml``, multi-document) → entities and edges.

Files: ``catalog-info*.yaml``/``.yml`` and ``*.backstage.yaml`` anywhere; every document whose
``apiVersion`` starts with ``backstage.io/``. Kinds:

* ``Component`` (type ``service``/``website``/none; not ``library``/``documentation``) →
  ``Service`` named ``metadata.name`` (resolved by alias like any manifest name), with
  ``description``, ``lifecycle``, ``component_type``, ``system`` (``spec.system``) props. Its
  source folder is the ``backstage.io/source-location`` annotation's path when it names one
  inside the repository, else the descriptor's folder (not the root).
* ``Resource`` → ``Infrastructure`` (``kind`` from ``spec.type``: database, cache, queue, ...).
* ``Group`` → ``Team`` (``spec.members`` → ``MEMBER_OF``); ``User`` → ``Developer``.
* ``spec.owner`` (``group:default/x``, ``user:y``, a bare name = a Group) → ``OWNS`` and
  ``PRIMARY_OWNER``; ``spec.dependsOn`` (``component:x``, ``resource:y``) → ``DEPENDS_ON``;
  ``spec.consumesApis`` → ``CALLS`` to the components whose ``spec.providesApis`` lists the API.

Evidence is the line of the value (``spec.owner: ...``, the ``dependsOn`` item, ...).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from yaml.nodes import Node

from substrate.connectors.aliases import Entity, NameIndex
from substrate.connectors.codeowners import Owner
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.layout import is_build_path
from substrate.connectors.owners_files import owner_token
from substrate.connectors.yamlnodes import (
    Fact,
    compose_all,
    fact,
    get,
    items,
    line_of,
    path_get,
    scalar,
)
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord

_SKIP_TYPES = ("library", "documentation", "template")
_RESOURCE_KINDS = {"database": "database", "db": "database", "cache": "cache",
                   "queue": "queue", "topic": "queue", "s3-bucket": "storage",
                   "bucket": "storage", "storage": "storage", "search": "search"}
_TREE = re.compile(r"/(?:tree|blob)/[^/]+/(.+?)/?$")


def is_catalog_path(path: str) -> bool:
    name = posixpath.basename(path)
    return (name.startswith("catalog-info") and name.endswith((".yaml", ".yml"))) or \
        name.endswith((".backstage.yaml", ".backstage.yml"))


@dataclass
class _Doc:
    kind: str
    name: Fact
    doc: Node
    path: str
    entity: Entity | None = None


@dataclass
class CatalogReader:
    snap: GitSnapshot
    index: NameIndex
    batch: GraphBatch = field(default_factory=GraphBatch)
    folders: dict[str, str] = field(default_factory=dict)

    def ref(self, found: Fact) -> str:
        return self.snap.ref(found.path, found.line)

    def read(self) -> tuple[GraphBatch, dict[str, str]]:
        paths = [p for p in self.snap.files() if is_catalog_path(p)]
        self.snap.preload(paths)
        docs = [d for p in paths for d in self.documents(p)]
        for doc in docs:
            self.register(doc)
        apis = self.providers(docs)
        for doc in docs:
            if doc.entity is not None:
                self.relations(doc, apis)
        return self.batch, self.folders

    def documents(self, path: str) -> list[_Doc]:
        out: list[_Doc] = []
        for node in compose_all(self.snap.read(path)):
            api, kind = scalar(get(node, "apiVersion")) or "", scalar(get(node, "kind")) or ""
            name = fact(path_get(node, "metadata", "name"), path)
            if api.startswith("backstage.io/") and name is not None:
                out.append(_Doc(kind, name, node, path))
        return out

    def register(self, doc: _Doc) -> None:
        spec_type = scalar(path_get(doc.doc, "spec", "type")) or ""
        if doc.kind == "Component" and spec_type not in _SKIP_TYPES:
            doc.entity = self.index.register("Service", doc.name.value, self.ref(doc.name))
            self.describe(doc, spec_type)
            folder = self.folder(doc)
            if folder:
                doc.entity.props["path"] = folder + "/"
                self.folders[doc.entity.ceid] = folder
        elif doc.kind == "Resource":
            doc.entity = self.index.register("Infrastructure", doc.name.value, self.ref(doc.name))
            doc.entity.props.setdefault("kind", _RESOURCE_KINDS.get(spec_type, spec_type or
                                                                    "unknown"))
        elif doc.kind in ("Group", "User"):
            self.people(doc)

    def describe(self, doc: _Doc, spec_type: str) -> None:
        assert doc.entity is not None
        props = doc.entity.props
        for key, node in (("description", path_get(doc.doc, "metadata", "description")),
                          ("lifecycle", path_get(doc.doc, "spec", "lifecycle")),
                          ("system", path_get(doc.doc, "spec", "system"))):
            if scalar(node):
                props.setdefault(key, scalar(node))
        if spec_type:
            props.setdefault("component_type", spec_type)
        props["catalog"] = doc.path

    def folder(self, doc: _Doc) -> str | None:
        location = scalar(path_get(doc.doc, "metadata", "annotations",
                                   "backstage.io/source-location")) or ""
        match = _TREE.search(location)
        candidates = [match.group(1)] if match else []
        if location.startswith("url:./") or location.startswith("dir:"):
            relative = location.split(":", 1)[1]
            candidates.append(posixpath.normpath(posixpath.join(posixpath.dirname(doc.path),
                                                                relative)))
        files = self.snap.files()
        for folder in candidates:  # a folder holding a file the history path filter watches
            if folder not in ("", ".") and any(p.startswith(folder + "/") and is_build_path(p)
                                               for p in files):
                return folder
        own = posixpath.dirname(doc.path)
        return own if own not in ("", ".") else None

    def people(self, doc: _Doc) -> None:
        label = "Team" if doc.kind == "Group" else "Developer"
        token = ("group:" if label == "Team" else "user:") + doc.name.value
        owner = owner_token(token)
        if owner is None:
            return
        self.batch.nodes.append(NodeRecord(owner.ceid, label, owner.node().props,
                                           (self.ref(doc.name),)))
        for node in items(path_get(doc.doc, "spec", "members")):
            member = owner_token("user:" + (scalar(node) or "").split(":")[-1])
            if member is not None and scalar(node):
                ref = self.snap.ref(doc.path, line_of(node))
                self.batch.nodes.append(NodeRecord(member.ceid, "Developer",
                                                   member.node().props, (ref,)))
                self.batch.edges.append(EdgeRecord("MEMBER_OF", member.ceid, owner.ceid, ref,
                                                   source="git", props={"via": "catalog-info"}))

    def providers(self, docs: list[_Doc]) -> dict[str, list[str]]:
        apis: dict[str, list[str]] = {}
        for doc in docs:
            for node in items(path_get(doc.doc, "spec", "providesApis")):
                if doc.entity is not None and scalar(node):
                    apis.setdefault(_short(str(scalar(node))), []).append(doc.entity.ceid)
        return apis

    def relations(self, doc: _Doc, apis: dict[str, list[str]]) -> None:
        assert doc.entity is not None
        src = doc.entity.ceid
        owner_fact = fact(path_get(doc.doc, "spec", "owner"), doc.path)
        owner = owner_token(_owner_ref(owner_fact.value)) if owner_fact else None
        if owner is not None and owner_fact is not None:
            self.owner_edges(owner, src, owner_fact)
        for node in items(path_get(doc.doc, "spec", "dependsOn")):
            found = fact(node, doc.path)
            dst = self.resolve(found.value) if found else None
            if found is not None and dst and dst != src:
                self.edge("DEPENDS_ON", src, dst, found, {"via": "catalog-info"})
        for node in items(path_get(doc.doc, "spec", "consumesApis")):
            found = fact(node, doc.path)
            for dst in apis.get(_short(found.value), []) if found else []:
                if found is not None and dst != src:
                    self.edge("CALLS", src, dst, found, {"via": "catalog-info",
                                                         "api": _short(found.value)})

    def owner_edges(self, owner: Owner, service: str, found: Fact) -> None:
        ref = self.ref(found)
        self.batch.nodes.append(NodeRecord(owner.ceid, owner.label, owner.node().props, (ref,)))
        props = {"handle": owner.handle, "via": "catalog-info"}
        for kind in ("OWNS", "PRIMARY_OWNER"):
            self.batch.edges.append(EdgeRecord(kind, owner.ceid, service, ref, source="git",
                                               props=props))

    def resolve(self, target: str) -> str | None:
        res = self.index.resolve(_short(target), fuzzy=False)
        return res.ceid if res.ceid is not None and res.confidence >= 0.95 else None

    def edge(self, kind: str, src: str, dst: str, found: Fact, props: dict[str, str]) -> None:
        self.batch.edges.append(EdgeRecord(kind, src, dst, self.ref(found), source="git",
                                           props=props))


def _short(ref: str) -> str:
    """``component:default/cart`` → ``cart``."""
    return ref.split(":", 1)[-1].rsplit("/", 1)[-1]


def _owner_ref(ref: str) -> str:
    """An owner reference as an owner token (a bare name is a Group)."""
    kind, sep, _ = ref.partition(":")
    return ref if sep and kind.lower() in ("group", "user") else f"group:{ref}"


def catalog_batch(snap: GitSnapshot, index: NameIndex) -> tuple[GraphBatch, dict[str, str]]:
    """Entities registered in ``index``; returns the edges and ``ceid -> source folder``."""
    return CatalogReader(snap, index).read()
