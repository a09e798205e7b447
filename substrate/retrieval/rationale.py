"""Decision rationale with no model (RSN-UC-05): the sentences of the ADR that answer "why".

After fusion and reranking, the first architecture decision records among the results (ADR
hits, or chunks of them; an ADR the question names comes first) are read back from the
graph: their text (the body lines the ADR connector kept), path, status, date and the commit
of their provenance. The fused order's first answers, unless another candidate's title (with
its file name) is clearly closer to the question (:func:`by_title`: "why X?" names the
decision an ADR's title states; the fused order also follows the ADRs that only mention X),
and shares a content word with it. The text is cut into sentences by section — Context,
Decision (MADR's "Decision Outcome", the 18F/TTS "CHOSEN OPTION: X", whose heading states the
choice), Consequences, Considerations, Rationale — each sentence keeping the file lines it
spans, so it cites as ``path#L<line>@<commit>``; a list is one sentence with the lead-in that
announces it (:func:`sentences`). The reranker scores every sentence against the question;
the best ``QUOTES`` are quoted in document order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol

from substrate.connectors.adr import table_status
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.decision_dates import MAX_RECORDS, ordered, recency
from substrate.retrieval.mentions import ADR_REF
from substrate.retrieval.relevance import STOPWORDS
from substrate.retrieval.time_scope import commit_at

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
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[`*])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_COMMIT = re.compile(r"@([0-9a-f]{7,40})$")


class Reranker(Protocol):
    async def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None
                     ) -> Any: ...


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
    text = re.sub(r"[*_`]{1,3}", "", text)
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


def sentences(text: str, title_line: int, title: str = "") -> list[Sentence]:
    """The sentences of the reason-giving sections, with the file line each starts on.

    A list is quoted whole with what announces it: a lead-in ending in ":" ("We will use S3
    for several reasons:", "Alpine is a small library that:") and the items under it become
    one sentence citing their lines (``L19-L22``), and so do the items a reason section's
    heading announces ("## Considerations"). A reason is then quoted with its siblings, as
    the ADR gives them. A lead-in followed by prose ("... and opting to stick with
    GitHub-native workflows:" then the decision) is joined to that prose's first sentence. A
    heading inside a section ("### Plain JUnit5" under "## Pros and Cons of the Options")
    announces what follows it the same way."""
    first = first_text_line(text, title_line, title)
    raw = text.splitlines()
    section: str | None = None
    depth = 0  # the heading level of the current section: deeper headings stay inside it
    body: dict[str, list[tuple[int, str]]] = {}
    for i, line in enumerate(raw):
        m = _HEADING.match(line)
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
        out += _section_sentences(name, _paragraphs(lines), lambda no: raw[no - first])
    return out


MAX_LIST_CHARS = 420  # a quoted list stops after the item that passes this many characters


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _kept(text: str, item: bool) -> bool:
    return len(text) >= (MIN_ITEM_CHARS if item else MIN_CHARS) and any(
        c.isalpha() for c in text)


def _section_sentences(name: str, paras: list[list[tuple[int, str]]],
                       raw: Callable[[int], str]) -> list[Sentence]:
    """One section's sentences; lists grouped with their lead-in (see :func:`sentences`)."""
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
        lead = pieces[-1] if pieces and announces(clean(pieces[-1][2])) else None
        end = items_after(i + 1, _indent(raw(para[0][0])) if item else None) if lead else i + 1
        nxt = paras[i + 1] if lead and end == i + 1 and i + 1 < len(paras) else None
        joined = (nxt is not None and not item and not is_item(nxt)
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


_ADR_NUMBER = ADR_REF  # "ADR 21", "ADR-0021", "decision record 21"


def is_decision(hit: Hit) -> bool:
    """A hit that is an ADR, or a chunk of one."""
    return hit.label == "DecisionNode" or (hit.label == "Chunk" and hit.name.startswith("adr:"))


def _adr_order(query: str, seeds: list[dict[str, Any]], fused: list[Hit]) -> list[str]:
    """ADRs the question names by number first ("ADR 21"), then in the fused order."""
    numbers = {int(n) for n in _ADR_NUMBER.findall(query)}
    named = [s["ceid"] for s in seeds if s.get("label") == "DecisionNode"
             and s["ceid"].rsplit(":", 1)[-1].isdigit()
             and int(s["ceid"].rsplit(":", 1)[-1]) in numbers]
    named += [f"adr:{n:04d}" for n in sorted(numbers)]
    hits = [h.id if h.label == "DecisionNode" else h.name for h in fused if is_decision(h)]
    return list(dict.fromkeys([*named, *hits]))


CANDIDATES = 5  # the first ADRs of the fused order whose titles are compared
TITLE_MARGIN = 0.1  # how much closer a title must be to displace the fused order's first
# words of any "why did we choose X?": a title sharing only these does not answer it
_QUESTION_WORDS = """use used uses using choose chose chosen pick picked adopt adopted select
selected decide decided decision decisions adr adrs record records need needed go went make made"""
_NOT_CONTENT = STOPWORDS | frozenset(_QUESTION_WORDS.split())


def content_words(text: str) -> set[str]:
    """The text's words less stop words and the words of any decision question, lower case,
    a plural's "s" dropped ("Django-FSM" gives django, fsm)."""
    words = (w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _NOT_CONTENT)
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words}


def on_topic(question: str, fact: dict[str, Any]) -> bool:
    """Do a record's title and quotes (a ``rationale`` fact) share at least a third of the
    question's content words (one at least)? A question no family answers is quoted from
    the best-ranked ADR only then: "which Kafka topics does the API publish to?" is not
    answered by an ADR on feature flags that mentions the API once."""
    asked = content_words(question)
    said = content_words(" ".join([str((fact.get("adr") or {}).get("name") or ""),
                                   *(str(q.get("text") or "") for q in fact.get("quotes") or [])]))
    return len(asked & said) >= max(1, -(-len(asked) // 3))


def title_text(entity: dict[str, Any], path: str | None) -> str:
    """What an ADR is called: its title and its file's name (``0042-gracefully-handle-
    samgov-4xx-errors.md``: the name states the decision even when a copied heading does
    not)."""
    stem = re.sub(r"^\d+[-_ ]*", "", PurePosixPath(path or "").stem)
    return " ".join(x for x in (str(entity.get("name") or ""), stem.replace("-", " ")
                                .replace("_", " ")) if x)


async def by_title(query: str, order: list[str], rows: dict[str, dict[str, Any]],
                   reranker: Reranker) -> list[str]:
    """``order`` with the ADR whose title answers the question first: a "why X?" names the
    decision X, which an ADR's title states, while the fused order also follows the ADRs
    that only mention X (the one superseding it, a neighbour). The fused order's first
    stays unless another title is closer to the question by ``TITLE_MARGIN`` and shares a
    content word with it (a reranker may prefer a title for its form alone)."""
    known = [c for c in order if c in rows and rows[c]["props"].get("text")]
    if len(known) < 2:
        return order
    texts = [title_text(rows[c]["entity"], rows[c]["props"].get("path")) for c in known]
    outcome = await reranker.rerank(query, texts, None)
    score = {known[r.index]: float(r.score) for r in outcome.results}
    best = max(known, key=lambda c: score.get(c, 0.0))
    if score.get(best, 0.0) < score.get(known[0], 0.0) + TITLE_MARGIN:
        return order
    if not content_words(query) & content_words(texts[known.index(best)]):
        return order
    return [best, *[c for c in order if c != best]]


WHY_TERM = re.compile(
    r"^\W*why\s+(?:do|did|does|are|were|was|is|have|has|would)\s+(?:we|they|you|the\s+team|it)"
    r"\s+(?:\w+\s+)?(?:use|using|choose|chose|chosen|pick|picked|adopt|adopted|select|selected"
    r"|go\s+with|went\s+with|switch(?:ed)?\s+to|move[ds]?\s+to|introduce[ds]?|need)\s+"
    r"(?P<term>[^?]+?)\s*\??$", re.I)
_TERM_END = re.compile(r"\s+(?:for|instead|rather|over|in|as|to|with|on|and|because)\b|[(,;:]",
                       re.I)
TERM_RECORDS = 5  # a term named by more records than this says nothing about which answers


def why_term(question: str) -> str | None:
    """X of "why do we use X (for ...)?", lower case, without an article; None otherwise."""
    m = WHY_TERM.search(question.strip())
    if m is None:
        return None
    term = _TERM_END.split(m["term"], maxsplit=1)[0].strip(" .`'\"")
    term = re.sub(r"^(?:the|a|an|our)\s+", "", term, flags=re.I).lower()
    return term if len(term) >= 2 and len(term.split()) <= 3 else None


async def by_term(ctx: SearchContext, order: list[str]) -> list[str] | None:
    """``order`` with the records naming the question's term first ("why do we use Piscina?":
    the one record that names Piscina, though the fused order ranked others above it, or a
    title closer to the question), those naming it in their title before the rest; None when
    the term is named by none or by more than ``TERM_RECORDS`` records."""
    term = why_term(ctx.query)
    if term is None:
        return None
    rows = await ctx.reader.rows("retrieval/decisions_mentioning", ctx.scope, terms=[term],
                                 limit=TERM_RECORDS + 1)
    word = re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.I)
    naming = [r for r in rows if word.search(str(r["props"].get("text") or ""))
              or word.search(str(r["entity"].get("name") or ""))]
    if not naming or len(naming) > TERM_RECORDS:
        return None
    rank = {c: i for i, c in enumerate(order)}
    first = sorted(naming, key=lambda r: (not word.search(str(r["entity"].get("name") or "")),
                                          rank.get(r["entity"]["ceid"], len(rank)),
                                          r["entity"]["ceid"]))
    return list(dict.fromkeys([*(r["entity"]["ceid"] for r in first), *order]))


def commit_of(provenance: list[str]) -> tuple[int, str]:
    """(title line, commit) from a provenance ref ``path#L12@abc1234``."""
    for ref in provenance:
        m = _COMMIT.search(ref)
        line = re.search(r"#L(\d+)", ref)
        if m:
            return (int(line.group(1)) if line else 1), m.group(1)
    return 1, ""


def boost(sentence: Sentence) -> float:
    """What a sentence's place and wording add to its relevance: the decision sections
    (Decision, Decision outcome, Chosen option; drivers are forces, not the decision),
    reason-giving words and the lists a lead-in announces as reasons state the "why" more
    often."""
    return ((DECISION_BOOST if sentence.section in DECISION_SECTIONS else 0.0)
            + (REASON_BOOST if sentence.listed or _REASON.search(sentence.text) else 0.0))


def git_source(sources: Any) -> str | None:
    return next((str(s) for s in sources or [] if str(s).startswith("git:")), None)


# "which decisions are superseded or deprecated?", "list the ADRs that are still open": a
# list of records, which the graph reading or the listings answer (not one record's "why")
_RECORDS_LIST = re.compile(
    r"^\W*(?:which|what|list|show(?:\s+me)?|name)\s+(?:all\s+)?(?:the\s+|our\s+)?"
    r"(?:architecture\s+)?(?:decisions|adrs|(?:decision\s+)?records)\s+"
    r"(?:(?:that|which)\s+)?(?:are|were|have\s+been|still)\b", re.I)


def asks_for_records(question: str) -> bool:
    """A question for a list of decision records, not for one record's rationale."""
    return _RECORDS_LIST.search(question) is not None and not re.search(r"\bwhy\b", question,
                                                                         re.I)


async def rationale(ctx: SearchContext, fused: list[Hit], reranker: Reranker
                    ) -> StrategyResult | None:
    """The quotes of the best-ranked ADR, or None when no ADR was retrieved, or when the
    question asks for a list of records (one record's rationale is no answer to it)."""
    if asks_for_records(ctx.query):
        return None
    order = _adr_order(ctx.query, ctx.seeds, fused)[:CANDIDATES]
    if not order:
        return None
    named = bool(_ADR_NUMBER.search(ctx.query))
    oldest = None if named else recency(ctx.query)
    if oldest is not None:  # "why was the latest ADR written?": the newest record by date
        dated = ordered(await ctx.reader.rows("retrieval/decisions_by_date", ctx.scope,
                                              limit=MAX_RECORDS), oldest)
        order, named = [*(r["entity"]["ceid"] for r in dated[:1]), *order], bool(dated)
    termed = None if named else await by_term(ctx, order)
    order = termed or order
    rows = await ctx.reader.rows("retrieval/decision_text", ctx.scope, ceids=order)
    by_ceid = {r["entity"]["ceid"]: r for r in rows}
    if not named and termed is None:  # no record names the term: the closest title
        order = await by_title(ctx.query, order, by_ceid, reranker)
    for ceid in order:
        row = by_ceid.get(ceid)
        if row is None or not row["props"].get("text"):
            continue
        props = row["props"]
        line, commit = commit_of(list(props.get("provenance") or []))
        # the text is the file as of the read's snapshot: its lines cite that commit (the
        # provenance's commit is the title line's and may predate later edits of the body)
        read_at = await commit_at(ctx.settings, ctx.scope.tenant, ctx.scope.version,
                                  git_source(props.get("sources")))
        commit = read_at[:7] if read_at else commit
        found = sentences(str(props["text"]), line, str(row["entity"].get("name") or ""))
        if not found:
            continue
        outcome = await reranker.rerank(ctx.query, [s.text for s in found], None)
        scored = sorted(((r.score + boost(found[r.index]), found[r.index])
                         for r in outcome.results), key=lambda x: -x[0])
        quotes = select(found, [s for _, s in scored])
        result = StrategyResult("rationale")
        written = written_status(str(props["text"]), first_text_line(
            str(props["text"]), line, str(row["entity"].get("name") or "")))
        result.facts.append({
            "adr": row["entity"], "status": props.get("status"), "date": props.get("date"),
            "status_text": props.get("status_text") or (written[0] if written else None),
            "status_ref": f"{props.get('path')}#L{written[1]}@{commit}" if written else None,
            "path": props.get("path"), "commit": commit,
            "superseded_by": [x for x in row.get("superseded_by") or [] if x],
            "quotes": [{"section": s.section, "line": s.line, "text": s.text,
                        "evidence_ref": f"{props.get('path')}#{s.lines()}@{commit}"}
                       for s in quotes],
            "scores": [round(float(sc), 4) for sc, _ in scored[:QUOTES]]})
        return result
    return None
