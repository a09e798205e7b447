"""What a repository's README says each service is: the service table of a microservice
repository ("| Service | Language | Description |", each row linking the service's folder),
and the ``Language:`` line of a service folder's own README.

* Tables are read from the top-level ``README.md`` and ``docs/README.md``
  (:data:`TABLE_FILES`), and from a page of their own at the root or in ``docs/``
  (``services.md``, ``service_table.md``, ``service-catalog.md``, ...), with markdown-it-py
  (GitHub's table syntax). A table counts when one header cell names the entries
  (``Service``, ``Microservice``, ``Component``, ``Name``, ...) and another gives a
  ``Description`` (``Purpose``, ``Summary``, ...) or a ``Language``.
* A row names its service by the link in its name cell (``[ledger-writer](/src/ledger/
  ledgerwriter)``: the service whose source folder that is), else by its text, resolved like a
  manifest name (exactly or after normalising: ``balance-reader`` -> balancereader), never
  fuzzily.
* The row sets the service's ``description`` (unless its folder's README gave one: that text
  is the service's own) and ``language``, each with its line in ``attribute_refs``
  (``description|<text>|README.md#L31@<commit>``), which is what an answer cites.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from substrate.connectors.aliases import NORMALISED, Entity, NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.markdown import field_value, inline_text
from substrate.graph.records import NodeRecord

TABLE_FILES = ("README.md", "docs/README.md")
_NAME = re.compile(r"^(?:micro-?)?services?$|^names?$|^components?$|^applications?$|^apps?$"
                   r"|^modules?$|^projects?$|^workloads?$", re.I)
_DESCRIPTION = re.compile(r"^(?:description|purpose|summary|role|responsibilit(?:y|ies)"
                          r"|what\s+it\s+does|about|details)$", re.I)
_LANGUAGE = re.compile(r"^(?:languages?|lang|programming\s+languages?|written\s+in)$", re.I)
_MARKDOWN = MarkdownIt("commonmark").enable("table")
LANGUAGE_FIELDS = ("language", "languages", "programming language", "written in")
# a README's own sentence about its language, in its opening lines: "It is a C++ based
# service", "written in Go", "a PHP service"; the language from a fixed vocabulary, so "built
# with React" or "a based approach" name none ("Go" only with its capital: "go" is a verb)
PROSE_LANGUAGES = {
    "c++": "C++", "cpp": "C++", "c#": "C#", ".net": "C#", "dotnet": "C#", "f#": "F#",
    "java": "Java", "kotlin": "Kotlin", "scala": "Scala", "python": "Python", "ruby": "Ruby",
    "php": "PHP", "rust": "Rust", "golang": "Go", "go": "Go", "javascript": "JavaScript",
    "node.js": "JavaScript", "nodejs": "JavaScript", "typescript": "TypeScript",
    "elixir": "Elixir", "erlang": "Erlang", "swift": "Swift", "dart": "Dart",
    "clojure": "Clojure", "haskell": "Haskell", "perl": "Perl",
}  # fmt: skip
# the vocabulary's words, longest first ("javascript" before "java"); each is followed by a
# space, a hyphen or the end of a word wherever the patterns below use it
_LANG = "(" + "|".join(re.escape(w) for w in sorted(PROSE_LANGUAGES, key=len, reverse=True)) \
    + ")"
_PROSE_LANGUAGE = re.compile(
    rf"\b(?:written|implemented|developed|coded|built)\s+(?:in|using|with)\s+{_LANG}(?![\w+#])"
    rf"|(?<![\w.+#]){_LANG}[- ]based\s+(?:micro)?(?:service|application|app|server|api|backend)\b"
    rf"|\b(?:is|as)\s+an?\s+{_LANG}\s+(?:micro)?(?:service|application|app|server|api|backend)\b",
    re.I)
PROSE_LINES = 30  # the opening lines of a README that may state it


@dataclass(frozen=True)
class ServiceRow:
    line: int  # 1-based
    name: str  # the name cell as it reads
    href: str  # the name cell's link target ("" when none)
    description: str
    language: str


# a page of its own listing the services, at the root or in docs/ ("docs/service_table.md")
_TABLE_PAGE = re.compile(r"^(?:docs/)?(?:services?|service[-_]?(?:table|list|catalog(?:ue)?"
                         r"|overview|index)|components)\.md$", re.I)


def is_table_path(path: str) -> bool:
    return path in TABLE_FILES or bool(_TABLE_PAGE.match(path))


def table_paths(snap: GitSnapshot) -> list[str]:
    """The files whose service tables are read, in the order their values are taken: the
    README, docs/README.md, then the service pages by name."""
    pages = sorted(p for p in snap.files() if _TABLE_PAGE.match(p))
    return [p for p in TABLE_FILES if snap.exists(p)] + pages


def service_rows(text: str) -> list[ServiceRow]:
    """The rows of every service table in ``text`` (see the module docstring), and the list
    items naming a service with what it is (:func:`_item`)."""
    return list(_service_rows(text))


@lru_cache(maxsize=256)
def _service_rows(text: str) -> tuple[ServiceRow, ...]:
    """:func:`service_rows`, once per text (a history replay reads the same README at every
    commit it parses: parsing its Markdown again was a sixth of bank-of-anthos' parse)."""
    rows: list[ServiceRow] = []
    columns: _Columns | None = None  # inside a table: None until its header row is read
    in_table = False
    cells: list[tuple[str, str]] = []
    line = 0
    items = 0  # depth of list items around the token
    for token in _MARKDOWN.parse(text):
        if token.type == "list_item_open":
            items += 1
        elif token.type == "list_item_close":
            items -= 1
        elif token.type == "inline" and items and not in_table:
            item = _item(token, token.map[0] + 1 if token.map else 0)
            if item is not None:
                rows.append(item)
        if token.type == "table_open":
            in_table, columns = True, None
        elif token.type == "tr_open":
            cells, line = [], (token.map[0] + 1 if token.map else 0)
        elif token.type == "inline" and in_table:
            cells.append((inline_text(token.content), _first_href(token)))
        elif token.type == "tr_close" and in_table:
            if columns is None:
                columns = _columns([c for c, _ in cells])
            else:
                row = _row(columns, cells, line)
                if row is not None:
                    rows.append(row)
        elif token.type == "table_close":
            in_table = False
    return tuple(rows)


# a list item naming a service and saying what it is: "- **Visits Service**: Manages pet
# visit records.", "* `cart` - the shopping cart", "- [Orders](src/orders) — order history"
_ITEM = re.compile(r"^\s*(?:\*\*|__|`)?\s*(?:\[(?P<link>[^\]]{2,60})\]\([^)]*\)|"
                   r"(?P<name>[^*_`:\[\]]{2,60}?))\s*(?:\*\*|__|`)?\s*(?::|\s[-–—]\s)\s*"
                   r"(?P<text>\S.{8,})$")


def _item(token: Token, line: int) -> ServiceRow | None:
    """The service a list item names with what it says about it, None when it names none
    that way (its first words are no name set off by bold, code or a link, then a colon or
    a dash)."""
    content = token.content.strip()
    if not content.startswith(("**", "__", "`", "[")):
        return None
    found = _ITEM.match(content)
    if found is None:
        return None
    name = (found["link"] or found["name"] or "").strip()
    text = inline_text(found["text"]).strip()
    return ServiceRow(line, name, _first_href(token), text, "") if name and text else None


@dataclass(frozen=True)
class _Columns:
    name: int | None
    description: int | None
    language: int | None


def _columns(header: list[str]) -> _Columns:
    def column(rx: re.Pattern[str]) -> int | None:
        return next((i for i, h in enumerate(header) if rx.match(h.strip())), None)

    return _Columns(column(_NAME), column(_DESCRIPTION), column(_LANGUAGE))


def _first_href(token: Token) -> str:
    for child in token.children or []:
        if child.type == "link_open":
            return str(child.attrGet("href") or "")
    return ""


def _row(columns: _Columns, cells: list[tuple[str, str]], line: int) -> ServiceRow | None:
    name_at, said_at, lang_at = columns.name, columns.description, columns.language
    if name_at is None or (said_at is None and lang_at is None) or name_at >= len(cells):
        return None

    def cell(i: int | None) -> str:
        return cells[i][0] if i is not None and i < len(cells) else ""

    name, href = cells[name_at]
    if not name:
        return None
    return ServiceRow(line, name, href, cell(said_at), cell(lang_at))


def describe_from_tables(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]) -> None:
    """Set ``description`` and ``language`` of the services the README tables list."""
    folders = {folder.strip("/"): cid for cid, folder in dirs.items()}
    present = table_paths(snap)
    snap.preload(present)
    for path in present:
        for row in service_rows(snap.read(path)):
            cid = _service_of(row, index, folders, posixpath.dirname(path))
            if cid is None:
                continue
            entity = index.get(cid)
            ref = snap.ref(path, row.line)
            if row.description and not entity.props.get("description"):
                state_attribute(entity, "description", row.description, ref)
            if row.language and not entity.props.get("language"):
                state_attribute(entity, "language", row.language, ref)


