"""Entity mentions in a question, the strings to look them up by, and safe Lucene queries.

Mentions are found by surface form only (no model): quoted names, CamelCase and kebab/snake
identifiers (``PaymentService``, ``ADR-047``, ``payment_api``), the words before "service"
("the checkout service" -> ``checkout``), the object of a relation verb ("services calling
auth" -> ``auth``) and capitalised words inside a sentence. The graph decides which of them
are real: every candidate is looked up in the full-text index with ``fuzzy_query``.

``fuzzy_query`` never passes user text to the Lucene parser as syntax: a mention is cut into
``\\w+`` terms (lower-cased, so ``AND``/``OR``/``NOT`` cannot act as operators), and every term
is still escaped, so no special character can survive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from substrate.errors import BadRequest
from substrate.graph.records import slug

from .timephrases import MONTH_NAMES, MONTHS, WEEKDAYS

_STOP_WORDS = """
a about above after all also an and any are as at be been before being below between both but
by can could did do does doing down during each every few for from had has have having he her
here hers him his how i if in into is it its just last me more most my no nor not now of off on
once only or other our ours out over own same she should so some such than that the their them
then there these they this those through to too under until up very was we were what when where
which while who whom whose why will with would you your yours us
service services microservice microservices system systems component components team teams
calling call calls called owns own owned owner owners depend depends depending uses use using
affect affects affected directly indirectly transitively find show list give tell get epic
epics risk risks top graph state change changes changed decision decisions made happen happened
incident incidents outage outages today yesterday week weeks day days ago please
"""
_STOP = frozenset(_STOP_WORDS.split()) | frozenset(WEEKDAYS + MONTHS + MONTH_NAMES)

_HYPHENATED_WORDS = frozenset({"point-in-time", "on-call", "post-mortem", "single-valued",
                               "low-confidence", "read-only", "up-to-date", "end-to-end",
                               "follow-up", "e-mail", "multi-hop", "real-time"})

_QUOTED = re.compile(r"\"([^\"\n]{1,80})\"|(?<!\w)'([^'\n]{1,80})'(?!\w)|`([^`\n]{1,80})`"
                     r"|“([^”\n]{1,80})”|‘([^’\n]{1,80})’")
_WORD = re.compile(r"[A-Za-z][\w]*(?:[-.][A-Za-z0-9][\w]*)*")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_BEFORE_SERVICE = re.compile(r"((?:[\w-]+\s+)?[\w-]+)\s+(?:micro)?services?\b", re.I)
_VERB_OBJECT = re.compile(
    r"\b(?:calls?|calling|called\s+by|invoke[sd]?|invoking|depends?\s+on|depending\s+on"
    r"|relies\s+on|owns|owners?\s+of|callers?\s+of|dependenc(?:y|ies)\s+of|uses|using"
    r"|affect(?:s|ed)?|about)\s+(?:the\s+)?([A-Za-z][\w.-]*)", re.I)
_SUBJECT = re.compile(
    r"\b(?:does|did|do|will|would|can)\s+(?:the\s+)?([A-Za-z][\w.-]*)\s+"
    r"(?:depend|use|call|need|require|rely|talk|connect|own|affect)", re.I)
_SENTENCE_START = re.compile(r"(?:^|[.?!:;]\s+)$")
# a decision record by its number ("ADR 46", "ADR-0046", "decision record 7"): the connector's
# id for it (adr:0046), in place of the bare word "ADR"
ADR_REF = re.compile(r"\b(?:adr|decision(?:\s+record)?)[-\s#]*0*(\d{1,4})\b", re.I)
_ADR_WORD = frozenset({"adr", "adrs", "decision", "record"})

MAX_TERMS = 8
MAX_TERM_LENGTH = 64
_LUCENE_SPECIAL = frozenset('+-&|!(){}[]^"~*?:\\/')
_LUCENE_WORD_OPERATORS = frozenset({"AND", "OR", "NOT", "TO"})


def _is_identifier(word: str) -> bool:
    if word.lower() in _HYPHENATED_WORDS:
        return False
    return bool(_CAMEL.search(word)) or any(c in word for c in "-_.")


def _service_phrases(question: str) -> Iterable[tuple[int, str]]:
    for m in _BEFORE_SERVICE.finditer(question):
        words = m.group(1).split()
        while words and words[0].lower() in _STOP:
            words.pop(0)
        if words and words[-1].lower() not in _STOP:
            yield m.start(1), " ".join(words)


def _word_mentions(question: str) -> Iterable[tuple[int, str]]:
    for m in _WORD.finditer(question):
        word = m.group(0).rstrip(".")
        capitalised = (word[0].isupper() and len(word) > 2 and word.lower() not in _STOP
                       and not _SENTENCE_START.search(question[: m.start()]))
        if capitalised or _is_identifier(word):
            yield m.start(), word


_LEADING_QUALIFIER = re.compile(
    r"^\s*(?:in|for|within|across|inside|at)\s+(?:the\s+)?[^,?]{2,60}?,\s*", re.I)
_TRAILING_QUALIFIER = re.compile(
    r"\s+(?:in|of|for|within)\s+(?:the\s+)?[\w .-]{2,40}?\s+(?:repo(?:sitory)?|project|codebase"
    r"|organi[sz]ation|monorepo)\b"
    # the source the question means: "... the most paths in CODEOWNERS?", "according to OWNERS"
    r"|\s+(?:in|per|according\s+to|from)\s+(?:the\s+)?(?:codeowners|owners)(?:\s+file)?\b",
    re.I)


def strip_qualifiers(question: str) -> str:
    """The question without a phrase that names the tenant or repository rather than an
    entity: "In Bank of Anthos, who calls X?" -> "who calls X?"; "... in the FAC repo"."""
    return _TRAILING_QUALIFIER.sub("", _LEADING_QUALIFIER.sub("", question, count=1))


def is_stop_word(word: str) -> bool:
    return word.lower() in _STOP


def extract_mentions(question: str) -> list[str]:
    """Entity mention strings, in order of appearance, without case-insensitive repeats."""
    question = strip_qualifiers(question)
    found: list[tuple[int, str]] = []
    for m in _QUOTED.finditer(question):
        text = next(g for g in m.groups() if g is not None).strip()
        if text:
            found.append((m.start(), text))
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(question)]
    inside = [p for p in _word_mentions(question) if not any(b <= p[0] < e for b, e in quoted)]
    found += inside
    found += list(_service_phrases(question))
    found += [(m.start(1), m.group(1).rstrip(".")) for rx in (_VERB_OBJECT, _SUBJECT)
              for m in rx.finditer(question) if m.group(1).lower() not in _STOP]
    records = [(m.start(), f"adr:{int(m.group(1)):04d}") for m in ADR_REF.finditer(question)]
    if records:  # "ADR 46" is that record, not a word "ADR" and a number
        found = [f for f in found if f[1].lower() not in _ADR_WORD
                 and ADR_REF.fullmatch(f[1]) is None] + records
    return _unique(text for _, text in sorted(found, key=lambda f: f[0]))


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _variants(mention: str) -> list[str]:
    """``PaymentService`` -> PaymentService, payment service, payment-service, payment.

    ``slug`` is the one ``substrate.graph.records`` builds ceids with, so the candidate can
    also be compared with a ceid's name part.
    """
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[-_.]+", " ", mention).strip().lower()
    words = spaced.split()
    out = [mention, spaced, spaced.replace(" ", "-"), slug(mention)]
    if len(words) > 1 and words[-1] in ("service", "svc", "api"):
        out.append(" ".join(words[:-1]))
    return out


def entity_candidates(question: str, limit: int = 12) -> list[str]:
    """The strings to look up in the full-text index for ``question``, most specific first."""
    return _unique(v for m in extract_mentions(question) for v in _variants(m))[:limit]


def escape_lucene(text: str) -> str:
    """Backslash-escape every Lucene query-syntax character, and the word operators."""
    escaped = "".join("\\" + c if c in _LUCENE_SPECIAL else c for c in text)
    return re.sub(r"\b(AND|OR|NOT|TO)\b", lambda m: "\\" + m.group(0), escaped)


def _terms(mention: str) -> list[str]:
    return [t[:MAX_TERM_LENGTH] for t in re.findall(r"\w+", mention.lower())][:MAX_TERMS]


def _term_query(term: str, max_edits: int, min_fuzzy_length: int) -> str:
    t = escape_lucene(term)
    if max_edits <= 0 or len(term) < min_fuzzy_length:
        return f"{t} OR {t}*"
    return f"{t}~{max_edits} OR {t}*"


def fuzzy_query(mention: str, *, max_edits: int = 1, min_fuzzy_length: int = 4) -> str:
    """A Lucene query matching ``mention`` loosely: ``checkout`` -> ``checkout~1 OR checkout*``.

    Several terms give ``"payment gateway" OR ((payment~1 OR payment*) AND (gateway~1 OR
    gateway*))``: the exact phrase, or every term fuzzily. Terms shorter than
    ``min_fuzzy_length`` get no edit distance (``api~1`` would match ``apt``). At most
    ``MAX_TERMS`` terms of ``MAX_TERM_LENGTH`` characters are used. Raises ``BadRequest`` when
    the mention has no word characters at all.
    """
    if not 0 <= max_edits <= 2:
        raise ValueError("Lucene supports edit distances 0..2")
    terms = _terms(mention)
    if not terms:
        raise BadRequest("entity mention has no searchable words", detail={"mention": mention})
    if len(terms) == 1:
        return _term_query(terms[0], max_edits, min_fuzzy_length)
    phrase = escape_lucene(" ".join(terms))
    each = " AND ".join(f"({_term_query(t, max_edits, min_fuzzy_length)})" for t in terms)
    return f'"{phrase}" OR ({each})'


def any_of(mentions: Sequence[str], **kwargs: int) -> str:
    """One query matching any of ``mentions``; mentions without words are skipped."""
    parts = [f"({fuzzy_query(m, **kwargs)})" for m in mentions if _terms(m)]
    if not parts:
        raise BadRequest("no searchable entity mention", detail={"mentions": list(mentions)})
    return " OR ".join(parts)


# what may stand between the names of a list of subjects: "ad and checkout", "ad, and who
# owns checkout", "ad & cart", "ad or the checkout service"
_LIST_JOINERS = frozenset({",", "and", "or", "&", "plus", "also", "who", "owns", "own", "about",
                           "what", "the", "service", "services", "is", "are", "owned", "by",
                           "whom", "team", "owner", "owners", "of", "then", "as", "well"})
_LIST_WORD = re.compile(r"[\w&]+|,")


def listed_together(question: str, seeds: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """The seeds the question lists as one subject after another, in its order: the first
    named, and each next one when only joining words stand between them ("who owns ad, and
    who owns checkout?"; not "who owns checkout, which calls payment?"). Seeds carry the
    ``mention`` they were linked from; one found nowhere in the question ends the list."""
    lowered = question.lower()
    placed = []
    for seed in seeds:
        mention = str(seed.get("mention") or "").lower()
        found = re.search(rf"(?<![\w-]){re.escape(mention)}(?![\w-])", lowered) \
            if mention else None  # a whole name: not the 'ad' of 'ad-hoc'
        if found is not None:
            placed.append((found.start(), found.end(), seed))
    placed.sort(key=lambda p: p[0])
    listed = placed[:1]
    for here in placed[1:]:
        between = lowered[listed[-1][1]:here[0]]
        words = _LIST_WORD.findall(between)
        if not words or any(w not in _LIST_JOINERS for w in words):
            break
        listed.append(here)
    return [seed for _, _, seed in listed]
