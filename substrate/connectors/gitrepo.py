"""A git repository at one commit → one :class:`GraphBatch` (every parser combined).

``batch_at(repo, commit)`` reads the commit without checking it out and returns:

* ``Repository`` ``repo:<owner-name>`` (name from ``remote.origin.url``, else the folder);
* a ``Service`` per ``services/<name>/`` (also ``apps/<name>/``) folder, plus every
  Service/Infrastructure of the deployment manifests (Compose, Kubernetes, Cloud Foundry, .NET
  Aspire app hosts) and Backstage descriptors, all merged by
  alias (see :mod:`~substrate.connectors.aliases`), with ``aliases``/``alias_evidence`` props;
  each linked to its source folder wherever it is (:mod:`layout`), which is ``PART_OF`` the
  repository and decides path-based ownership;
* a ``Module`` per path an ownership rule names and per module folder no service claims
  (:mod:`ownership_paths`), owned by the same conventions as services;
* edges from :mod:`manifests`, :mod:`backstage`, :mod:`codeowners`, :mod:`owners_files`,
  :mod:`adr`, :mod:`postmortem` and :mod:`designdocs`. Several ownership sources may name
  owners (all get ``OWNS``); ``PRIMARY_OWNER`` comes from the most specific one that names any:
  catalog descriptor, then ownership map, then CODEOWNERS, then OWNERS files.

Every evidence ref is ``path#L<line>@<commit>`` of the line that proves the fact, named by
the commit that wrote it (see :class:`~substrate.connectors.gitsource.GitSnapshot`). Edges are
unique per ``src-[type]->dst``: the most confident (then first) keeps its evidence, and when
several lines prove it all refs, the kept one first, are in ``props["evidence_refs"]``.
Entities whose name is ambiguous or only fuzzily matched, and edges below the verification
threshold or touching such an entity, go to ``pending`` with a ``reason`` prop instead of
``nodes``/``edges``.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from pathlib import Path
from typing import Any

from substrate.connectors.adr import adr_batch
from substrate.connectors.aliases import Entity, NameIndex
from substrate.connectors.aspire import add_aspire
from substrate.connectors.backstage import catalog_batch
from substrate.connectors.cloudfoundry import add_cloudfoundry
from substrate.connectors.code_comments import comments_batch
from substrate.connectors.codeowners import codeowners_batch
from substrate.connectors.data_clients import (
    infer_data_clients,
    registry_batch,
    service_declarations,
)
from substrate.connectors.designdocs import (
    describe_modules,
    describe_repository,
    describe_services,
    design_batch,
)
from substrate.connectors.endpoints import is_probe
from substrate.connectors.gitsource import GitError, GitSnapshot, run_git
from substrate.connectors.languages import (
    describe_module_languages,
    infer_languages,
    infer_versions,
    root_built,
)
from substrate.connectors.layout import deploying_file, link_sources
from substrate.connectors.manifests import app_config_batch, manifest_batch
from substrate.connectors.messages import infer_messages
from substrate.connectors.owners_files import owner_maps_batch, owners_files_batch
from substrate.connectors.ownership_paths import module_batch
from substrate.connectors.postmortem import postmortem_batch
from substrate.connectors.readme_tables import describe_from_tables
from substrate.connectors.source_calls import VIA as SOURCE_VIA
from substrate.connectors.terraform import add_terraform
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

SERVICE_ROOTS = ("services", "apps")
DEFAULT_THRESHOLD = 0.92
OWNER_PRECEDENCE = ("catalog-info", "owners-map", "CODEOWNERS", "OWNERS")


_NAMES: dict[tuple[str, int, int, int], str] = {}  # (repo, its config file's stat) -> name


def repo_name(repo: Path) -> str:
    """``owner/name`` from ``remote.origin.url`` when set, else the checkout's folder name
    (kept while the checkout's ``.git/config`` file stays the same)."""
    try:
        stat = (Path(repo) / ".git" / "config").stat()
    except OSError:
        return _repo_name(repo)
    key = (str(Path(repo).resolve()), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    if key not in _NAMES:
        _NAMES[key] = _repo_name(repo)
    return _NAMES[key]


def _repo_name(repo: Path) -> str:
    try:
        url = run_git(repo, "config", "--get", "remote.origin.url").decode().strip()
    except GitError:
        url = ""
    if not url:
        return Path(repo).resolve().name
    path = url.rstrip("/").removesuffix(".git").replace(":", "/")
    return "/".join(path.split("/")[-2:])


_PACKAGE_NAME = re.compile(r"^[a-z][a-z0-9]*(?:\.[a-z][a-z0-9]*){2,}$")


def folder_service_name(folder: str) -> str:
    """The service a folder under a service root stands for: its name, or the last part of a
    Java-style package name (TeaStore's ``services/tools.descartes.teastore.webui`` is webui)."""
    return folder.rsplit(".", 1)[-1] if _PACKAGE_NAME.match(folder) else folder


def service_folders(files: tuple[str, ...]) -> dict[str, str]:
    """``name -> services/<folder>`` for every folder directly under a service root."""
    found: dict[str, str] = {}
    for path in files:
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] in SERVICE_ROOTS:
            found.setdefault(folder_service_name(parts[1]), f"{parts[0]}/{parts[1]}")
    return found


def _first_file(snap: GitSnapshot, folder: str) -> str:
    return next(p for p in snap.files() if p.startswith(folder + "/"))


def register_folders(snap: GitSnapshot, index: NameIndex) -> dict[str, str]:
    """A canonical Service per service folder; returns ``ceid -> folder``."""
    dirs: dict[str, str] = {}
    for name, folder in sorted(service_folders(snap.files()).items()):
        readme = f"{folder}/README.md"
        proof = readme if snap.exists(readme) else _first_file(snap, folder)
        entity = index.create("Service", name, snap.ref(proof, 1))
        entity.props["path"] = folder + "/"
        dirs[entity.ceid] = folder
    return dirs


def entity_node(entity: Entity) -> NodeRecord:
    props: dict[str, Any] = {"name": entity.name, **entity.props}
    if entity.aliases:
        props["aliases"] = sorted(entity.aliases)
        props["alias_evidence"] = [
            f"{alias}={ref}" for alias in sorted(entity.aliases) for ref in entity.aliases[alias]
        ]
    if entity.label == "Infrastructure":
        props.setdefault("kind", "unknown")
    if entity.pending_reason:
        props["reason"] = entity.pending_reason
    return NodeRecord(entity.ceid, entity.label, props, tuple(entity.provenance))


def _merge_nodes(nodes: list[NodeRecord]) -> list[NodeRecord]:
    merged: dict[str, NodeRecord] = {}
    for node in nodes:
        old = merged.get(node.ceid)
        if old is None:
            merged[node.ceid] = node
            continue
        props = {**node.props, **old.props}
        provenance = tuple(dict.fromkeys(old.provenance + node.provenance))
        confidence = min(old.confidence, node.confidence)
        merged[node.ceid] = dataclasses.replace(
            old, props=props, provenance=provenance, confidence=confidence
        )
    return list(merged.values())


ADDRESS_PROPS = ("address", "host", "port")


def _unique_edges(edges: list[EdgeRecord]) -> list[EdgeRecord]:
    """One edge per ``eid``: the most confident (then one whose address is not a health check
    or probe URL: ``urls__basket=http://basket-api`` before ``BasketUrlHC=http://basket-api/hc``;
    then first); every proving ref in ``evidence_refs``. When the chosen edge states no address
    and a duplicate does (a ``depends_on`` beside the variable holding the URL), the edge takes
    the duplicate's address and its line becomes the evidence (the line that holds the
    address); an address only the source code names (a default) is not taken."""
    chosen: dict[str, EdgeRecord] = {}
    refs: dict[str, list[str]] = {}
    address: dict[str, EdgeRecord] = {}
    def rank(e: EdgeRecord) -> tuple[float, bool]:  # sorted stably: file order within ties
        return -e.confidence, is_probe(str(e.props.get("address") or ""))

    for edge in sorted(edges, key=rank):
        found = refs.setdefault(edge.eid, [])
        for ref in [edge.evidence_ref, *edge.props.get("evidence_refs", [])]:
            if ref not in found:
                found.append(ref)
        chosen.setdefault(edge.eid, edge)
        if edge.props.get("address") and edge.props.get("via") != SOURCE_VIA:
            address.setdefault(edge.eid, edge)  # a default in the code is not the deployment's
    return [_merged(e, refs[e.eid], address.get(e.eid)) for e in edges if chosen.get(e.eid) is e]


def _merged(edge: EdgeRecord, refs: list[str], with_address: EdgeRecord | None) -> EdgeRecord:
    props = dict(edge.props)
    evidence = edge.evidence_ref
    if with_address is not None and not props.get("address"):
        props.update({k: with_address.props[k] for k in ADDRESS_PROPS if k in with_address.props})
        evidence = with_address.evidence_ref
        refs = [evidence, *(r for r in refs if r != evidence)]
    props.pop("evidence_refs", None)
    if len(refs) > 1:
        props["evidence_refs"] = refs
    return dataclasses.replace(edge, evidence_ref=evidence, props=props)


def _pending_edge(edge: EdgeRecord, reason: str) -> EdgeRecord:
    return dataclasses.replace(edge, props={"reason": reason, **edge.props})


def finalize(
    batch: GraphBatch, threshold: float = DEFAULT_THRESHOLD, hold: frozenset[str] = frozenset()
) -> GraphBatch:
    """Merge nodes, make edges unique and route unverified items to ``pending``.

    ``hold``: ceids that await verification whatever their confidence."""
    out = GraphBatch(pending=list(batch.pending))
    held: set[str] = set()
    for node in _merge_nodes(batch.nodes):
        if node.ceid in hold or node.confidence < threshold:
            held.add(node.ceid)
            out.pending.append(node)
        else:
            out.nodes.append(node)
    for edge in _unique_edges(batch.edges):
        if edge.src in held or edge.dst in held:
            out.pending.append(_pending_edge(edge, "an endpoint awaits verification"))
        elif edge.confidence < threshold:
            out.pending.append(_pending_edge(edge, f"confidence {edge.confidence} < {threshold}"))
        else:
            out.edges.append(edge)
    return out


def _repository(snap: GitSnapshot, dirs: dict[str, str], index: NameIndex,
                described: bool = True) -> GraphBatch:
    """The Repository node (described by its root README's first paragraph); every service
    with a folder is ``PART_OF`` it. A ``services/`` (``apps/``) folder proves it by its
    README (else first file); a folder linked from a manifest or descriptor (see
    :mod:`layout`) by the entity's first evidence, a line of a file the history path filter
    watches."""
    name = repo_name(snap.repo)
    rid = ceid("repo", name)
    node = NodeRecord(rid, "Repository", {"name": name}, (f"git:{name}",))
    if described:
        describe_repository(snap, node)
    batch = GraphBatch(nodes=[node])
    for cid, folder in sorted(dirs.items()):
        if folder.split("/", 1)[0] in SERVICE_ROOTS or not index.get(cid).provenance:
            readme = posixpath.join(folder, "README.md")
            ref = snap.ref(readme if snap.exists(readme) else _first_file(snap, folder), 1)
        else:
            ref = index.get(cid).provenance[0]
        batch.edges.append(EdgeRecord("PART_OF", cid, rid, ref, source="git"))
    return batch


def _primary_by_precedence(batch: GraphBatch) -> GraphBatch:
    """Keep, per service, the PRIMARY_OWNER edges of the first source that names any."""
    def rank(edge: EdgeRecord) -> int:
        via = edge.props.get("via")
        return OWNER_PRECEDENCE.index(via) if via in OWNER_PRECEDENCE else len(OWNER_PRECEDENCE)

    best: dict[str, int] = {}
    for edge in batch.edges:
        if edge.type == "PRIMARY_OWNER":
            best[edge.dst] = min(best.get(edge.dst, rank(edge)), rank(edge))
    batch.edges = [e for e in batch.edges
                   if e.type != "PRIMARY_OWNER" or rank(e) == best[e.dst]]
    return batch


def ownership(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str],
              modules: dict[str, str] | None = None) -> GraphBatch:
    """Owners of every service from every ownership convention: by its folder, or by the file
    deploying it when it has none; and of every module (``ceid -> path``, see
    :mod:`ownership_paths`) by its path."""
    owned = {**(modules or {}), **dirs}
    for entity in index.sorted_entities():
        found = deploying_file(entity)
        if entity.ceid not in owned and found is not None and not entity.pending_reason:
            owned[entity.ceid] = found
    batch = GraphBatch()
    batch.extend(codeowners_batch(snap, owned))
    batch.extend(owners_files_batch(snap, owned))
    batch.extend(owner_maps_batch(snap, index, owned))
    return batch


