"""The sentences of an architecture decision record, by section, each with the file lines
it spans (:func:`sentences`), and which of them to quote (:func:`select`, :func:`boost`): the
text side of the decision rationale (:mod:`rationale`). Pure text: no graph, no model."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from substrate.connectors.adr_fields import table_status
from substrate.connectors.markdown import FENCE, indented_blocks

QUOTES = 4
SECTIONS = re.compile(r"^(?:proposed\s+or\s+(?=chosen))?"  # "PROPOSED OR CHOSEN OPTION: X"
                      r"(context|decision drivers|decision(?:\s+outcome)?|the decision"
                      r"|chosen option|consequences|considerations|rationale|reasons?"
                      r"|pros(?:\s+and\s+cons)?|advantages|benefits|justification"
                      r"|(?:considered\s+)?options?(?:\s+considered)?|alternatives)\b", re.I)
DECISION_BOOST = 0.1  # a Decision sentence states the reason more often than a Context one
REASON_BOOST = 0.05  # a sentence that gives a reason ("because", "so that", "we chose")
_REASON = re.compile(r"\b(?:because|since|so that|in order to|due to|driven by|motivated by"
                     r"|allows?|enables?|benefits?"
                     r"|advantages?|we (?:chose|decided|opted)|opting|instead of|rather than"
                     r"|easier|simpler|faster|lower|reduces?|avoids?)\b", re.I)
_GIVES_REASONS = re.compile(r"\b(?:reasons?|because|advantages?|benefits?|pros|why|due to|features?"
                            r"|drawbacks?|problems?|pain points?|side effects?|assumptions?"
                            r"|needs?|requirements?|constraints?|goals?|considerations?"
                            r"|drivers?|criteria|motivations?)\b", re.I)
MIN_CHARS = 12  # shorter sentences say too little to quote; list items may be shorter
MIN_ITEM_CHARS = 4
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# a sentence ends at . ! or ? before a capital, quote or bracket; not after "e.g.", "i.e.",
# "etc." or "vs." ("(i.e. `pip install`)" is one sentence)
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)"
                           r"\s+(?=[A-Z\"'(\[`*])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINK_ONLY = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+!?\[[^\]]*\]\([^)]*\)\s*$"
                        # a line that is only pictures ("![Sock Shop frontend](shot.png)"):
                        # its alt text says what it shows, no sentence of the page
                        r"|^\s*(?:\[?!\[[^\]]*\]\([^)]*\)(?:\]\([^)]*\))?\s*)+$")
# a reference-style link's definition, at the foot of a record: "[Docker Hub]: https://..."
_LINK_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*\S+")
_CONTENTS = re.compile(r"^(?:table of )?contents$|^toc$", re.I)
# emphasis marks: * and ` anywhere, _ only at a word's edge (snake_case names keep theirs)
_EMPHASIS = re.compile(r"[*`]{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w)")


@dataclass(frozen=True)
class Sentence:
    section: str
    line: int
    text: str
    last: int = 0  # the line it ends on (a sentence may wrap over several)
    listed: bool = False  # a list a reasons lead-in announces ("for several reasons:")

    def lines(self) -> str:
        """``L12`` or ``L12-L14``, as the citation names them."""
        return f"L{self.line}" + (f"-L{self.last}" if self.last > self.line else "")


def clean(text: str) -> str:
    """Markdown emphasis, links and code ticks removed; whitespace collapsed."""
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub("", text)
    return " ".join(text.split())


def first_text_line(text: str, path_line: int, title: str) -> int:
    """File line of the text's first line: the title heading sits on the provenance's line."""
    for i, line in enumerate(text.splitlines()):
        m = _HEADING.match(line)
        if m and (not title or clean(title).lower() in clean(m.group(2)).lower()):
            return path_line - i
    return 1


def _paragraphs(lines: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Paragraphs and list items: their lines, each with its file line number."""
    out: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for no, text in [*lines, (0, "")]:
        starts_item = bool(_BULLET.match(text))
        if not text.strip() or starts_item:
            if current:
                out.append(current)
            current = [(no, _BULLET.sub("", text))] if starts_item else []
        else:
            current.append((no, text))
    return out


