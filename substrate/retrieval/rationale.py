"""Decision rationale with no model (RSN-UC-05): the sentences of the ADR that answer "why".

After fusion and reranking, the first architecture decision record among the results (an ADR
hit, or a chunk of one; an ADR the question names comes first) is read back from the graph:
its text (the body lines the ADR connector kept), path, status, date and the commit of its
provenance. The text is cut into sentences by section — Context, Decision (MADR's "Decision
Outcome"), Consequences, Considerations, Rationale — each sentence keeping the file line it
starts on, so it cites as ``path#L<line>@<commit>``. The reranker scores every sentence
against the question; the best ``QUOTES`` are quoted in document order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from substrate.retrieval.context import Hit, SearchContext, StrategyResult

QUOTES = 3
SECTIONS = re.compile(r"^(context|decision(?:\s+outcome)?|the decision|chosen option"
                      r"|consequences|considerations|rationale|reasons?)\b", re.I)
DECISION_BOOST = 0.1  # a Decision sentence states the reason more often than a Context one
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


def clean(text: str) -> str:
    """Markdown emphasis, links and code ticks removed; whitespace collapsed."""
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"[*_`]{1,3}", "", text)
    return " ".join(text.split())


def _first_line(text: str, path_line: int, title: str) -> int:
    """File line of the text's first line: the title heading sits on the provenance's line."""
    for i, line in enumerate(text.splitlines()):
        m = _HEADING.match(line)
        if m and (not title or clean(title).lower() in clean(m.group(2)).lower()):
            return path_line - i
    return 1


def _paragraphs(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Paragraphs and list items, each with the file line it starts on."""
    out: list[tuple[int, str]] = []
    current: list[tuple[int, str]] = []
    for no, text in [*lines, (0, "")]:
        starts_item = bool(_BULLET.match(text))
        if not text.strip() or starts_item:
            if current:
                out.append((current[0][0], " ".join(t.strip() for _, t in current)))
            current = [(no, _BULLET.sub("", text))] if starts_item else []
        else:
            current.append((no, text))
    return out


def sentences(text: str, title_line: int, title: str = "") -> list[Sentence]:
    """The sentences of the reason-giving sections, with the file line each starts on."""
    first = _first_line(text, title_line, title)
    section: str | None = None
    body: dict[str, list[tuple[int, str]]] = {}
    for i, line in enumerate(text.splitlines()):
        m = _HEADING.match(line)
        if m:
            found = SECTIONS.match(clean(m.group(2)))
            section = found.group(1).capitalize() if found and len(m.group(1)) > 1 else None
            continue
        if section is not None:
            body.setdefault(section, []).append((first + i, line))
    out = []
    for name, lines in body.items():
        for no, para in _paragraphs(lines):
            for piece in _SENTENCE_END.split(para):
                words = clean(piece)
                if len(words) >= 12 and any(c.isalpha() for c in words):
                    out.append(Sentence(name, no, words))
    return out


_ADR_NUMBER = re.compile(r"\b(?:adr|decision(?:\s+record)?)[-\s#]*0*(\d{1,4})\b", re.I)


def _adr_order(query: str, seeds: list[dict[str, Any]], fused: list[Hit]) -> list[str]:
    """ADRs the question names by number first ("ADR 21"), then in the fused order."""
    numbers = {int(n) for n in _ADR_NUMBER.findall(query)}
    named = [s["ceid"] for s in seeds if s.get("label") == "DecisionNode"
             and s["ceid"].rsplit(":", 1)[-1].isdigit()
             and int(s["ceid"].rsplit(":", 1)[-1]) in numbers]
    named += [f"adr:{n:04d}" for n in sorted(numbers)]
    hits = [h.id if h.label == "DecisionNode" else h.name for h in fused
            if h.label == "DecisionNode" or (h.label == "Chunk" and h.name.startswith("adr:"))]
    return list(dict.fromkeys([*named, *hits]))


def commit_of(provenance: list[str]) -> tuple[int, str]:
    """(title line, commit) from a provenance ref ``path#L12@abc1234``."""
    for ref in provenance:
        m = _COMMIT.search(ref)
        line = re.search(r"#L(\d+)", ref)
        if m:
            return (int(line.group(1)) if line else 1), m.group(1)
    return 1, ""


async def rationale(ctx: SearchContext, fused: list[Hit], reranker: Reranker
                    ) -> StrategyResult | None:
    """The quotes of the best-ranked ADR, or None when no ADR was retrieved."""
    order = _adr_order(ctx.query, ctx.seeds, fused)[:3]
    if not order:
        return None
    rows = await ctx.reader.rows("retrieval/decision_text", ctx.scope, ceids=order)
    by_ceid = {r["entity"]["ceid"]: r for r in rows}
    for ceid in order:
        row = by_ceid.get(ceid)
        if row is None or not row["props"].get("text"):
            continue
        props = row["props"]
        line, commit = commit_of(list(props.get("provenance") or []))
        found = sentences(str(props["text"]), line, str(row["entity"].get("name") or ""))
        if not found:
            continue
        outcome = await reranker.rerank(ctx.query, [s.text for s in found], None)
        scored = sorted(((r.score + (DECISION_BOOST if found[r.index].section.startswith(
            "Decision") else 0.0), found[r.index]) for r in outcome.results),
            key=lambda x: -x[0])[:QUOTES]
        quotes = sorted((s for _, s in scored), key=lambda s: s.line)
        result = StrategyResult("rationale")
        result.facts.append({
            "adr": row["entity"], "status": props.get("status"), "date": props.get("date"),
            "path": props.get("path"), "commit": commit,
            "quotes": [{"section": s.section, "line": s.line, "text": s.text,
                        "evidence_ref": f"{props.get('path')}#L{s.line}@{commit}"}
                       for s in quotes],
            "scores": [round(float(sc), 4) for sc, _ in scored]})
        return result
    return None
