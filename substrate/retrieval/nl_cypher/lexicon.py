"""The question vocabulary: words → typed tokens for the grammar (``parser``).

Function words are fixed here; nouns, verbs and adjectives of the graph come from the
``synonyms`` section of ``substrate/ontology.yaml``; entity names (names, ceid suffixes,
aliases) from the graph itself (:func:`entity_phrases`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from substrate.graph.ontology import ONTOLOGY_FILE

WORD = re.compile(r"[a-z0-9]+")
_SIGNS = ((re.compile(r"(?<=[a-z])#"), " sharp"), (re.compile(r"(?<=[a-z])\+\+"), " plus plus"))
MAX_PHRASE = 5
# "services written in Go": a stated value of these properties reads as a state of its holder
VALUE_STATES = {"language": ("{v}", "in {v}", "written in {v}", "implemented in {v}",
                             "coded in {v}", "built in {v}", "built with {v}", "{v} based")}
MAX_VALUE_WORDS = 3  # longer values and parts ("a Python sidecar for the model") are not states
_PARTS = re.compile(r"\s*(?:[/,;&|]|\band\b|\bwith\b)\s*", re.I)

# token type -> phrases (function words of English questions)
FUNCTION_WORDS: dict[str, tuple[str, ...]] = {
    "COUNT": ("how many", "number of", "the number of", "count", "count of", "count the",
              "total number of"),
    "WH": ("which", "what", "list", "list all", "show", "show me", "show all", "find",
           "find all", "give me", "get", "tell me", "return", "display", "name the",
           "what are", "which are", "are there"),
    "WHO": ("who", "whom"),
    "NEG": ("no", "not", "without", "never", "none", "dont", "don t", "doesnt", "doesn t",
            "isnt", "isn t", "arent", "aren t", "lack", "lacks", "lacking", "missing",
            "do not", "does not", "did not", "is not", "are not", "have no", "has no",
            "with no", "having no"),
    "MOST": ("most", "the most", "highest number of", "largest number of", "biggest number of",
             "greatest number of", "most heavily", "most often"),
    "LEAST": ("fewest", "the fewest", "least", "the least", "lowest number of",
              "smallest number of"),
    "TOP": ("top",),
    "THAT": ("that", "which", "who", "whose"),
    "WITH": ("with", "having", "has", "have", "had"),
    "AUX": ("do", "does", "did", "is", "are", "was", "were", "be", "been", "being", "get",
            "currently", "directly", "there", "exist", "exists", "we", "our", "us",
            "in total", "altogether", "please", "now", "right now", "today", "still",
            "happened", "happen", "occurred", "occur", "took place", "dated", "recorded",
            "defined", "declared", "listed", "configured", "still", "yet", "so far", "only"),
    "AND": ("and", "also", "as well as"),
    "OF": ("of", "for"),
    "DET": ("a", "an", "the", "any", "some", "all", "every", "each", "one or more"),
}
CMP_WORDS: dict[str, str] = {
    "more than": ">", "over": ">", "greater than": ">", "above": ">", "at least": ">=",
    "fewer than": "<", "less than": "<", "under": "<", "below": "<", "at most": "<=",
    "exactly": "=", "no more than": "<=", "no fewer than": ">=", "no less than": ">=",
}
NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20,
}


def words(text: str) -> tuple[str, ...]:
    """Lower-case words; "C#" and "C++" keep their sign as a word ("c sharp", "c plus plus")."""
    text = text.lower().replace("'", " ")
    if "#" in text or "+" in text:  # most text has neither: no substitution to run
        for sign, word in _SIGNS:
            text = sign.sub(word, text)
    return tuple(WORD.findall(text))


@dataclass(frozen=True)
class Sense:
    """One reading of a relation phrase: the family, its types, and which end the subject
    of the phrase is (``out``: the start, ``in``: the end)."""

    family: str
    types: tuple[str, ...]
    direction: str
    widen: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def types_for(self, other_labels: Iterable[str]) -> tuple[str, ...]:
        extra = [t for label, ts in self.widen if label in set(other_labels) for t in ts]
        return tuple(dict.fromkeys([*self.types, *extra]))


@dataclass(frozen=True)
class Entry:
    kind: str  # token type
    value: Any = None


@dataclass
class Lexicon:
    phrases: dict[tuple[str, ...], list[Entry]] = field(default_factory=dict)

    def add(self, phrase: str | tuple[str, ...], entry: Entry) -> None:
        key = phrase if isinstance(phrase, tuple) else words(phrase)
        if key and entry not in self.phrases.setdefault(key, []):
            self.phrases[key].append(entry)

    def longest(self, tokens: tuple[str, ...], at: int) -> tuple[int, list[Entry]]:
        for n in range(min(MAX_PHRASE, len(tokens) - at), 0, -1):
            found = self.phrases.get(tokens[at:at + n])
            if found:
                return n, found
        return 0, []


def _senses(family: str, spec: dict[str, Any]) -> tuple[tuple[str, ...], Any]:
    types = tuple(spec["types"])
    widen = tuple((k, tuple(v)) for k, v in (spec.get("widen") or {}).items())
    return types, widen


@lru_cache(maxsize=1)
def synonyms() -> dict[str, Any]:
    data = yaml.safe_load(ONTOLOGY_FILE.read_text())
    result: dict[str, Any] = data["synonyms"]
    return result


@lru_cache(maxsize=1)
def list_properties() -> frozenset[str]:
    """Properties holding a list, whose states are members of it (the ontology's
    ``list: true``: ``deployed_by`` holds "compose" and/or "k8s")."""
    return frozenset(s["property"] for s in synonyms()["states"] if s.get("list"))


@lru_cache(maxsize=1)
def base_lexicon() -> Lexicon:
    """Function words and the ontology's synonyms (no entity names)."""
    lex = Lexicon()
    for kind, phrases in FUNCTION_WORDS.items():
        for p in phrases:
            lex.add(p, Entry(kind))
    for p, op in CMP_WORDS.items():
        lex.add(p, Entry("CMP", op))
    for p, n in NUMBER_WORDS.items():
        lex.add(p, Entry("NUM", n))
    syn = synonyms()
    for label, nouns in syn["labels"].items():
        for p in nouns:
            lex.add(p, Entry("LABEL", label))
    for kind in syn["kinds"]:
        value = kind["value"]  # several kinds ("datastore": database, cache, ...) as a tuple
        value = tuple(value) if isinstance(value, list) else value
        for p in kind["words"]:
            lex.add(p, Entry("KIND", (kind["label"], kind["property"], value)))
    for state in syn["states"]:
        value = (state["label"], state.get("property"), state.get("value"),
                 state.get("relation"), state.get("direction"))
        for p in state["words"]:
            lex.add(p, Entry("STATE", value))
    for family, spec in syn["relations"].items():
        types, widen = _senses(family, spec)
        for key, kind, direction in (("active", "REL", "out"), ("passive", "REL", "in"),
                                     ("start_nouns", "RNOUN", "in"),
                                     ("end_nouns", "RNOUN", "out"),
                                     ("in_adjectives", "INADJ", "in")):
            for p in spec.get(key) or ():
                lex.add(p, Entry(kind, Sense(family, types, direction, widen)))
    return lex