def _split(paragraph: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """The paragraph's sentences, each with the file lines it starts and ends on."""
    text, starts = "", []
    for no, line in paragraph:
        starts.append((len(text), no))
        text += line.strip() + " "

    def line_at(offset: int) -> int:
        return max(no for at, no in starts if at <= offset)

    out, begin = [], 0
    for m in [*_SENTENCE_END.finditer(text), None]:
        end = m.start() if m else len(text.rstrip())
        if end > begin:
            out.append((line_at(begin), line_at(max(begin, end - 1)), text[begin:end]))
        begin = m.end() if m else begin
    return out


def sentences(text: str, title_line: int, title: str = "", every_section: bool = False
              ) -> list[Sentence]:
    """The sentences of the reason-giving sections, with the file line each starts on.

    A list is quoted whole with what announces it: a lead-in ending in ":" ("We will use S3
    for several reasons:", "Alpine is a small library that:") and the items under it become
    one sentence citing their lines (``L19-L22``), and so do the items a reason section's
    heading announces ("## Considerations"). A reason is then quoted with its siblings, as
    the ADR gives them. A lead-in followed by prose ("... and opting to stick with
    GitHub-native workflows:" then the decision) is joined to that prose's first sentence. A
    heading inside a section ("### Plain JUnit5" under "## Pros and Cons of the Options")
    announces what follows it the same way.

    ``every_section``: every heading starts a section of its own name, and the text before
    the first, or under the page's title, is a section too ("": a README's opening): a
    documentation page's sentences.
    A fenced code block is one sentence (its lines joined by "; "); a table of contents, a list
    item that is only a link and HTML are left out. The text is then a whole file: its first
    line is line 1."""
    first = 1 if every_section else first_text_line(text, title_line, title)
    raw = text.splitlines()
    section: str | None = "" if every_section else None
    depth = 0  # the heading level of the current section: deeper headings stay inside it
    body: dict[str, list[tuple[int, str]]] = {}
    code: list[str] | None = None  # the lines of the fenced block being read (every_section)
    code_at, headed = 0, False
    blocks: dict[int, int] = {}  # the command blocks read: first line -> last line
    # indented code blocks (an older README's commands), read as a fenced one; an HTML
    # comment's lines are no text
    indented = indented_blocks(raw) if every_section else {}
    skip_to, comment = -1, False
    if every_section and raw and raw[0].strip() == "---":  # front matter (Jekyll's): no text
        skip_to = next((k for k in range(1, len(raw)) if raw[k].strip() in ("---", "...")), -1)
    for i, line in enumerate(raw):
        if i <= skip_to:
            continue
        if every_section and code is None and (comment or line.lstrip().startswith("<!--")):
            comment = "-->" not in line
            continue
        if i in indented:
            joined = "; ".join(c.strip() for c in raw[i : indented[i] + 1] if c.strip())
            if section is not None:
                body.setdefault(section, []).extend([(0, ""), (first + i, joined), (0, "")])
                blocks[first + i] = first + indented[i]
            skip_to = indented[i]
            continue
        if every_section and FENCE.match(line):
            if code is None:  # cited at its first line (a lead-in "...run:" joins it)
                code, code_at = [], first + i + 1
            else:  # the block, one line: its commands are what a page says to run
                joined = "; ".join(c.strip() for c in code if c.strip())
                if section is not None and joined:
                    body.setdefault(section, []).extend([(0, ""), (code_at, joined), (0, "")])
                    blocks[code_at] = code_at + max(
                        k for k, c in enumerate(code) if c.strip())
                code = None
            continue
        if code is not None:
            code.append(line)
            continue
        if every_section and (line.lstrip().startswith("<") or _LINK_ONLY.match(line)):
            continue  # HTML (images, centring) and navigation (a list item that is one link)
        if _LINK_DEFINITION.match(line):  # "[Docker Hub]: https://hub.docker.com/": no text
            continue
        m = _HEADING.match(line)
        if m and every_section:  # the page's title (a first "# ...") names no section
            section = "" if len(m.group(1)) == 1 and not headed else clean(m.group(2))
            section = None if section and _CONTENTS.match(section) else section
            headed = True
            continue
        if m:
            level = len(m.group(1))
            if section is not None and level > depth:  # "### Option 2" under "## Pros and
                # Cons of the Options": stays inside, and announces what follows it
                lead = clean(m.group(2)).rstrip(":") + ":"
                body.setdefault(section, []).extend([(0, ""), (first + i, lead), (0, "")])
                continue
            found = SECTIONS.match(clean(m.group(2)))
            section = found.group(1).capitalize() if found and level > 1 else None
            depth = level
            if section in DECISION_SECTIONS and clean(m.group(2)).partition(":")[2].strip():
                # "## CHOSEN OPTION: Backend UTC": the heading states the choice
                body.setdefault(section, []).extend([(first + i, clean(m.group(2))), (0, "")])
            continue
        if section is not None:
            body.setdefault(section, []).append((first + i, line))
    out: list[Sentence] = []
    for name, lines in body.items():
        out += _section_sentences(name, _paragraphs(lines), lambda no: raw[no - first],
                                  set(blocks))
    return [_through_block(s, blocks) for s in out]


def _through_block(sentence: Sentence, blocks: dict[int, int]) -> Sentence:
    """A sentence holding a command block ends on the block's last command line (the block
    is read as one line, at its first): its citation covers every command it quotes."""
    end = max((last for at, last in blocks.items()
               if sentence.line <= at <= max(sentence.line, sentence.last)), default=0)
    return replace(sentence, last=end) if end > max(sentence.line, sentence.last) else sentence


MAX_LIST_CHARS = 420  # a quoted list stops after the item that passes this many characters


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _kept(text: str, item: bool) -> bool:
    return len(text) >= (MIN_ITEM_CHARS if item else MIN_CHARS) and any(
        c.isalpha() for c in text)


def _section_sentences(name: str, paras: list[list[tuple[int, str]]],
                       raw: Callable[[int], str], blocks: frozenset[int] | set[int] = frozenset()
                       ) -> list[Sentence]:
    """One section's sentences; lists grouped with their lead-in (see :func:`sentences`);
    ``blocks``: the lines of command blocks, which a list item's lead-in announces too ("4. run
    the script:" then the block)."""
    out: list[Sentence] = []

    def is_item(para: list[tuple[int, str]]) -> bool:
        return bool(_BULLET.match(raw(para[0][0])))

    def items_after(j: int, under: int | None) -> int:
        """The end of the run of items from ``j`` (deeper than ``under`` when given)."""
        while j < len(paras) and is_item(paras[j]) and (
                under is None or _indent(raw(paras[j][0][0])) > under):
            j += 1
        return j

    def grouped(lead: tuple[int, int, str] | None, run: list[list[tuple[int, str]]],
                listed: bool) -> None:
        texts, last = [], 0
        for para in run:
            item = clean(" ".join(t for _, t in para)).rstrip(" ;.")
            if not _kept(item, True):
                continue
            texts.append(item)
            last = para[-1][0]
            if sum(len(t) for t in texts) > MAX_LIST_CHARS:
                break
        if not texts:
            return
        head = clean(lead[2]) + " " if lead else ""
        start = lead[0] if lead else run[0][0][0]
        joined = "".join(t + ("" if k == len(texts) - 1 else " " if t.endswith(":") else "; ")
                         for k, t in enumerate(texts))  # a nested lead-in runs on
        out.append(Sentence(name, start, head + joined + ".", last, listed))

    i = 0
    if paras and is_item(paras[0]) and name in (*REASON_SECTIONS, "Consequences"):
        # the heading announces them; a Consequences list is quoted whole too (opg-use-an-lpa's
        # ADR 14 gives its reasons for Twig only there), though not as reasons
        end = items_after(0, None)
        grouped(None, paras[:end], name in REASON_SECTIONS)
        i = end
    while i < len(paras):
        para, item = paras[i], is_item(paras[i])
        pieces = _split(para)
        # a lead-in ends in ":" ("...as follows:"), or runs on into a command block ("push
        # the application with" then the block)
        block_next = i + 1 < len(paras) and paras[i + 1][0][0] in blocks
        last_words = clean(pieces[-1][2]) if pieces else ""
        lead = pieces[-1] if pieces and (announces(last_words) or (
            block_next and not last_words.endswith((".", "!", "?")))) else None
        end = items_after(i + 1, _indent(raw(para[0][0])) if item else None) if lead else i + 1
        nxt = paras[i + 1] if lead and end == i + 1 and i + 1 < len(paras) else None
        joined = (nxt is not None and (not item or nxt[0][0] in blocks) and not is_item(nxt)
                  and not raw(nxt[0][0]).lstrip().startswith(("```", "|", "<")))
        for no, last, piece in pieces[:-1] if (end > i + 1 or joined) else pieces:
            words = clean(piece)
            if _kept(words, item):
                out.append(Sentence(name, no, words, last))
        if lead is not None and end > i + 1:  # the lead-in and the items it announces
            grouped(lead, paras[i + 1:end], bool(_GIVES_REASONS.search(clean(lead[2]))))
            i = end
            continue
        if joined and nxt is not None and lead is not None:  # "...:" then the statement
            follow = _split(nxt)
            no, last, piece = follow[0]
            out.append(Sentence(name, lead[0], clean(lead[2]) + " " + clean(piece), last))
            out += [Sentence(name, n, clean(t), e) for n, e, t in follow[1:]
                    if _kept(clean(t), False)]
            i += 2
            continue
        i += 1
    return out


DECISION_SECTIONS = ("Decision", "Decision outcome", "The decision", "Chosen option")
REASON_SECTIONS = ("Context", "Decision drivers", "Considerations", "Rationale", "Reason",
                   "Reasons", "Pros", "Pros and cons", "Advantages", "Benefits",
                   "Justification")
_CHOICE = re.compile(r"\b(?:we(?:'ll| will| shall| are going to)\b"
                     r"|we(?: have)? (?:decided|chose|chosen|opted|selected|agreed)"
                     r"|chosen option|decided (?:on|to)|we(?:'re| are) (?:going|moving) with"
                     r"|(?:go|went|going) with option)", re.I)


def lead_in(sentence: Sentence) -> bool:
    """A sentence that only introduces a list ("... for several reasons:")."""
    return announces(sentence.text)


# "Chosen option: "payment", because" then the reasons as a list (MADR): a lead-in too
_OPEN_REASON = re.compile(r"\b(?:because|since|as follows)\s*$", re.I)


def announces(text: str) -> bool:
    """Does the text end by announcing what follows (":" or an open "because")?"""
    text = text.rstrip()
    return text.endswith(":") or _OPEN_REASON.search(text) is not None


def is_force(sentence: Sentence) -> bool:
    """A force behind the decision: a sentence of the Context / drivers / considerations /
    pros sections or an item of a list a lead-in introduces."""
    return sentence.section in REASON_SECTIONS or sentence.listed


def is_reason(sentence: Sentence) -> bool:
    """A sentence stating a force or reason: one of the Context / drivers / considerations /
    pros sections (the Nygard and MADR places of the "why"), an item of a list a lead-in
    introduces ("for several reasons:"), or a Decision sentence that gives a reason."""
    return (sentence.section in REASON_SECTIONS or sentence.listed
            or (sentence.section in DECISION_SECTIONS and bool(_REASON.search(sentence.text))
                and not _CHOICE.search(sentence.text)))


def statement(found: list[Sentence]) -> Sentence | None:
    """The decision as stated: the Decision section's first sentence that makes the choice
    ("We will ...", "We decided on Option 2", "Chosen option: ...", also when it announces
    its reasons: "We will use S3 for several reasons:"), else None."""
    return next((s for s in found if s.section in DECISION_SECTIONS
                 and _CHOICE.search(s.text)), None)


def select(found: list[Sentence], ranked: list[Sentence], most: int = QUOTES) -> list[Sentence]:
    """The quotes, in document order: the decision as stated (else the best-ranked Decision
    sentence), the best-ranked force (Context, drivers, considerations, pros, listed
    reasons), the Decision's best-ranked other sentence, the next force, the best-ranked
    list of reasons not yet quoted, then the best-ranked others; a lead-in alone and a
    question are never quoted."""
    seen: set[str] = set()
    usable = []
    for s in ranked:  # a sentence the record repeats (a restated section) is quoted once
        if lead_in(s) or s.text.rstrip().endswith("?") or s.text.casefold() in seen:
            continue
        seen.add(s.text.casefold())
        usable.append(s)
    decided = [s for s in usable if s.section in DECISION_SECTIONS]
    first = statement(found) or next(iter(decided), None)
    chosen = [first] if first is not None else []
    forces = [s for s in usable if is_force(s) and s not in chosen]
    chosen += forces[:1]
    chosen += [s for s in decided if s not in chosen][:1]  # the Decision's best other line
    chosen += [s for s in forces if s not in chosen][:1]
    # a list announced as reasons ("Considerations:") before the other sections' lines: a
    # Consequences list quoted whole may rank above it, but says less about the "why"
    chosen += [s for s in forces if s.listed and s not in chosen][:1]
    chosen += [s for s in usable if s not in chosen][:most - len(chosen)]
    return sorted(chosen[:most], key=lambda s: s.line)


_STATUS_HEADING = re.compile(r"^#{1,6}\s*status\b", re.I)
_STATUS_FIELD = re.compile(r"^\s*(?:[*-]\s*)?status\s*:\s*(\S.*?)\s*$", re.I)


def written_status(text: str, first: int) -> tuple[str, int] | None:
    """The status as the ADR writes it ("Pending review", "Under Review") and its file line:
    the first line under a ``## Status`` heading, or a ``Status:`` field, else the value row
    of a metadata table (``| DATE | STATUS |``, ``| Status | Accepted |``)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        field = _STATUS_FIELD.match(line)
        if field:
            return clean(field.group(1)).rstrip(".").strip(), first + i
        if _STATUS_HEADING.match(line):
            for j in range(i + 1, min(len(lines), i + 6)):
                if lines[j].strip() and not _HEADING.match(lines[j]):
                    return clean(lines[j]).rstrip(".").strip(), first + j
            return None
    table = table_status([(first + i, line) for i, line in enumerate(lines)])
    return (clean(table[0]).rstrip(".").strip(), table[1]) if table else None


def boost(sentence: Sentence) -> float:
    """What a sentence's place and wording add to its relevance: the decision sections
    (Decision, Decision outcome, Chosen option; drivers are forces, not the decision),
    reason-giving words and the lists a lead-in announces as reasons state the "why" more
    often."""
    return ((DECISION_BOOST if sentence.section in DECISION_SECTIONS else 0.0)
            + (REASON_BOOST if sentence.listed or _REASON.search(sentence.text) else 0.0))
