"""A question no family answers, best matched by a README or a documentation page ("how do I
run the tests?", "how is the app deployed?"): the page's sentences closest to the question,
quoted with the lines they stand on (no model).

The first ``PAGES`` pages among the fused order's first ``TOP`` hits (its Documents, those of
its Chunks, and the README of a service's or module's folder or a repository's root README
among them: "how do I run the end-to-end tests?" finds the ``e2e`` module first; an ADR is
:mod:`rationale`'s; a service with no README is no page) are read back with their text, cut
into sentences under every heading (:func:`~substrate.retrieval.adr_text.sentences`, a fenced
command block being one; of a page found by its chunks, those in the chunks only). The reranker
scores them all against the question (one holding a command, or leading to one within
``COMMAND_REACH`` sentences of its section, scores ``COMMAND_BOOST`` more when the question
asks how to do something); the page of the best one answers, with its best ``QUOTES`` within
``CLOSE`` of the first, quoted in page order, each citing ``path#L<line>@<commit>`` (the commit
the read's snapshot holds). A page is quoted only when its title and quotes (with their
headings) share a third of the question's content words
(:func:`~substrate.retrieval.rationale.on_topic`).
"""

from __future__ import annotations

import re
from typing import Any

from substrate.connectors.markdown import fenced_lines
from substrate.retrieval.adr_text import Sentence, sentences
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.rationale import (
    Reranker,
    commit_of,
    content_words,
    git_source,
    is_decision,
    on_topic,
)
from substrate.retrieval.time_scope import commit_at

NAME = "page_quotes"
TOP = 8  # the fused hits pages are looked for among ...
PAGES = 3  # ... and how many of the pages found, in the fused order, are read
QUOTES = 3
CLOSE = 0.75  # a sentence is quoted beside the best one when it scores this share of it
MAX_SENTENCES = 200  # of one page, scored (a long page's matched chunks are far fewer)
TEXT_TOP = 3  # the first hits of each text strategy whose pages are read after the fused's
COMMAND_BOOST = 0.1  # a sentence holding a command, for a how-to question
COMMAND_REACH = 4  # sentences after a quote searched for the command it leads to (a
# prerequisites line and its list item may stand between)
HOW_TO = re.compile(r"^\W*how\s+(?:do|does|can|could|should|would|to|are|is)\b"
                    r"|\b(?:commands?|steps?|instructions?)\b", re.I)
# asking how to do something oneself: a page's instructions answer before a decision record
_HOW_TO_DO = re.compile(r"^\W*how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)\b"
                        r"|^\W*how\s+to\b", re.I)


# what something is: "what is Sock Shop?", "tell me about Online Boutique", "what does X do?"
_DEFINITION = re.compile(r"^\W*(?:(?:what\s+(?:is|are)|what's|tell\s+me\s+about|describe"
                         r"|explain)\b|what\s+(?:does|do)\s+.+\s+do\W*$)", re.I)


def asks_what_it_is(question: str) -> bool:
    return _DEFINITION.search(question) is not None


def asks_how_to(question: str) -> bool:
    """"How do I deploy manually?", "how to run the tests": instructions, which a page gives
    (not "how does checkout work?")."""
    return _HOW_TO_DO.search(question) is not None


# entities whose source folder may hold a README (a repository: its root README)
FOLDERS = ("Service", "Module", "Repository")


def is_page(hit: Hit) -> bool:
    """A hit that may lead to a page: a Document, a chunk of one that is no ADR's, a service
    or module (its folder's README), a repository (its root README)."""
    return hit.label in ("Document", *FOLDERS) or (hit.label == "Chunk" and not is_decision(hit))


def span_lines(text: str, spans: list[list[int]]) -> list[tuple[int, int]]:
    """The file lines (first, last) each character span covers."""
    return [(text.count("\n", 0, a) + 1, text.count("\n", 0, max(a, b - 1)) + 1)
            for a, b in spans]


