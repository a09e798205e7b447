"""Words → alternative token sequences for the grammar.

Longest phrase first; where a phrase is both a word of the vocabulary and an entity's name
(a service called "search"), both readings are kept, the entity first right after a label
noun ("team data"). Determiners and auxiliaries are dropped; time windows (``timewin``) become
one ``TIME`` token; a word nobody knows ends the attempt with that word named.

A noun of the vocabulary that is also an entity's name is read as the entity when English
would: a singular count noun with no article or only "the" before it names one thing ("which
services use db?", "... call the db"), while a plural ("databases"), an indefinite or
quantifying word ("a db", "any database", "no db") or a question word ("which db") makes it
the kind of thing. The other reading stays as the alternative.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from substrate.retrieval.mentions import strip_qualifiers
from substrate.retrieval.nl_cypher.lexicon import Entry, Lexicon, base_lexicon, words
from substrate.retrieval.nl_cypher.timewin import Window, find_windows

DROPPED = {"DET", "AUX"}
MAX_READINGS = 96
_TIME = "qqtimeqq"


class Unparsed(Exception):
    """The question is outside what the embedded translator understands (the reason says why)."""


@dataclass(frozen=True)
class Tagged:
    kind: str
    value: Any
    text: str


Slot = list[Tagged]  # the alternatives at one position, preferred first


def _entries_by_kind(entries: list[Entry], text: str) -> Slot:
    kinds: dict[str, list[Any]] = {}
    for e in entries:
        kinds.setdefault(e.kind, []).append(e.value)
    return [Tagged(k, v if k in ("REL", "RNOUN", "INADJ", "STATE", "KIND", "ENT") else v[0], text)
            for k, v in kinds.items()]


def _positional(slot: Slot, first: bool) -> Slot:
    """"which"/"who" open a question (WH, WHO) and relate a clause elsewhere (THAT)."""
    if first:
        return sorted(slot, key=lambda t: t.kind not in ("WH", "WHO", "COUNT"))
    rest = [t for t in slot if t.kind not in ("WH", "WHO")]
    return rest or [Tagged("AUX", None, slot[0].text)]  # "... are there": no question word


_HANDLE = re.compile(r"(?<![\w@])@(?:[\w.-]+/)?([\w.-]+)")
# "which datastores are used?", "what databases do we have?", "which queues are in use?": a
# closing clause with no other end asks for what exists (as "... are there?" does); a clause
# naming its other end ("are used by checkout", "does payments use") is left to the grammar
_EXISTS = re.compile(
    r"\s+(?:(?:do|does)\s+(?:we|you|the\s+(?:system|organi[sz]ation|company))\s+"
    r"(?:have|use|run|operate|maintain)"
    r"|(?:are|is)\s+(?:(?:being|currently|actually)\s+)?(?:used|in\s+use|deployed|running"
    r"|available|defined|known))\s*\??\s*$", re.I)


def tag(question: str, entities: Mapping[tuple[str, ...], list[tuple[str, str]]],
        now: datetime, lexicon: Lexicon | None = None) -> tuple[list[Slot], list[Window]]:
    lex = lexicon or base_lexicon()
    question = _HANDLE.sub(r"\1", question)  # "@acme/payments", "@mchen": as CODEOWNERS writes them
    question = strip_qualifiers(question)  # "in the FAC repo", "in CODEOWNERS"
    question = _EXISTS.sub(" ", question)  # "... are used?", "... do we have?"
    windows = find_windows(question, now)
    text = question
    for w in reversed(windows):
        text = text[: w.begin] + f" {_TIME} " + text[w.stop:]
    tokens = words(text)
    slots: list[Slot] = []
    unknown: list[str] = []
    i, n_time = 0, 0
    while i < len(tokens):
        if tokens[i] == _TIME:
            slots.append([Tagged("TIME", windows[n_time], windows[n_time].phrase)])
            i, n_time = i + 1, n_time + 1
            continue
        if tokens[i].isdigit():
            n_vocab, entries = 1, [Entry("NUM", int(tokens[i]))]
        else:
            n_vocab, entries = lex.longest(tokens, i)
        n_ent, ent = _longest_entity(entities, tokens, i)
        phrase = " ".join(tokens[i: i + max(n_vocab, n_ent, 1)])
        if n_ent > n_vocab or (n_ent and n_ent == n_vocab):
            ent_slot = Tagged("ENT", ent, phrase)
            vocab = _entries_by_kind(entries, phrase) if n_ent == n_vocab else []
            named = _names_one_thing(lex, tokens, i, n_ent, entries, slots)
            slot = [ent_slot, *vocab] if (named or not vocab) else [*vocab, ent_slot]
            i += n_ent
        elif n_vocab:
            slot = _entries_by_kind(entries, phrase)
            i += n_vocab
        elif tokens[i] == "or" and slots and slots[-1][0].kind == "STATE":
            # "rejected or deprecated": one state of either value
            n_next, following = lex.longest(tokens, i + 1)
            merged = _either(slots[-1][0], [e for e in following if e.kind == "STATE"])
            if merged is None:
                raise Unparsed(f"'{slots[-1][0].text} or "
                               f"{' '.join(tokens[i + 1:i + 1 + max(n_next, 1)])}' "
                               "is not one property of two values")
            slots[-1] = [merged]
            i += 1 + n_next
            continue
        else:
            unknown.append(tokens[i])
            i += 1
            continue
        slot = _positional(slot, first=not slots)
        kept = [t for t in slot if t.kind not in DROPPED]
        if len(kept) == len(slot):
            slots.append(slot)
        elif kept:  # "get": a question word or nothing
            slots.append([*kept, Tagged("SKIP", None, phrase)])
    if unknown:
        raise Unparsed("words outside the vocabulary: " + ", ".join(dict.fromkeys(unknown)))
    return slots, windows


def _either(first: Tagged, following: list[Entry]) -> Tagged | None:
    """``first`` or the state ``following`` names, as one state of the same property holding
    either value (``status IN [rejected, deprecated]``); None when they are not one property
    (a relation state: "superseded")."""
    values: list[Any] = []
    for label, key, value, *_ in first.value:
        for entry in following:
            for other in entry.value if isinstance(entry.value, list) else [entry.value]:
                if key and other[0] == label and other[1] == key and other[2] != value:
                    both = [*(value if isinstance(value, tuple) else (value,)), other[2]]
                    values.append((label, key, tuple(dict.fromkeys(both)), None, None))
    if not values:
        return None
    return Tagged("STATE", values, f"{first.text} or …")


GENERIC_BEFORE = {"a", "an", "any", "some", "all", "every", "each", "no", "other"}
_QUANTIFYING = {"WH", "WHO", "COUNT", "NUM", "CMP", "MOST", "LEAST", "TOP"}
_NOUNS = {"LABEL", "KIND"}


def _singular(lex: Lexicon, phrase: tuple[str, ...], entries: list[Entry]) -> bool:
    """A count noun in its singular form: the lexicon has its plural with the same meaning."""
    last = phrase[-1]
    return any(e in lex.phrases.get((*phrase[:-1], last + suffix), ())
               for e in entries for suffix in ("s", "es"))


def _names_one_thing(lex: Lexicon, tokens: tuple[str, ...], at: int, n: int,
                     entries: list[Entry], slots: list[Slot]) -> bool:
    """Is a phrase that is both a vocabulary word and an entity's name the entity here?"""
    if slots and slots[-1][0].kind == "LABEL":  # "team data"
        return True
    if not any(e.kind in _NOUNS for e in entries):
        return False
    if not _singular(lex, tokens[at:at + n], [e for e in entries if e.kind in _NOUNS]):
        return False
    before = tokens[at - 1] if at else ""
    return (before not in GENERIC_BEFORE
            and not (slots and any(t.kind in _QUANTIFYING for t in slots[-1])))


def _longest_entity(entities: Mapping[tuple[str, ...], list[tuple[str, str]]],
                    tokens: tuple[str, ...], at: int) -> tuple[int, list[tuple[str, str]]]:
    for n in range(min(6, len(tokens) - at), 0, -1):
        found = entities.get(tokens[at: at + n])
        if found:
            return n, found
    return 0, []


def readings(slots: list[Slot]) -> Iterator[list[Tagged]]:
    """Token sequences in order of preference (at most ``MAX_READINGS``)."""
    for combo in itertools.islice(itertools.product(*slots), MAX_READINGS):
        yield [t for t in combo if t.kind != "SKIP"]
