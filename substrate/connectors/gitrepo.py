"""A git repository at one commit → one :class:`GraphBatch` (every parser combined).

``batch_at(repo, commit)`` reads the commit without checking it out and returns:

* ``Repository`` ``repo:<owner-name>`` (name from ``remote.origin.url``, else the folder);
* a ``Service`` per ``services/<name>/`` (also ``apps/<name>/``) folder, ``PART_OF`` the
  repository, plus every Service/Infrastructure of the deployment manifests, all merged by
  alias (see :mod:`~substrate.connectors.aliases`), with ``aliases``/``alias_evidence`` props;
* edges from :mod:`manifests`, :mod:`codeowners`, :mod:`adr`, :mod:`postmortem` and
  :mod:`designdocs`.

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
from pathlib import Path
from typing import Any

from substrate.connectors.adr import adr_batch
from substrate.connectors.aliases import Entity, NameIndex
from substrate.connectors.codeowners import codeowners_batch
from substrate.connectors.designdocs import describe_services, design_batch
from substrate.connectors.gitsource import GitError, GitSnapshot, run_git
from substrate.connectors.manifests import manifest_batch
from substrate.connectors.postmortem import postmortem_batch
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

SERVICE_ROOTS = ("services", "apps")
DEFAULT_THRESHOLD = 0.92


def repo_name(repo: Path) -> str:
    """``owner/name`` from ``remote.origin.url`` when set, else the checkout's folder name."""
    try:
        url = run_git(repo, "config", "--get", "remote.origin.url").decode().strip()
    except GitError:
        url = ""
    if not url:
        return Path(repo).resolve().name
    path = url.rstrip("/").removesuffix(".git").replace(":", "/")
    return "/".join(path.split("/")[-2:])


def service_folders(files: tuple[str, ...]) -> dict[str, str]:
    """``name -> services/<name>`` for every folder directly under a service root."""
    found: dict[str, str] = {}
    for path in files:
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] in SERVICE_ROOTS:
            found.setdefault(parts[1], f"{parts[0]}/{parts[1]}")
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


def _unique_edges(edges: list[EdgeRecord]) -> list[EdgeRecord]:
    chosen: dict[str, EdgeRecord] = {}
    refs: dict[str, list[str]] = {}
    for edge in sorted(edges, key=lambda e: -e.confidence):  # stable: file order within ties
        refs.setdefault(edge.eid, [])
        if edge.evidence_ref not in refs[edge.eid]:
            refs[edge.eid].append(edge.evidence_ref)
        chosen.setdefault(edge.eid, edge)
    out: list[EdgeRecord] = []
    for edge in edges:
        if chosen.get(edge.eid) is edge:
            extra = {"evidence_refs": refs[edge.eid]} if len(refs[edge.eid]) > 1 else {}
            out.append(dataclasses.replace(edge, props={**edge.props, **extra}))
    return out


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


def _repository(snap: GitSnapshot, dirs: dict[str, str]) -> GraphBatch:
    name = repo_name(snap.repo)
    rid = ceid("repo", name)
    node = NodeRecord(rid, "Repository", {"name": name}, (f"git:{name}",))
    batch = GraphBatch(nodes=[node])
    for cid, folder in sorted(dirs.items()):
        readme = posixpath.join(folder, "README.md")
        proof = readme if snap.exists(readme) else _first_file(snap, folder)
        ref = snap.ref(proof, 1)
        batch.edges.append(EdgeRecord("PART_OF", cid, rid, ref, source="git"))
    return batch


def batch_at(
    repo_path: Path | str, commit: str = "HEAD", threshold: float = DEFAULT_THRESHOLD
) -> GraphBatch:
    """Everything the repository says at ``commit`` (see the module docstring)."""
    snap = GitSnapshot(Path(repo_path), commit)
    index = NameIndex()
    dirs = register_folders(snap, index)
    batch = GraphBatch()
    batch.extend(manifest_batch(snap, index))
    describe_services(snap, index, dirs)
    batch.extend(codeowners_batch(snap, dirs))
    batch.extend(adr_batch(snap, index))
    batch.extend(postmortem_batch(snap, index))
    batch.extend(design_batch(snap, index))
    batch.extend(_repository(snap, dirs))
    entities = index.sorted_entities()
    batch.nodes[:0] = [entity_node(e) for e in entities]
    hold = frozenset(e.ceid for e in entities if e.pending_reason)
    return finalize(batch, threshold, hold)