def _candidates(row: dict[str, Any], asked: set[str], how_to: bool
                ) -> list[tuple[Sentence, float, bool]]:
    """The page's sentences, only those in the chunks that matched when chunks did (and those
    of a section whose heading shares one of the question's content words, ``asked``; for a
    how-to question, the ``COMMAND_REACH`` after each of them in its section too: the command
    a matched sentence leads to may stand in the next chunk), each with what it adds to its
    score (``COMMAND_BOOST`` for one holding or leading to a command when the question asks
    how to do something) and whether it holds a command."""
    text = str(row["props"]["text"])
    found = sentences(text, 1, every_section=True)
    spans = span_lines(text, [s for s in row.get("spans") or [] if s and None not in s])
    if spans:
        kept = {k for k, s in enumerate(found) if any(a <= s.line <= b for a, b in spans)
                or asked & content_words(s.section)}
        reach = COMMAND_REACH if how_to else 0
        kept |= {j for k in kept for j in range(k + 1, min(k + 1 + reach, len(found)))
                 if found[j].section == found[k].section}
        found = [s for k, s in enumerate(found) if k in kept]
    found = found[:MAX_SENTENCES]
    code = fenced_lines(text) if how_to else set()
    holds = [bool(code.intersection(range(s.line, max(s.line, s.last) + 1))) for s in found]
    return [(s, COMMAND_BOOST if leads_to_command(found, holds, k) else 0.0, holds[k])
            for k, s in enumerate(found)]


def leads_to_command(found: list[Sentence], holds: list[bool], k: int) -> bool:
    """Whether sentence ``k`` holds a command or leads to one: a command among the
    ``COMMAND_REACH`` sentences after it in its section (what :func:`with_command` quotes
    with it). "This deployment method will run the application on your local machine" leads
    to "docker compose up" after its prerequisites."""
    if holds[k]:
        return True
    for j in range(k + 1, min(k + 1 + COMMAND_REACH, len(found))):
        if found[j].section != found[k].section:
            return False
        if holds[j]:
            return True
    return False


async def quoted_page(ctx: SearchContext, fused: list[Hit], reranker: Reranker,
                      text_hits: list[Hit] | None = None) -> StrategyResult | None:
    """The quotes of the page whose sentence is closest to the question among the pages of
    the first hits (the next page when its quotes are not on the question's topic), or None.
    A service or module the question names brings its folder's README first, and that page
    alone answers when there is one on the question's topic (else the other pages do: a
    comment beside its code, ``connectors.code_comments``); a repository it names (by its
    README's title) brings its root README first, alone when the question asks what it is
    ("what is Sock Shop?"), beside the other pages when it asks something else ("how do I run
    Sock Shop locally?").

    ``text_hits``: the first hits of the text strategies (keyword, vector), whose pages come
    after the fused order's: when the graph strategies' neighbours of a named entity fill the
    fused order (the repository's services), the page that matched the words is still read."""
    named = [str(s["ceid"]) for s in ctx.seeds if s.get("label") in FOLDERS]
    pages = list(dict.fromkeys([*named, *(h.id for h in fused[:TOP] if is_page(h)),
                                *(h.id for h in text_hits or () if is_page(h))]))
    if not pages:
        return None
    rows = await ctx.reader.rows("retrieval/document_text", ctx.scope, ceids=pages)
    # the page of what the question names: a service's or module's README; a repository's
    # root README when asked what it is ("what is Sock Shop?"), not how to do something with it
    owners = ("Service", "Module", "Repository") if asks_what_it_is(ctx.query) \
        else ("Service", "Module")
    folders = {str(s["ceid"]) for s in ctx.seeds if s.get("label") in owners}
    own = [r for r in rows if set(r["via"]) & folders]
    # "how do I run the cart service?": cart's own README; else the first pages (the rows
    # come in the order of their first mention: "what is Sock Shop?" reads the repository's
    # README first, and its documentation pages after)
    if own:  # its own page alone, when on the question's topic; else the other pages
        quoted = await _best(ctx, own[:1], reranker)
        if quoted is not None:
            return quoted
    return await _best(ctx, [r for r in rows if r not in own[:1]][:PAGES], reranker)