def with_value_states(base: Lexicon, rows: Iterable[dict[str, Any]]) -> Lexicon:
    """``base`` plus the values the graph holds for :data:`VALUE_STATES` properties, each a
    ``STATE`` of its holder's label ("in go", "written in python", "node js based"): the
    translator reads "which services are written in Go?" as ``Service.language = 'Go'``. A
    value of several parts ("Python/Locust", "TypeScript, Node.js") is read under each part
    too, so "python" means every stored value with a part "Python" (``IN`` a list)."""
    said: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    for r in rows:
        for key in VALUE_STATES:
            value = str(r.get(key) or "")
            for part in {value, *_PARTS.split(value)}:
                phrase = words(part)
                if 0 < len(phrase) <= MAX_VALUE_WORDS:
                    said.setdefault((str(r["label"]), key, phrase), set()).add(value)
    if not said:
        return base
    lex = Lexicon({k: list(v) for k, v in base.phrases.items()})
    for (label, key, phrase), values in sorted(said.items()):
        stored: str | tuple[str, ...] = min(values) if len(values) == 1 else tuple(sorted(values))
        state = Entry("STATE", (label, key, stored, None, None))
        for form in VALUE_STATES[key]:
            lex.add(form.format(v=" ".join(phrase)), state)
    return lex


def entity_phrases(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, ...], list[tuple[str, str]]]:
    """Phrases naming an entity -> [(ceid, label)]: its name, its ceid suffix, the ceid
    itself ("pr 431", "adr 0003", "adr 3") and its aliases; purely numeric phrases only in
    their prefixed form."""
    found: dict[tuple[str, ...], list[tuple[str, str]]] = {}

    def put(key: tuple[str, ...], ceid: str, label: str) -> None:
        if key and not all(w.isdigit() for w in key) and (ceid, label) not in found.get(key, []):
            found.setdefault(key, []).append((ceid, label))

    for row in rows:
        ceid, label = str(row["ceid"]), str(row["label"])
        prefix, _, suffix = ceid.partition(":")
        put(words(str(row.get("name") or "")), ceid, label)
        put(words(suffix), ceid, label)
        put(words(ceid), ceid, label)
        if suffix.isdigit():
            put((prefix, str(int(suffix))), ceid, label)
        for alias in row.get("aliases") or ():
            put(words(str(alias)), ceid, label)
    return found
