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
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Protocol

import snowballstemmer

from substrate.retrieval.adr_text import (
    QUOTES,
    boost,
    first_text_line,
    select,
    sentences,
    written_status,
)
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.decision_dates import MAX_RECORDS, ordered, recency
from substrate.retrieval.mentions import ADR_REF
from substrate.retrieval.relevance import STOPWORDS
from substrate.retrieval.time_scope import commit_at

_COMMIT = re.compile(r"@([0-9a-f]{7,40})$")


class Reranker(Protocol):
    async def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None
                     ) -> Any: ...


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


_STEMMER = snowballstemmer.stemmer("english")  # stateful: one word at a time
_STEM_LOCK = threading.Lock()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English Snowball stem of a lower-case word ("deploying", "deploys" -> "deploy")."""
    with _STEM_LOCK:
        return str(_STEMMER.stemWord(word))


def content_words(text: str) -> set[str]:
    """The stems of the text's words less stop words and the words of any decision question
    ("Django-FSM" gives django, fsm; "Deploying manually" deploy, manual)."""
    return {stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _NOT_CONTENT}


def on_topic(question: str, fact: dict[str, Any], common: frozenset[str] = frozenset()
             ) -> bool:
    """Do a record's title and quotes (a ``rationale`` fact) share at least a third of the
    question's content words (one at least), ``common`` words and the graph's own vocabulary
    (:data:`GRAPH_WORDS`) left out? A question no family
    answers is quoted from the best-ranked ADR only then: "which Kafka topics does the API
    publish to?" is not answered by an ADR on feature flags that mentions the API once, nor
    "which PostgreSQL version does the platform use?" by one on network access where every
    record says "platform"."""
    asked = content_words(question) - common - GRAPH_WORDS
    said = content_words(" ".join([str((fact.get("adr") or {}).get("name") or ""),
                                   *(str(q.get("text") or "") for q in fact.get("quotes") or [])]))
    return bool(asked) and len(asked & said) >= max(1, -(-len(asked) // 3))


# the graph's own vocabulary: a question whose content is only these ("list services with no
# owner") asks the graph, and a record or page naming them does not answer it
GRAPH_WORDS = frozenset(map(stem, (
    "service", "team", "owner", "own", "depend", "dependency", "call", "datastore",
    "component", "module", "system", "list", "show")))
COMMON_SHARE = 0.5  # a word more than this share of the records name is common ...
COMMON_MIN_RECORDS = 4  # ... when there are at least this many records


async def common_words(ctx: SearchContext) -> frozenset[str]:
    """The question's content words that most decision records name (:data:`COMMON_SHARE`):
    the project's own name, "platform", "service"."""
    words = sorted(content_words(ctx.query))
    if not words:
        return frozenset()
    rows = await ctx.reader.rows("retrieval/decision_word_spread", ctx.scope, words=words)
    records = int(rows[0]["records"]) if rows else 0
    if records < COMMON_MIN_RECORDS:
        return frozenset()
    return frozenset(str(x["word"]) for x in rows[0]["spread"]
                     if int(x["records"]) > COMMON_SHARE * records)


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


# a record's metadata line ("Date: 2021-07-14", "Status: accepted"): no reason
_METADATA = re.compile(r"^(?:date|status|deciders?|authors?|technical\s+story|tags?)\s*:", re.I)


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
        found = sentences(str(props["text"]), line, str(row["entity"].get("name") or "")) \
            or [s for s in sentences(str(props["text"]), line, every_section=True)
                if not _METADATA.match(s.text)]  # a record with no Context/Decision headings
        # (rubyforgood/casa's "# 1. System tests are preferred ..." then its prose): its
        # paragraphs, not the next record's
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


# a question about leaving what a record decided, or about what holds now: the record that
# superseded it answers ("why did we move away from ECR?" is ADR 28's, not ADR 12's)
_IN_FORCE = re.compile(r"\b(?:move[ds]?|moving|switch(?:ed|es|ing)?|migrat\w+)\s+(?:away\s+)?"
                       r"(?:from|off)\b|\b(?:stop(?:ped)?|quit)\s+using\b|\bmove[ds]?\s+away\b"
                       r"|\breplac(?:e|ed|es|ing)\b|\bno\s+longer\b|\bin\s+force\b"
                       r"|\b(?:currently|now)\b|\bcurrent\s+(?:decision|approach|policy|choice)",
                       re.I)


def asks_in_force(question: str) -> bool:
    """"Why did we move away from ECR?", "what do we use for CI now?": the record in force."""
    return _IN_FORCE.search(question) is not None


async def in_force(ctx: SearchContext, quoted: StrategyResult | None,
                    reranker: Any) -> StrategyResult | None:
    """The record in force in place of a superseded one ("what are the team's core
    languages?" matched ADR 4, which ADR 19 superseded): the later record's quotes, saying
    which one it replaced; ``quoted`` itself when none replaced it or it has no text."""
    fact = quoted.facts[0] if quoted is not None and quoted.facts else None
    newer = [x for x in (fact or {}).get("superseded_by") or []
             if x.get("status") in (None, "accepted", "superseded")]
    if fact is None or not newer:
        return quoted
    entity = newer[0]["entity"]
    later = await rationale(ctx, [Hit(str(entity["ceid"]), str(entity.get("name") or ""),
                                      "DecisionNode", "", 1.0)], reranker)
    if later is None or not later.facts:
        return quoted
    later.facts[0]["replaces"] = {"adr": fact["adr"], "hop": newer[0]["hop"]}
    return later


async def unasked(ctx: SearchContext, fused: list[Hit], reranker: Reranker
                  ) -> StrategyResult | None:
    """An ADR answering a question no family took ("what is our backup strategy?"): when the
    best match is a record (or a chunk of one), the sentences of the record in force closest
    to the question, if it shares a third of the question's content words that most records
    do not name (:func:`on_topic`, :func:`common_words`); None otherwise."""
    if not fused or not is_decision(fused[0]):
        return None
    quoted = await in_force(ctx, await rationale(ctx, fused[:1], reranker), reranker)
    if quoted is None or not quoted.facts \
            or not on_topic(ctx.query, quoted.facts[0], await common_words(ctx)):
        return None
    return quoted
