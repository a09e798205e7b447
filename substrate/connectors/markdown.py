"""Small, line-numbered reading of Markdown: front matter, headings, sections, fields."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import yaml
from markdown_it import MarkdownIt

Line = tuple[int, str]  # (1-based line number, text)

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")  # a code fence's opening or closing line
# an HTML heading on one line (a README's centred title: <h1 align="center">Name</h1>)
_HTML_HEADING = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
# a centred logo naming the project (<img src="logo.svg" alt="Online Boutique" />), not a
# generic picture ("logo", "banner", a badge)
_IMG_ALT = re.compile(r"<img\b[^>]*\balt\s*=\s*[\"']([^\"']{2,80})[\"']", re.IGNORECASE)
_GENERIC_ALT = re.compile(r"^(?:the\s+)?(?:\w+\s+)?(?:logo|banner|badge|icon|image|screenshot"
                          r"|diagram|header|hero)s?$|^(?:logo|banner|image|icon)\b", re.I)
_FIELD = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?([A-Za-z][A-Za-z ]{1,30}?)(?:\*\*|__)?\s*:"
    r"\s*(?:\*\*|__)?\s*(.+?)\s*$"
)


@dataclass
class Section:
    """A heading and the lines under it up to the next heading of the same or higher level."""

    title: str
    level: int
    line: int
    lines: list[Line] = field(default_factory=list)

    def paragraph(self) -> str:
        """The first paragraph of the section, whitespace collapsed."""
        return first_paragraph(self.lines)


@dataclass
class MarkdownDoc:
    """A Markdown text split into front matter (with key lines) and body lines."""

    front: dict[str, str]
    front_lines: dict[str, int]
    body: list[Line]


def _front_matter(lines: list[str]) -> tuple[dict[str, str], dict[str, int], int]:
    if not lines or lines[0].strip() != "---":
        return {}, {}, 0
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, {}, 0
    try:
        data = yaml.load("\n".join(lines[1:end]), Loader=yaml.BaseLoader)
    except yaml.YAMLError:
        data = None
    front = {str(k).lower(): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    key_lines: dict[str, int] = {}
    for i in range(1, end):
        key = lines[i].split(":", 1)[0].strip().lower()
        if key in front and key not in key_lines:
            key_lines[key] = i + 1
    return front, key_lines, end + 1


def parse_markdown(text: str) -> MarkdownDoc:
    """Front matter (``---`` block of ``key: value``) and the numbered body lines."""
    raw = text.splitlines()
    front, key_lines, start = _front_matter(raw)
    body = [(i + 1, raw[i]) for i in range(start, len(raw))]
    return MarkdownDoc(front, key_lines, body)


def headings(lines: list[Line]) -> list[tuple[int, int, str]]:
    """``(line, level, title)`` of every ATX heading outside code fences."""
    out: list[tuple[int, int, str]] = []
    fenced = False
    for no, text in lines:
        if FENCE.match(text):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(text)
        if match:
            out.append((no, len(match.group(1)), match.group(2).strip()))
    return out


def sections(lines: list[Line]) -> list[Section]:
    """Every heading with the lines of its section (nested sub-sections included)."""
    heads = headings(lines)
    out: list[Section] = []
    for i, (no, level, title) in enumerate(heads):
        end = next((h[0] for h in heads[i + 1 :] if h[1] <= level), None)
        body = [(n, t) for n, t in lines if n > no and (end is None or n < end)]
        out.append(Section(title, level, no, body))
    return out


def find_sections(lines: list[Line], pattern: str) -> list[Section]:
    """Sections whose title matches ``pattern`` (a case-insensitive regex)."""
    rx = re.compile(pattern, re.IGNORECASE)
    return [s for s in sections(lines) if rx.search(s.title)]


def title(lines: list[Line]) -> tuple[str, int] | None:
    """An HTML heading above every Markdown heading (the centred title many READMEs open
    with), else the first level-1 heading, else the name a logo above every heading gives in
    its ``alt`` (``<img src="logo.svg" alt="Online Boutique">``), else the first heading;
    and its line."""
    found = project_title(lines)
    if found is not None:
        return found
    heads = headings(lines)
    return (heading_text(heads[0][2]), heads[0][0]) if heads else None


_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_EMPTY_LINK = re.compile(r"\[\s*\]\([^)]*\)")


def heading_text(text: str) -> str:
    """A heading as it names the page: without the badges, images and HTML after the name
    ("# GSP [![IRC](badge.svg)]() <img src="gsp.png">" is "GSP")."""
    cleaned = " ".join(_TAG.sub(" ", _EMPTY_LINK.sub(" ", _IMAGE.sub(" ", text))).split())
    return cleaned or text


def project_title(lines: list[Line]) -> tuple[str, int] | None:
    """What names the page as a whole (:func:`title` without its last resort, the first
    heading of a page with no level-1 one, which names a section): for a root README, the
    project's name."""
    heads = headings(lines)
    top = heads[0][0] if heads else None
    fenced, alt = False, None
    for no, text in lines:
        if top is not None and no >= top:
            break
        if FENCE.match(text):
            fenced = not fenced
        match = None if fenced else _HTML_HEADING.search(text)
        name = " ".join(_TAG.sub(" ", match.group(2)).split()) if match else ""
        if name:
            return name, no
        image = None if fenced or alt else _IMG_ALT.search(text)
        named = " ".join(image.group(1).split()) if image else ""
        if named and not _GENERIC_ALT.search(named):
            alt = (named, no)
    for no, level, text in heads:
        if level == 1:
            return heading_text(text), no
    return alt


