"""Design documents, prose documentation and READMEs.

* ``*.md``/``*.markdown``/``*.txt`` under ``docs/design(s)``, ``docs/rfc(s)``,
  ``docs/architecture`` (not its ``decisions``), ``design``, ``rfcs`` → ``Document`` nodes
  (ceid ``doc:<slug of the path>``; props ``name`` (first heading or file name), ``path``,
  ``text``, ``kind`` ``design``) with ``MENTIONS`` to the services they name. Chunking
  happens elsewhere.
* The same for the prose around them (:func:`prose_paths`): the root README and the READMEs
  of folders that are not a service's or a module's (``kind`` ``readme``), and every other
  Markdown page under a top-level ``docs/``, ``doc/`` or ``documentation/`` folder (``kind``
  ``doc``); not ADRs, post-mortems, changelogs, licences and the like, nor vendored trees.
* The root README's first paragraph becomes the Repository's ``description``.
* The first paragraph of a service folder's ``README.md`` (``services/<name>``, or the folder
  :mod:`layout` links; not under ``docs/``) becomes the service's ``description``, and a
  ``Language: ...`` line its ``language``, each with its line in ``attribute_refs``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from functools import partial

from substrate.connectors.adr import is_adr_folder, is_adr_path
from substrate.connectors.aliases import Entity, NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.layout import is_readme_path
from substrate.connectors.markdown import (
    first_paragraph_lines,
    inline_text,
    paragraph_text,
    parse_markdown,
    project_title,
    title,
)
from substrate.connectors.mentions import find_mentions, mention_edges
from substrate.connectors.postmortem import is_postmortem_path
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


DOC_DIRS = ("docs", "doc", "documentation")  # top-level folders of prose documentation
README_NAMES = ("readme.md", "readme.markdown")
_VENDORED = frozenset({"node_modules", "vendor", "third_party", ".github", "site-packages",
                       "fixtures", "testdata"})  # and test data
# not prose about the system: release notes, legal and community files, templates to fill in
# ("docs/adr/template.md", "pull_request_template.md")
# no answer to a question about the code (a security policy says how to report a
# vulnerability, a contributing guide how to run the tests: both are read)
_BOILERPLATE = re.compile(r"^(?:changelog|changes|license|code_of_conduct"
                          r"|(?:[\w-]*[-_])?template)\.", re.I)
MAX_PROSE_DOCS = 200  # per repository, the shallowest first
MAX_PROSE_CHARS = 200_000


def is_prose_path(path: str) -> bool:
    """A README (any folder) or a Markdown page under a top-level documentation folder that
    no other connector reads as a document of its own (design doc, ADR, post-mortem); not a
    changelog, licence or the like, nor anything in a vendored or generated tree."""
    parts = path.split("/")
    name = parts[-1].lower()
    if not name.endswith((".md", ".markdown")) or _BOILERPLATE.match(name) \
            or not _VENDORED.isdisjoint(parts[:-1]):
        return False
    if is_design_path(path) or is_adr_path(path) or is_postmortem_path(path) \
            or is_adr_folder(posixpath.dirname(path)):  # a decision log's index: the records
        return False  # themselves answer, not a table of their titles and statuses
    return name in README_NAMES or (len(parts) > 1 and parts[0].lower() in DOC_DIRS)


def prose_kind(path: str) -> str:
    """``doc`` for a page of the documentation folder, else ``readme``."""
    return "doc" if "/" in path and path.split("/", 1)[0].lower() in DOC_DIRS else "readme"


def prose_paths(snap: GitSnapshot) -> list[str]:
    """The prose pages that become Documents (:func:`is_prose_path`), shallowest first, at
    most :data:`MAX_PROSE_DOCS`."""
    found = [p for p in snap.files() if is_prose_path(p)]
    return sorted(found, key=lambda p: (p.count("/"), p))[:MAX_PROSE_DOCS]


def folder_readmes(paths: Iterable[str], folders: Iterable[str]) -> set[str]:
    """The READMEs among ``paths`` of a service's or module's folder (``folders``), which
    :func:`describe_services` and :func:`describe_modules` also read: their Documents are
    named by their path, not their title ("# cart" is the service's name; a question naming
    cart means the service)."""
    claimed = {f.strip("/") for f in folders} - {"", "."}
    return {p for p in paths if posixpath.dirname(p) in claimed
            and posixpath.basename(p).lower() in README_NAMES
            and is_readme_path(f"{posixpath.dirname(p)}/README.md")}


def design_batch(snap: GitSnapshot, index: NameIndex, folders: Iterable[str] = (),
                 prose: bool = True) -> GraphBatch:
    """Document nodes for design documents and, with ``prose``, prose pages
    (:func:`prose_paths`; ``folders``: those of services and modules), with MENTIONS edges
    to services."""
    kinds = {p: "design" for p in snap.files() if is_design_path(p)}
    if prose:
        kinds.update((p, prose_kind(p)) for p in prose_paths(snap))
    by_path = folder_readmes(kinds, folders)
    snap.preload(kinds)
    batch = GraphBatch()
    for path, kind in kinds.items():
        text = snap.read(path)
        if kind == "design" or len(text) <= MAX_PROSE_CHARS:
            batch.extend(_document(snap, index, path, text, kind, path in by_path))
    return batch


def _document(snap: GitSnapshot, index: NameIndex, path: str, text: str,
              kind: str, by_path: bool = False) -> GraphBatch:
    doc = parse_markdown(text)
    head = title(doc.body)
    base = posixpath.basename(path)
    fallback = path if kind != "design" and base.lower() in README_NAMES else base
    name, line = head if head else (fallback, 1)
    name = path if by_path else name
    cid = ceid("doc", path)
    props = {"name": name, "path": path, "text": text, "kind": kind}
    batch = GraphBatch(nodes=[NodeRecord(cid, "Document", props, (snap.ref(path, line),))])

    def ref_of(no: int) -> str:
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
# (a bare URL stops before a ")": that of a badge's link, "[![CI](...)](https://ci.example)");
# nor does HTML: comments, an HTML heading, layout tags ('<div align="center">')
_MEDIA = re.compile(r"!?\[[^\][]*\]\([^)]*\)|https?://[^\s)]+|<!--.*?-->"
                    r"|<h[1-6]\b[^>]*>.*?</h[1-6]\s*>|</?[a-z][\w-]*\b[^<>]*>", re.I)
_SUBHEADING = re.compile(r"^\s*#{2,6}\s")
_A_WORD = re.compile(r"[A-Za-z]{3,}")


def opening_lines(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The README's first paragraph that says something: one of badges, images or links
    (or a short line leading to a link), a blockquote (a notice), or a table ("| Language |
    Persistence |": read by :mod:`readme_tables`) is passed over, up to the first
    second-level heading (past it, a paragraph belongs to a section, not to the whole)."""
    rest = body
    while rest:
        lines = first_paragraph_lines(rest)
        if not lines:
            return []
        start = lines[0][0]
        if any(_SUBHEADING.match(t) for no, t in rest if no < start) and rest is not body:
            return []  # a section began before it
        raw = " ".join(" ".join(t for _, t in lines).split())  # whole: a cut badge is none
        said = raw
        for _ in range(3):  # a badge inside a link: "[![CI](.../ci.svg)](.../ci)"
            said = _MEDIA.sub(" ", said)
        said = " ".join(said.split()).strip(" |-*")
        # a table says no sentence; a blockquote opening the page is a notice ("> **ATTENTION:
        # Log4j advisory**"), not what the code is
        aside = all(t.lstrip().startswith("|") for _, t in lines) \
            or all(t.lstrip().startswith(">") for _, t in lines)
        # something said is a word at least: a run of badges cut at the paragraph's length
        # leaves "[ ](" (rubyforgood/casa's eleven badges)
        if _A_WORD.search(said) and not aside \
                and not (_MEDIA.search(raw) and len(said) < 60 and said.endswith(":")):
            return lines  # (passed over: badges only, a table, or "Docs for X: <link>")
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
    _describe_opening(snap, holder, path, doc.body)
    describe_language(holder, doc.body, partial(snap.ref, path))


