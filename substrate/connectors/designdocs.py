"""Design documents and service READMEs.

* ``*.md``/``*.markdown``/``*.txt`` under ``docs/design(s)``, ``docs/rfc(s)``,
  ``docs/architecture`` (not its ``decisions``), ``design``, ``rfcs`` → ``Document`` nodes
  (ceid ``doc:<slug of the path>``; props ``name`` (first heading or file name), ``path``,
  ``text``) with ``MENTIONS`` to the services they name. Chunking happens elsewhere.
* The first paragraph of a service folder's ``README.md`` (``services/<name>``, or the folder
  :mod:`layout` links; not under ``docs/``) becomes the service's ``description``, and a
  ``Language: ...`` line its ``language``, each with its line in ``attribute_refs``.
"""

from __future__ import annotations

import posixpath
import re
from functools import partial

from substrate.connectors.adr import is_adr_path
from substrate.connectors.aliases import Entity, NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.layout import is_readme_path
from substrate.connectors.markdown import (
    first_paragraph_lines,
    paragraph_text,
    parse_markdown,
    title,
)
from substrate.connectors.mentions import find_mentions, mention_edges
from substrate.connectors.readme_tables import describe_language, state_attribute
from substrate.graph.records import GraphBatch, NodeRecord, ceid

DESIGN_DIRS = (
    "docs/design", "docs/designs", "docs/rfc", "docs/rfcs", "docs/architecture", "design",
    "rfcs", "docs/design-docs", "design-docs", "docs/proposals", "proposals",
)  # fmt: skip
_EXTENSIONS = (".md", ".markdown", ".txt")


def is_design_path(path: str) -> bool:
    if not path.lower().endswith(_EXTENSIONS) or is_adr_path(path):
        return False
    directory = posixpath.dirname(path)
    return any(directory == d or directory.startswith(d + "/") for d in DESIGN_DIRS)


def design_batch(snap: GitSnapshot, index: NameIndex) -> GraphBatch:
    """Document nodes for design documents, with MENTIONS edges to services."""
    paths = [p for p in snap.files() if is_design_path(p)]
    snap.preload(paths)
    batch = GraphBatch()
    for path in paths:
        text = snap.read(path)
        doc = parse_markdown(text)
        head = title(doc.body)
        name, line = head if head else (posixpath.basename(path), 1)
        cid = ceid("doc", path)
        props = {"name": name, "path": path, "text": text}
        batch.nodes.append(NodeRecord(cid, "Document", props, (snap.ref(path, line),)))

        def ref_of(no: int, path: str = path) -> str:
            return snap.ref(path, no)

        mentions = find_mentions(doc.body, index)
        batch.edges.extend(mention_edges("MENTIONS", cid, mentions, index, ref_of))
    return batch


# a first paragraph that tells how to build or run the code, or a list, not what the service
# is ("Run the following command to restore dependencies to `vendor/` directory:")
_INSTRUCTIONS = re.compile(r"^(?:run|install|build|execute|clone|compile|start|to\s+(?:build|run"
                           r"|install|start|test|deploy)|use\s+the\s+following)\b|^[-*+]\s",
                           re.I)
_LAST_SENTENCE = re.compile(r"(?<=[.!?])\s+[^.!?]*:$")


# a paragraph of badges, images or links only ("![Docker Pulls](...)", "[![CI](...)](...)",
# "Adyen documentation for common workflow: https://..."): it says nothing of what the code is
_MEDIA = re.compile(r"!?\[[^\][]*\]\([^)]*\)|<img\b[^>]*>|https?://\S+")
_SUBHEADING = re.compile(r"^\s*#{2,6}\s")


def opening_lines(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The README's first paragraph that says something: one of badges, images or links
    (or a short line leading to a link) is passed over, up to the first second-level heading
    (past it, a paragraph belongs to a section, not to the whole)."""
    rest = body
    while rest:
        lines = first_paragraph_lines(rest)
        if not lines:
            return []
        start = lines[0][0]
        if any(_SUBHEADING.match(t) for no, t in rest if no < start) and rest is not body:
            return []  # a section began before it
        raw = paragraph_text(lines)
        said = raw
        for _ in range(3):  # a badge inside a link: "[![CI](.../ci.svg)](.../ci)"
            said = _MEDIA.sub(" ", said)
        said = " ".join(said.split()).strip(" |-*")
        if said and not (_MEDIA.search(raw) and len(said) < 60 and said.endswith(":")):
            return lines  # (passed over: badges only, or "Docs for X: <link>")
        rest = [(no, t) for no, t in rest if no > lines[-1][0]]
    return []


def _describing(paragraph: str) -> str:
    """The part of a README's first paragraph that says what the service is: none for
    instructions or a list; without its last sentence when that one introduces what follows
    ("... as a log message. It expects a JSON payload like:")."""
    if _INSTRUCTIONS.search(paragraph):
        return ""
    if paragraph.endswith(":"):
        return _LAST_SENTENCE.sub("", paragraph) if _LAST_SENTENCE.search(paragraph) else ""
    return paragraph


def describe_services(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]) -> None:
    """Set ``description`` (and ``readme``) of each service from its folder's README (unless
    its first paragraph is build or run instructions)."""
    readmes = {cid: f"{d}/README.md" for cid, d in dirs.items() if is_readme_path(f"{d}/README.md")}
    snap.preload(p for p in readmes.values() if snap.exists(p))
    for cid, path in sorted(readmes.items()):
        if snap.exists(path):
            describe_from_readme(snap, index.get(cid), path)


def describe_modules(snap: GitSnapshot, modules: list[NodeRecord]) -> None:
    """Set ``description`` (and ``readme``) of each module (a folder with a build file that no
    service claims: an internal tool, a lambda, a library) from its folder's README, as
    :func:`describe_services` does for a service."""
    for node in modules:
        folder = str(node.props.get("path") or "").strip("/")
        path = f"{folder}/README.md"
        if node.label == "Module" and folder and is_readme_path(path) and snap.exists(path):
            describe_from_readme(snap, node, path)


def describe_from_readme(snap: GitSnapshot, holder: Entity | NodeRecord, path: str) -> None:
    """``holder``'s description from the first paragraph of the README at ``path`` and its
    language from a ``Language:`` field there."""
    doc = parse_markdown(snap.read(path))
    lines = opening_lines(doc.body)
    description = _describing(paragraph_text(lines))
    if description:
        state_attribute(holder, "description", description, snap.ref(path, lines[0][0]))
        holder.props["readme"] = path
    describe_language(holder, doc.body, partial(snap.ref, path))
