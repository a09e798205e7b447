"""A question no family answers, best matched by a README or a documentation page ("how do I
run the tests?", "how is the app deployed?"): the page's sentences closest to the question,
quoted with the lines they stand on (no model).

The Documents among the fused order's first ``TOP`` hits (and those of the Chunks among
them; an ADR is :mod:`rationale`'s) are read back with their text, cut into sentences under
every heading (:func:`~substrate.retrieval.adr_text.sentences`, a fenced command block being
one; of a page found by its chunks, those in the chunks only). The reranker scores them all
against the question; the page of the best one answers, with its best ``QUOTES`` within
``CLOSE`` of the first, quoted in page order, each citing
``path#L<line>@<commit>`` (the commit the read's snapshot holds). A page is quoted only when
its title and quotes share a third of the question's content words
(:func:`~substrate.retrieval.rationale.on_topic`).
"""

from __future__ import annotations

from typing import Any

from substrate.retrieval.adr_text import Sentence, sentences
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.rationale import Reranker, commit_of, git_source, is_decision, on_topic
from substrate.retrieval.time_scope import commit_at

NAME = "page_quotes"
TOP = 3  # the fused hits a page is looked for among
QUOTES = 3
CLOSE = 0.75  # a sentence is quoted beside the best one when it scores this share of it
MAX_SENTENCES = 200  # of one page, scored (a long page's matched chunks are far fewer)


def is_page(hit: Hit) -> bool:
    """A Document hit, or a chunk of one that is no ADR's."""
    return hit.label == "Document" or (hit.label == "Chunk" and not is_decision(hit))


def span_lines(text: str, spans: list[list[int]]) -> list[tuple[int, int]]:
    """The file lines (first, last) each character span covers."""
    return [(text.count("\n", 0, a) + 1, text.count("\n", 0, max(a, b - 1)) + 1)
            for a, b in spans]


def _candidates(row: dict[str, Any]) -> list[Sentence]:
    """The page's sentences, only those in the chunks that matched when chunks did."""
    text = str(row["props"]["text"])
    found = sentences(text, 1, every_section=True)
    spans = span_lines(text, [s for s in row.get("spans") or [] if s and None not in s])
    if spans:
        found = [s for s in found if any(a <= s.line <= b for a, b in spans)]
    return found[:MAX_SENTENCES]


async def quoted_page(ctx: SearchContext, fused: list[Hit], reranker: Reranker
                      ) -> StrategyResult | None:
    """The quotes of the page whose sentence is closest to the question among the pages of
    the first hits, or None (no page there, no sentence, or not on the question's topic)."""
    pages = [h.id for h in fused[:TOP] if is_page(h)]
    if not pages:
        return None
    rows = await ctx.reader.rows("retrieval/document_text", ctx.scope, ceids=pages)
    found = [(i, s) for i, row in enumerate(rows) for s in _candidates(row)]
    if not found:
        return None
    outcome = await reranker.rerank(ctx.query, [s.text for _, s in found], None)
    scored = sorted(((float(r.score), found[r.index]) for r in outcome.results),
                    key=lambda x: -x[0])
    best, (page_at, _) = scored[0]
    mine = [(score, s) for score, (i, s) in scored if i == page_at]
    chosen = [s for score, s in mine[:QUOTES] if score >= CLOSE * best] if best > 0 \
        else [mine[0][1]]
    chosen.sort(key=lambda s: s.line)
    row = rows[page_at]
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
            "scores": [round(score, 4) for score, _ in mine[:QUOTES]]}
    if not on_topic(ctx.query, {"adr": row["entity"], "quotes": fact["quotes"]}):
        return None
    result = StrategyResult(NAME)
    result.facts.append(fact)
    return result