def root_readme(snap: GitSnapshot) -> str | None:
    """The repository's own README (``README.md``, ``readme.md``, ``README.markdown``...)."""
    return next((p for p in snap.files() if "/" not in p and p.lower() in README_NAMES), None)


def describe_repository(snap: GitSnapshot, node: NodeRecord) -> None:
    """The Repository's description from its root README's first paragraph, as a service's
    from its folder's README (with its line in ``attribute_refs``)."""
    path = root_readme(snap)
    if path is None:
        return
    body = parse_markdown(snap.read(path)).body
    _describe_opening(snap, node, path, body)
    named = project_title(body)  # "Sock Shop : A Microservice Demo Application"
    subject = described_subject(str(node.props.get("description") or ""))
    aliases = [*(project_names(named[0]) if named is not None else []),
               *([subject] if subject else [])]
    if aliases:
        node.props["aliases"] = list(dict.fromkeys(aliases))


# how a project's title goes on after its name: "Sock Shop : A Microservice Demo Application",
# "Bank of Anthos - a sample bank", "Foo — the fast bar"
_TITLE_TAIL = re.compile(r"\s+[:\-–—|]\s+|:\s+")


# what a README's first sentence says the project is: "CASA (Court Appointed Special
# Advocate) is a role ...", "**Online Boutique** is a cloud-native ...", not "The application
# is ..." nor "This repository contains ..."
_SUBJECT = re.compile(r"^\W*(?!(?:the|this|it|these|we|our|a|an)\b)([A-Z][\w.&'-]*(?:\s+(?:of|for|"
                      r"and|&|[A-Z][\w.&'-]*)){0,4})\W*(?:\s*\([^)]{1,80}\))?\s+(?:is|are)\s",
                      re.I)


def described_subject(description: str) -> str | None:
    """The name a README's opening sentence gives its subject, or None."""
    found = _SUBJECT.match(inline_text(description))
    name = found.group(1).strip() if found else ""
    return name if 2 <= len(name) <= 60 and name[0].isupper() else None


def project_names(title: str) -> list[str]:
    """What a root README's title calls the project: the title (its inline markup read), and
    the part before a tagline when it has one."""
    whole = inline_text(title).strip()
    short = _TITLE_TAIL.split(whole, maxsplit=1)[0].strip()
    return list(dict.fromkeys(n for n in (whole, short) if len(n) >= 2))


def _describe_opening(snap: GitSnapshot, holder: Entity | NodeRecord, path: str,
                      body: list[tuple[int, str]]) -> None:
    lines = opening_lines(body)
    description = _describing(paragraph_text(lines))
    if description:
        state_attribute(holder, "description", description, snap.ref(path, lines[0][0]))
        holder.props["readme"] = path