def batch_at(
    repo_path: Path | str, commit: str = "HEAD", threshold: float = DEFAULT_THRESHOLD,
    prose: bool = True,
) -> GraphBatch:
    """Everything the repository says at ``commit`` (see the module docstring). ``prose``:
    also its prose pages (READMEs and documentation pages as Documents, the root README as
    the Repository's description), which a history replay reads at its last commit only."""
    snap = GitSnapshot(Path(repo_path), commit)
    index = NameIndex()
    dirs = register_folders(snap, index)
    batch = GraphBatch()
    batch.extend(manifest_batch(snap, index, add_cloudfoundry, add_aspire, add_terraform))
    catalog, folders = catalog_batch(snap, index)
    batch.extend(catalog)
    dirs.update({c: f for c, f in folders.items() if c not in dirs})
    dirs.update(link_sources(snap, index, dirs))
    describe_services(snap, index, dirs)
    describe_from_tables(snap, index, dirs)
    built = {**dirs, **root_built(index, dirs)}  # a service built from the root: the root's
    infer_languages(snap, index, built)  # what no README states: build files, Dockerfiles
    infer_versions(snap, index, built)  # the runtime's version: version files, FROM tags
    declarations = service_declarations(snap, index, built)  # each build file read once
    infer_data_clients(snap, index, declarations)  # datastore clients its build declares
    infer_messages(snap, index, built)  # the topics and events its code publishes, consumes
    batch.extend(app_config_batch(snap, index, dirs))
    batch.extend(registry_batch(snap, declarations, frozenset(e.eid for e in batch.edges)))
    modules, module_paths = module_batch(snap, dirs, ceid("repo", repo_name(snap.repo)))
    describe_modules(snap, modules.nodes)  # README first, then build files, as for services
    describe_module_languages(snap, modules.nodes)
    batch.extend(modules)
    batch.extend(ownership(snap, index, dirs, module_paths))
    batch.extend(adr_batch(snap, index))
    batch.extend(postmortem_batch(snap, index))
    batch.extend(design_batch(snap, index, [*dirs.values(), *module_paths.values()], prose))
    if prose:  # the comments that give reasons, beside the code they explain (read as prose)
        batch.extend(comments_batch(snap, index))
    batch.extend(_repository(snap, dirs, index, prose))
    entities = index.sorted_entities()
    batch.nodes[:0] = [entity_node(e) for e in entities]
    hold = frozenset(e.ceid for e in entities if e.pending_reason)
    return finalize(_primary_by_precedence(batch), threshold, hold)
