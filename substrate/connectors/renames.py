"""Renamed entities keep one identity across a history replay (issue 9).

When a commit renames the file that declares an entity and the entity's name changes with it
(bank-of-anthos, 2019-12-27: ``kubernetes-manifests/mongodb-users.yaml`` ->
``accounts-db.yaml``, ``infra:mongodb-users`` -> ``infra:accounts-db``), the replay would
otherwise close one entity and open an unrelated one. :func:`detect` finds such pairs: git
reports the file rename (``git diff -M``), an entity of the previous parsed commit whose
provenance names the old path is gone, and exactly one new entity of the same label whose
provenance names the new path (or the old one) appears. The replay then keeps the old entity
live through that commit and merges it into the new one (:mod:`substrate.graph.merge`): an
``ALIAS_OF`` edge old -> new whose evidence is the new file's line that states the new name,
the old name in the new entity's ``aliases`` (look-ups by the old name reach it), the old
entity's other live edges moved over. Its history before the rename stays on the old node.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from substrate.connectors.gitcmd import run_git
from substrate.graph.records import GraphBatch, NodeRecord

# entities whose identity a rename carries (documents and chunks are re-read by path)
RENAMEABLE = frozenset({"Service", "Infrastructure", "Module", "DecisionNode", "FailurePattern",
                        "Team"})


@dataclass(frozen=True)
class Rename:
    old: NodeRecord
    new: NodeRecord
    from_path: str
    to_path: str
    evidence_ref: str  # the line of the renamed file (at the renaming commit) naming the new
    kind: str = "file moved"  # or "same image": renamed in place, image unchanged
    link_only: bool = False  # the old entity still lives elsewhere: RENAMED_TO, no merge


def renamed_paths(repo: Path, before: str, after: str) -> dict[str, str]:
    """``old path -> new path`` of the files git sees renamed between two commits."""
    out = run_git(repo, "diff", "-M", "--name-status", "-z", "--diff-filter=R", before, after)
    parts = out.decode("utf-8", "replace").split("\0")
    moved: dict[str, str] = {}
    i = 0
    while i + 2 < len(parts):
        if parts[i].startswith("R"):
            moved[parts[i + 1]] = parts[i + 2]
        i += 3
    return moved


def find(repo: Path, before: str, previous: GraphBatch, after: str,
         current: GraphBatch) -> list[Rename]:
    """:func:`detect` for two parsed commits (git is asked only when an entity vanished and
    another appeared), then :func:`redeclared`."""
    now = {n.ceid for n in current.nodes if n.label in RENAMEABLE}
    then = {n.ceid for n in previous.nodes if n.label in RENAMEABLE}
    moved = detect(previous, current, renamed_paths(repo, before, after)) \
        if then - now and now - then else []
    return [*moved, *redeclared(previous, current, {m.new.ceid for m in moved})]


def _paths(node: NodeRecord) -> set[str]:
    return {ref.split("#L", 1)[0] for ref in node.provenance if "#L" in ref}


def _ref_in(node: NodeRecord, path: str) -> str | None:
    return next((r for r in node.provenance if r.split("#L", 1)[0] == path), None)


def detect(previous: GraphBatch, current: GraphBatch, moved: dict[str, str]) -> list[Rename]:
    """The renames a commit made (see the module doc); unambiguous pairs only."""
    if not moved:
        return []
    now = {n.ceid for n in current.nodes}
    before = {n.ceid for n in previous.nodes}
    gone = [n for n in previous.nodes if n.ceid not in now and n.label in RENAMEABLE]
    new = [n for n in current.nodes if n.ceid not in before and n.label in RENAMEABLE]
    found: list[Rename] = []
    for old_path, new_path in sorted(moved.items()):
        olds = [n for n in gone if old_path in _paths(n)]
        news = [n for n in new if _paths(n) & {new_path, old_path}]
        if len(olds) != 1:
            continue
        news = [n for n in news if n.label == olds[0].label]
        if len(news) != 1:
            continue
        ref = _ref_in(news[0], new_path) or news[0].provenance[0]
        found.append(Rename(olds[0], news[0], old_path, new_path, ref))
    return found


def _image(node: NodeRecord) -> str | None:
    image = node.props.get("image")
    return image if isinstance(image, str) and image else None


def redeclared(previous: GraphBatch, current: GraphBatch, taken: set[str]) -> list[Rename]:
    """Renames in place (see the module doc): an entity (not in ``taken``) newly declared in a
    file that, in the previous commit, declared exactly one entity of the same label and
    image which that file no longer declares, and no other entity pairs with it. An entity
    another file declared before (a Helm chart's ``orders-rabbitmq`` before a manifest bundle
    renamed its ``rabbitmq`` to it) is linked, not merged."""
    now = {n.ceid: n for n in current.nodes if n.label in RENAMEABLE}
    then = {n.ceid: n for n in previous.nodes if n.label in RENAMEABLE}
    pairs: list[tuple[NodeRecord, NodeRecord, str]] = []
    for new in (n for c, n in now.items() if c not in taken and _image(n)):
        before = _paths(then[new.ceid]) if new.ceid in then else set()
        for path in sorted(_paths(new) - before):
            olds = [o for o in then.values() if o.label == new.label
                    and _image(o) == _image(new) and path in _paths(o)
                    and (o.ceid not in now or path not in _paths(now[o.ceid]))]
            if len(olds) == 1:
                pairs.append((olds[0], new, path))
    found: list[Rename] = []
    for old, new, path in pairs:
        if sum(o.ceid == old.ceid for o, _, _ in pairs) != 1 \
                or sum(n.ceid == new.ceid for _, n, _ in pairs) != 1:
            continue  # ambiguous: not a rename
        ref = _ref_in(new, path) or new.provenance[0]
        found.append(Rename(old, new, path, path, ref, kind="same image",
                            link_only=old.ceid in now or new.ceid in then))
    return found