def field_value(lines: list[Line], names: tuple[str, ...]) -> tuple[str, int] | None:
    """First ``Name: value`` line (also ``* Name: value`` and ``**Name:** value``)."""
    wanted = {n.lower() for n in names}
    for no, text in lines:
        match = _FIELD.match(text)
        if match and match.group(1).strip().lower() in wanted:
            return match.group(2).strip().strip("*_").strip(), no
    return None


def first_paragraph_lines(lines: list[Line]) -> list[Line]:
    """The first run of non-blank, non-heading lines (outside the fences' own lines)."""
    found: list[Line] = []
    for no, text in lines:
        stripped = text.strip()
        if not stripped or _HEADING.match(stripped) or FENCE.match(stripped):
            if found:
                break
            continue
        found.append((no, stripped))
    return found


def first_paragraph(lines: list[Line], limit: int = 600) -> str:
    """First run of non-blank, non-heading lines, whitespace collapsed, cut at ``limit``."""
    return paragraph_text(first_paragraph_lines(lines), limit)


def paragraph_text(lines: list[Line], limit: int = 600) -> str:
    """Lines as one paragraph: whitespace collapsed, cut at ``limit``."""
    joined = " ".join(" ".join(t for _, t in lines).split())
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"


def plain_text(lines: list[Line], limit: int = 8000) -> str:
    """The body as plain text (cut at ``limit`` characters)."""
    text = "\n".join(t for _, t in lines).strip()
    return text[:limit]


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def inline_text(text: str) -> str:
    """One line of Markdown as it reads: links by their text, emphasis and code ticks
    removed, whitespace collapsed."""
    text = re.sub(r"[*_`]{1,3}", "", _LINK.sub(r"\1", text))
    return " ".join(text.split())


# a line that is one inline code span, maybe a list item's: "4) `kubectl create -f ns.yaml`"
_CODE_LINE = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?`[^`]+`\s*$")


def fenced_lines(text: str) -> set[int]:
    """The 1-based lines of a page's commands: inside code blocks, fenced or indented, and
    the lines that are one inline code span ("2) `minikube start`")."""
    inside, out = False, set()
    for no, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            inside = not inside
        elif inside or _CODE_LINE.match(line):
            out.add(no)
    lines = text.splitlines()
    for start, end in indented_blocks(lines).items():
        out.update(range(start + 1, end + 2))
    return out


_COMMONMARK = MarkdownIt("commonmark")


def indented_blocks(lines: list[str]) -> dict[int, int]:
    """CommonMark's indented code blocks (markdown-it-py's ``code_block`` tokens: four spaces
    after a blank line, not a list item's continuation, not inside a fence or an HTML
    comment); ``{first: last}``, 0-based line indexes, the last non-blank. Older READMEs give
    their commands so ("    docker-compose up -d")."""
    return dict(_code_blocks("\n".join(lines)))


@lru_cache(maxsize=256)
def _code_blocks(text: str) -> tuple[tuple[int, int], ...]:
    """(first, last non-blank) of each indented code block of ``text`` (memoised: a page is
    read for its sentences and for its commands, and again by the next question; a 43 kB
    page takes ~20 ms to parse)."""
    lines = text.split("\n")
    out = []
    for token in _COMMONMARK.parse(text):
        if token.type == "code_block" and token.map:
            start, end = token.map
            filled = [k for k in range(start, min(end, len(lines))) if lines[k].strip()]
            if filled:
                out.append((start, filled[-1]))
    return tuple(out)
