"""Words → alternative token sequences for the grammar.

Longest phrase first; where a phrase is both a word of the vocabulary and an entity's name
(a service called "search"), both readings are kept, the entity first right after a label
noun ("team data"). Determiners and auxiliaries are dropped; time windows (``timewin``) become
one ``TIME`` token; a word nobody knows ends the attempt with that word named.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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


def tag(question: str, entities: dict[tuple[str, ...], list[tuple[str, str]]],
        now: datetime, lexicon: Lexicon | None = None) -> tuple[list[Slot], list[Window]]:
    lex = lexicon or base_lexicon()
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
            after_label = bool(slots) and slots[-1][0].kind == "LABEL"
            slot = [ent_slot, *vocab] if (after_label or not vocab) else [*vocab, ent_slot]
            i += n_ent
        elif n_vocab:
            slot = _entries_by_kind(entries, phrase)
            i += n_vocab
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


def _longest_entity(entities: dict[tuple[str, ...], list[tuple[str, str]]],
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
