"""What a reading of the question took for granted, and the confidence of the answer it gives.

The embedded translator is exact about the words it knows, but some readings rest on more
than the words: a property value the connector *normalised* from free text (an ADR whose status
line says "Approved" is stored as ``accepted``, "In Review"/"Pending" as ``proposed``; said only
when some entity of the graph with that value was written otherwise, or its text was not kept:
:func:`normalised_values` over the ``status``/``status_text`` the schema loads), a phrase
that names both an entity and a word of the vocabulary ("db": the service called db, or any
database), or a query that matched nothing (a negative answer is right less often: the connector
may have missed a convention). Each such assumption is said in the answer and lowers the
confidence below :data:`HIGH`; ``/search`` and the benchmark use the same :func:`confidence`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from substrate.retrieval.nl_cypher.lexicon import words
from substrate.retrieval.nl_cypher.tagger import Slot, Tagged

HIGH = 0.7  # a confidence at or above this presents the answer as reliable
PRIOR = {"embedded": 0.85, "model": 0.6}  # the translator's share of right readings
PER_ASSUMPTION = 0.75
EMPTY = 0.55
_LABEL_NOUN = {"DecisionNode": "ADRs", "PullRequest": "pull requests",
               "FailurePattern": "incidents", "Infrastructure": "infrastructure"}
# (label, property) -> value -> the free-text forms a connector maps to that value
NORMALISED: dict[tuple[str, str], dict[str, str]] = {
    ("DecisionNode", "status"): {
        "accepted": "Accepted, Approved, Adopted or Done",
        "proposed": "Proposed, Draft, In Review, Open or Pending",
        "rejected": "Rejected, Declined or Withdrawn",
        "deprecated": "Deprecated, Obsolete or Retired",
    },
}


Normalised = frozenset[tuple[str, str, str]] | None  # (label, property, value); None: unknown


def normalised_values(rows: Sequence[dict[str, Any]]) -> frozenset[tuple[str, str, str]]:
    """``(label, property, value)`` of :data:`NORMALISED` properties that some entity holds
    with a written text other than the value itself, or with no text kept ("Approved" stored
    as ``accepted``); a value every holder wrote as such ("Accepted") is not an assumption."""
    out = set()
    for row in rows:
        for (label, key), values in NORMALISED.items():
            value = row.get(key)
            if row.get("label") != label or value not in values:
                continue
            written = row.get(f"{key}_text")
            if not written or words(str(written)) != words(str(value)):
                out.add((label, key, str(value)))
    return frozenset(out)


def _state(tok: Tagged, normalised: Normalised) -> list[str]:
    out = []
    for label, key, value, _rel, _dir in tok.value:
        forms = NORMALISED.get((label, key or ""), {}).get(str(value))
        if forms and (normalised is None or (label, key, str(value)) in normalised):
            noun = _LABEL_NOUN.get(label, label)
            out.append(f"counting {noun} whose recorded {key} is any of {forms} as {value} "
                       f"(the status is normalised from the record's text)")
    return out


def _ambiguous(slot: Slot, chosen: Tagged) -> str | None:
    kinds = {t.kind for t in slot}
    if "ENT" not in kinds or len(kinds - {"SKIP"}) < 2:
        return None
    if chosen.kind == "ENT":
        names = ", ".join(c for c, _ in chosen.value)
        return f"reading '{chosen.text}' as the entity {names}, not as a word of the question"
    what = {"KIND": "the kind", "LABEL": "the label", "STATE": "the state"}.get(chosen.kind,
                                                                             "the word")
    return f"reading '{chosen.text}' as {what} '{chosen.text}', not the entity of that name"


def assumed(slots: Sequence[Slot], tokens: Sequence[Tagged],
            normalised: Normalised = None) -> list[str]:
    """The assumptions of one reading (``tokens``, chosen from ``slots``); ``normalised``:
    the values the graph holds normalised (:func:`normalised_values`; None: not known)."""
    found: list[str] = []
    chosen = {id(t) for t in tokens}
    for slot in slots:
        pick = next((t for t in slot if id(t) in chosen), None)
        if pick is None:
            continue
        if pick.kind == "STATE":
            found.extend(_state(pick, normalised))
        note = _ambiguous(slot, pick)
        if note:
            found.append(note)
    return list(dict.fromkeys(found))


def is_empty(mode: str, rows: list[list[Any]]) -> bool:
    """No rows, or a count of zero."""
    if not rows:
        return True
    return mode == "count" and not rows[0][0]


def confidence(translator: str, mode: str, rows: list[list[Any]],
               assumptions: Sequence[str]) -> float:
    """The confidence of the translator's answer: its prior, lowered for each assumption, and
    capped for an empty answer."""
    score = PRIOR.get(translator, PRIOR["model"]) * PER_ASSUMPTION ** len(assumptions)
    if is_empty(mode, rows):
        score = min(score, EMPTY)
    return round(score, 3)


def sentence(assumptions: Sequence[str], empty: bool) -> str:
    """The answer's preface saying what was assumed ("" when nothing was)."""
    parts = list(assumptions) + (["taking 'nothing matched' as the answer"] if empty else [])
    return ("Assuming: " + "; ".join(parts) + ". ") if parts else ""