def describe_language(entity: Entity | NodeRecord, body: list[tuple[int, str]],
                      ref_of: Callable[[int], str]) -> None:
    """``Language: Java`` in a service folder's README: the service's ``language``. (A
    sentence saying so, :func:`prose_language`, counts only after the build files: a README
    left from an older version of the service may still say what it was written in.)"""
    found = field_value(body, LANGUAGE_FIELDS)
    if found and found[0] and not entity.props.get("language"):
        state_attribute(entity, "language", inline_text(found[0]), ref_of(found[1]))


def prose_language(body: list[tuple[int, str]]) -> tuple[str, int] | None:
    """(language, line) of the first sentence of the opening lines (``PROSE_LINES``) stating
    what the text's subject is written in."""
    for line, text in body[:PROSE_LINES]:
        for match in _PROSE_LANGUAGE.finditer(text):
            word = next(g for g in match.groups() if g)
            if word.lower() == "go" and word != "Go":
                continue
            return PROSE_LANGUAGES[word.lower()], line
    return None


def state_attribute(entity: Entity | NodeRecord, key: str, value: str, ref: str) -> None:
    """``entity``'s ``key`` is ``value``, stated at ``ref`` (its line in ``attribute_refs``)."""
    entity.props[key] = value
    refs = [r for r in entity.props.get("attribute_refs") or []
            if not str(r).startswith(f"{key}|")]
    entity.props["attribute_refs"] = sorted({*refs, f"{key}|{value}|{ref}"})


def _service_of(row: ServiceRow, index: NameIndex, folders: dict[str, str],
                base: str = "") -> str | None:
    """The service a row names: by its link (relative to the table's folder, or to the
    repository root when it starts with ``/``; a link to a file names the file's folder),
    else by its text."""
    href = row.href.split("#", 1)[0].split("?", 1)[0]
    if href and "://" not in href:
        joined = href.lstrip("/") if href.startswith("/") else posixpath.join(base, href)
        folder = posixpath.normpath(joined).strip("/")
        for candidate in (folder, posixpath.dirname(folder)):
            cid = folders.get(candidate)
            if cid is not None and cid in index:
                return cid
    for name in (row.name, row.name.strip("`")):
        found = index.resolve(name, fuzzy=False)
        if found.ceid is not None and found.confidence >= NORMALISED \
                and index.get(found.ceid).label in ("Service", "Infrastructure"):
            return found.ceid
    return None