async def _best(ctx: SearchContext, rows: list[dict[str, Any]], reranker: Reranker
                ) -> StrategyResult | None:
    """The quotes of the page of ``rows`` whose sentence is closest to the question, or of
    the next page when its quotes are not on the question's topic; None: none is."""
    how_to, asked = HOW_TO.search(ctx.query) is not None, content_words(ctx.query)
    found = [(i, s, add, holds) for i, row in enumerate(rows)
             for s, add, holds in _candidates(row, asked, how_to)]
    if not found:
        return None
    outcome = await reranker.rerank(  # a sentence is read under its heading
        ctx.query, [f"{s.section}: {s.text}" if s.section else s.text for _, s, _, _ in found],
        None)
    # (score with the command boost, the reranker's own score, (page, sentence))
    scored = sorted(((float(r.score) + found[r.index][2], float(r.score), found[r.index][:2])
                     for r in outcome.results), key=lambda x: -x[0])
    for page_at in dict.fromkeys(i for _, _, (i, _) in scored):  # by each page's best sentence
        mine = [(score, raw, s) for score, raw, (i, s) in scored if i == page_at]
        best = mine[0][0]
        chosen = sorted((s for score, _, s in mine[:QUOTES] if score >= CLOSE * best),
                        key=lambda s: s.line) if best > 0 else [mine[0][2]]
        if how_to:
            chosen = with_command(chosen, mine[0][2],
                                  [(s, holds) for i, s, _, holds in found if i == page_at])
        if on_topic(ctx.query, {"adr": rows[page_at]["entity"],  # under their headings
                                "quotes": [{"text": f"{s.section} {s.text}"} for s in chosen]}):
            # the calibration reads the reranker's scores, not the boost
            return await _quoted(ctx, rows[page_at], chosen, [raw for _, raw, _ in mine[:QUOTES]])
    return None


def with_command(chosen: list[Sentence], best: Sentence,
                 page: list[tuple[Sentence, bool]]) -> list[Sentence]:
    """How-to quotes with the command they lead to (``page``: the page's sentences in order,
    each with whether it holds a command): quotes holding none go on to the first command
    among the ``COMMAND_REACH`` sentences after the best one in its section ("A convenience
    script is provided to make it easier to run the load generator" goes on "Run the
    following command ...: bash scripts/run-docker.sh --help"); then, holding one, they go
    on to the next step, the next command within that reach of their last one in its section
    (Robot Shop's "You can run it locally for testing", then "pull down those images first
    using: docker-compose pull", then "Fire up Stan's Robot Shop with: docker-compose up")."""
    if not any(command for s, command in page if s in chosen):
        chosen = _next_command(chosen, best, page)  # the command the best quote leads to
    commands = [s for s, command in page if command and s in chosen]
    return _next_command(chosen, max(commands, key=lambda s: s.line), page) if commands \
        else chosen


def _next_command(chosen: list[Sentence], after: Sentence,
                  page: list[tuple[Sentence, bool]]) -> list[Sentence]:
    """``chosen`` with the first command among the ``COMMAND_REACH`` sentences after
    ``after`` in its section, when there is one it lacks."""
    at = next((k for k, (s, _) in enumerate(page) if s is after), None)
    if at is None:
        return chosen
    for s, command in page[at + 1 : at + 1 + COMMAND_REACH]:
        if s.section != after.section:
            break
        if command and s not in chosen:
            return sorted([*chosen, s], key=lambda x: x.line)
    return chosen


async def _quoted(ctx: SearchContext, row: dict[str, Any], chosen: list[Sentence],
                  scores: list[float]) -> StrategyResult:
    props: dict[str, Any] = row["props"]
    _, commit = commit_of(list(props.get("provenance") or []))
    read_at = await commit_at(ctx.settings, ctx.scope.tenant, ctx.scope.version,
                              git_source(props.get("sources")))
    commit = read_at[:7] if read_at else commit
    fact = {"document": row["entity"], "path": props.get("path"), "kind": props.get("kind"),
            "commit": commit,
            "quotes": [{"section": s.section, "line": s.line, "text": s.text,
                        "evidence_ref": f"{props.get('path')}#{s.lines()}@{commit}"}
                       for s in chosen],
            "scores": [round(score, 4) for score in scores]}
    result = StrategyResult(NAME)
    result.facts.append(fact)
    return result
