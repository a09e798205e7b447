""""Which decisions mention Redis?": the decision records whose title or text names a term,
each cited at the first line that names it. The term need not be an entity of the graph (a
library, a product, a practice: "Piscina", "MongoDB", "feature flags"), so the records' own
text is searched, whole words only ("redis" is not "rediscovered")."""

from __future__ import annotations

import re
from typing import Any

from substrate.retrieval.adr_text import first_text_line
from substrate.retrieval.context import Hit, SearchContext, StrategyResult
from substrate.retrieval.rationale import commit_of, git_source
from substrate.retrieval.time_scope import commit_at

MAX_RECORDS = 50
LISTED = 12
ASKS = re.compile(
    r"\b(?:decisions?|adrs?|(?:decision\s+)?records?)\s+(?:that\s+|which\s+|do\s+|did\s+)?"
    r"(?:we\s+)?(?:\w+\s+)?(?:mention(?:s|ed|ing)?|referenc(?:e|es|ed|ing)|discuss(?:es|ed|ing)?"
    r"|cover(?:s|ed|ing)?|talk(?:s|ed)?\s+about|(?:are|is|were)\s+about|about|concern(?:s|ing)?"
    r"|involv(?:e|es|ing)|nam(?:e|es|ing)|cit(?:e|es|ed|ing)|refer(?:s|red)?\s+to|link(?:s|ed)?\s+to"
    r"|build(?:s)?\s+on|extend(?:s|ed)?|amend(?:s|ed)?)\s+(?P<term>[^?]+?)\s*\??$", re.I)
# "which ADRs cite ADR 14 (as a driver)?": another record, by number
_ADR_TERM = re.compile(r"^adr[-\s#]?0*(\d+)\b", re.I)
_ARTICLE = re.compile(r"^(?:the|a|an|our|any)\s+", re.I)


_ONE_DECISION = re.compile(r"\bthe\s+(?:decision|adr|record)\s+(?:about|on|for|to|regarding)\b",
                           re.I)
_OR = re.compile(r"\s*(?:/|,|\bor\b|\band\b|\bvs\.?|\bversus\b)\s*", re.I)


def asked_term(question: str) -> str | None:
    """The term of a "which decisions mention X" question, lower case (``adr 14`` for another
    record, whatever follows it); None otherwise, and for a question about one decision ("the
    status of the decision about X": the rationale answers it)."""
    m = ASKS.search(question.strip())
    if m is None or _ONE_DECISION.search(question):
        return None
    term = _ARTICLE.sub("", m["term"].strip(" .`'\"")).strip(" .`'\"").lower()
    ref = _ADR_TERM.match(term)
    if ref is not None:
        return f"adr {int(ref.group(1))}"
    return term if len(term) >= 2 else None


def alternatives(term: str) -> list[str]:
    """The terms a question names as alternatives ("argo / argocd", "redis or memcached"),
    each also in the other number ("sessions" names "session" too, "feature flag" "feature
    flags")."""
    named = [t for t in _OR.split(term) if len(t) >= 2] or [term]
    return list(dict.fromkeys(v for t in named for v in (t, other_number(t)) if v))


def other_number(term: str) -> str | None:
    """The term with its last word in the other number, by the regular English endings
    (None when that would guess: "redis", "status", "class" keep their s)."""
    head, _, word = term.rpartition(" ")
    if len(word) < 3 or not word.isalpha():
        return None
    if word.endswith("ies") and len(word) > 4:
        other = word[:-3] + "y"
    elif word.endswith(("ss", "us", "is", "ics")):
        return None
    elif word.endswith("s"):
        other = word[:-1]
    elif word.endswith("y") and word[-2:-1] not in "aeiou":
        other = word[:-1] + "ies"
    else:
        other = word + ("es" if word.endswith(("ch", "sh", "x")) else "s")
    return f"{head} {other}" if head else other


def naming(term: str) -> re.Pattern[str]:
    """What names the term in a record's text: the word (any of its alternatives), or for
    ``adr N`` a reference to that record as the connector reads one ("ADR-0014", "ADR 14",
    "[x](0014-y.md)")."""
    ref = _ADR_TERM.match(term)
    if ref is not None:
        n = int(ref.group(1))
        return re.compile(rf"\bADR[-\s#]?0*{n}\b|\]\((?:[^)]*/)?0*{n}-[^)]*\)", re.I)
    words = "|".join(re.escape(t) for t in alternatives(term))
    return re.compile(rf"(?<![\w-])(?:{words})(?![\w-])", re.I)


def first_naming_line(text: str, term: str) -> tuple[int, str] | None:
    """(index, line) of the text's first line naming ``term`` (a whole word, or a reference
    to the record ``adr N``)."""
    word = naming(term)
    for i, line in enumerate(text.splitlines()):
        if word.search(line):
            return i, line.strip()
    return None


def _excerpt(line: str, term: str, width: int = 110) -> str:
    line = re.sub(r"^[#>*\-\s]+", "", line)
    found = naming(term).search(line)
    at = found.start() if found else 0
    start = max(0, at - width // 2) if len(line) > width else 0
    cut = line[start:start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(line) else "")


async def decisions_mentioning(ctx: SearchContext) -> StrategyResult | None:
    """The records naming the question's term, or None when the question asks no such list."""
    term = asked_term(ctx.query)
    if term is None:
        return None
    other = _ADR_TERM.match(term)
    rows = await ctx.reader.rows("retrieval/decisions_mentioning", ctx.scope,
                                 terms=[str(int(other.group(1)))] if other else alternatives(term),
                                 limit=MAX_RECORDS)
    itself = f"adr:{int(other.group(1)):04d}" if other else None
    result = StrategyResult("decision_mentions")
    found: list[dict[str, Any]] = []
    commits: dict[str | None, str | None] = {}
    for row in rows:
        props, entity = row["props"], row["entity"]
        text, title = str(props.get("text") or ""), str(entity.get("name") or "")
        title_line, commit = commit_of(list(props.get("provenance") or []))
        at = first_naming_line(text, term)
        if entity["ceid"] == itself or (at is None and not naming(term).search(title)):
            continue  # a part of a longer word only, or the record asked about itself
        source = git_source(props.get("sources"))
        if source not in commits:  # the text is the file as of the read's snapshot
            commits[source] = await commit_at(ctx.settings, ctx.scope.tenant,
                                              ctx.scope.version, source)
        commit = (commits[source] or commit)[:7]
        line = first_text_line(text, title_line, title) + at[0] if at else title_line
        ref = f"{props.get('path')}#L{line}@{commit}"
        found.append({"adr": entity, "status": props.get("status"), "date": props.get("date"),
                      "line": _excerpt(at[1], term) if at else title,
                      "hop": {"type": "MENTIONS", "from": entity["ceid"], "to": term,
                              "evidence_ref": ref, "source": source or "git",
                              "confidence": 1.0}})
    # the records whose title names the term first ("Session storage using JWT" before a
    # record that lists "sessions" among other things), each group in the query's order
    word = naming(term)
    found.sort(key=lambda f: word.search(str(f["adr"].get("name") or "")) is None)
    for rank, f in enumerate(found[:LISTED]):
        result.hits.append(Hit(f["adr"]["ceid"], str(f["adr"].get("name") or ""),
                               "DecisionNode", f["line"], 1.0 / (1 + rank)))
        result.hops.append({**f["hop"], "hop": 1})
    result.truncated = len(found) > LISTED
    result.facts.append({"term": term, "records": found[:LISTED], "total": len(found)})
    return result
