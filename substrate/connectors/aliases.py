"""One canonical entity per service or datastore, whatever name a manifest or a document uses.

Normalisation: lower-case, drop every character that is not a letter or digit (``-``, ``_``,
spaces, dots), then strip the suffixes ``service``/``svc``/``srv``/``api``/``app`` (repeatedly,
never down to nothing). ``checkoutservice``, ``checkout-service``, ``checkout_svc`` and
``CheckoutService`` all normalise to ``checkout``.

Resolution of a name against the entities already known, best first:

* ``exact``      the slug of the name is a known name or alias          confidence 1.0
* ``normalised`` its normalised key belongs to exactly one entity        confidence 0.95
* ``fuzzy``      a close key (difflib ratio >= 0.85, key length >= 5)    confidence 0.8
* ``ambiguous``  the key (or the fuzzy neighbours) belong to two or more  confidence 0.5

Anything below the verification threshold (0.92 by default) goes to ``GraphBatch.pending``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from substrate.graph.records import ceid as make_ceid
from substrate.graph.records import slug

SUFFIXES = ("service", "svc", "srv", "api", "app")
PREFIX = {"Service": "service", "Infrastructure": "infra"}
EXACT, NORMALISED, FUZZY, AMBIGUOUS = 1.0, 0.95, 0.8, 0.5
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalise(name: str) -> str:
    """Comparison key of a service name (see the module docstring)."""
    key = _NON_ALNUM.sub("", name.lower())
    stripped = True
    while stripped:
        stripped = False
        for suffix in SUFFIXES:
            if key.endswith(suffix) and len(key) > len(suffix):
                key = key[: -len(suffix)]
                stripped = True
    return key


@dataclass
class Entity:
    """A canonical Service or Infrastructure node being assembled from several sources."""

    ceid: str
    label: str
    name: str
    props: dict[str, Any] = field(default_factory=dict)
    provenance: list[str] = field(default_factory=list)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    pending_reason: str = ""

    def add_evidence(self, ref: str) -> None:
        if ref not in self.provenance:
            self.provenance.append(ref)

    def add_alias(self, alias: str, ref: str) -> None:
        if alias == self.name:
            return
        refs = self.aliases.setdefault(alias, [])
        if ref not in refs:
            refs.append(ref)


@dataclass(frozen=True)
class Resolution:
    """Outcome of resolving a name: the entity (if one), how sure, and the candidates."""

    ceid: str | None
    confidence: float
    method: str
    candidates: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return self.method == AMBIGUOUS_METHOD


AMBIGUOUS_METHOD = "ambiguous"
NO_MATCH = Resolution(None, 0.0, "none")


class NameIndex:
    """Registry of canonical entities with exact and normalised name lookup."""

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self._exact: dict[str, set[str]] = {}
        self._keys: dict[str, set[str]] = {}
        self._fingerprint: str | None = None
        # resolve()'s answers while nothing it reads changes (cleared with the fingerprint):
        # a commit's documents ask for the same words again and again
        self._resolved: dict[tuple[str, str | None, bool], Resolution] = {}

    def __contains__(self, ceid: str) -> bool:
        return ceid in self.entities

    def get(self, ceid: str) -> Entity:
        return self.entities[ceid]

    def create(self, label: str, name: str, ref: str, pending_reason: str = "") -> Entity:
        """Register a canonical entity named ``name`` (or return the existing one)."""
        cid = make_ceid(PREFIX[label], name)
        entity = self.entities.get(cid)
        if entity is None:
            entity = Entity(cid, label, name, pending_reason=pending_reason)
            self.entities[cid] = entity
            self._changed()
            self._index(cid, name)
        entity.add_evidence(ref)
        return entity

    def alias(self, cid: str, alias: str, ref: str) -> None:
        """Record ``alias`` (with its evidence) as another name of entity ``cid``."""
        self.entities[cid].add_alias(alias, ref)
        self._index(cid, alias)

    def exact(self, name: str) -> str | None:
        """The one entity (pending ones included) whose name or alias has ``name``'s slug."""
        found = sorted(self._exact.get(slug(name), ()))
        return found[0] if len(found) == 1 else None

    def _index(self, cid: str, name: str) -> None:
        exact, key = self._exact.setdefault(slug(name), set()), \
            self._keys.setdefault(normalise(name), set())
        if cid not in exact or cid not in key:
            exact.add(cid)
            key.add(cid)
            self._changed()

    def _changed(self) -> None:
        self._fingerprint = None
        self._resolved.clear()

    def fingerprint(self) -> str:
        """A digest of everything :meth:`resolve` reads (names, keys, labels, which entities
        are pending): two indexes with the same fingerprint resolve every name alike, so a
        history replay can reuse what it resolved at an earlier commit."""
        if self._fingerprint is None:
            state = (sorted((k, sorted(v)) for k, v in self._exact.items()),
                     sorted((k, sorted(v)) for k, v in self._keys.items()),
                     sorted((c, e.label, bool(e.pending_reason))
                            for c, e in self.entities.items()))
            self._fingerprint = hashlib.blake2b(repr(state).encode(), digest_size=16).hexdigest()
        return self._fingerprint

    def _live(self, cids: Iterable[str], label: str | None) -> list[str]:
        found = (c for c in cids if c in self.entities and not self.entities[c].pending_reason)
        return sorted(c for c in found if label is None or self.entities[c].label == label)

    def resolve(self, name: str, label: str | None = None, fuzzy: bool = True) -> Resolution:
        """Resolve ``name`` to one known entity (see the module docstring for the methods)."""
        asked = (name, label, fuzzy)
        found = self._resolved.get(asked)
        if found is None:
            found = self._resolved[asked] = self._resolve(name, label, fuzzy)
        return found

    def _resolve(self, name: str, label: str | None, fuzzy: bool) -> Resolution:
        exact = self._live(self._exact.get(slug(name), ()), label)
        if len(exact) == 1:
            return Resolution(exact[0], EXACT, "exact", tuple(exact))
        key = normalise(name)
        by_key = exact or self._live(self._keys.get(key, ()), label)
        if len(by_key) == 1:
            return Resolution(by_key[0], NORMALISED, "normalised", tuple(by_key))
        if len(by_key) > 1:
            return Resolution(None, AMBIGUOUS, AMBIGUOUS_METHOD, tuple(by_key))
        if not fuzzy or len(key) < 5:
            return NO_MATCH
        return self._fuzzy(key, label)

    def _fuzzy(self, key: str, label: str | None) -> Resolution:
        close = difflib.get_close_matches(key, sorted(self._keys), n=3, cutoff=0.85)
        found = sorted({c for k in close for c in self._live(self._keys[k], label)})
        if len(found) == 1:
            return Resolution(found[0], FUZZY, "fuzzy", tuple(found))
        if len(found) > 1:
            return Resolution(None, AMBIGUOUS, AMBIGUOUS_METHOD, tuple(found))
        return NO_MATCH

    def register(self, label: str, name: str, ref: str,
                 distinct: Iterable[str] = ()) -> Entity:
        """Attach a manifest name to the entity it resolves to, or create a new canonical one.

        A name that is ambiguous or only fuzzily similar to a known entity becomes a
        *pending* entity of its own, carrying the reason, so nothing is silently merged.
        ``distinct``: the entities declared beside this one (the other keys of its Compose
        project, the other workloads of its namespace): a name only fuzzily close to them is
        another entity, not a doubtful alias (``webshoppingagg`` and ``webshoppingapigw``).
        """
        res = self.resolve(name, label, fuzzy=label == "Service")
        if (res.ceid is None or res.confidence < NORMALISED) and res.candidates \
                and set(res.candidates) <= set(distinct):
            res = NO_MATCH
        if res.ceid is not None and res.confidence >= NORMALISED:
            self.alias(res.ceid, name, ref)
            entity = self.entities[res.ceid]
            entity.add_evidence(ref)
            return entity
        reason = ""
        if res.candidates:
            names = ", ".join(res.candidates)
            reason = f"{res.method} alias match of {name!r} to {names} ({res.confidence})"
        return self.create(label, name, ref, pending_reason=reason)

    def sorted_entities(self) -> list[Entity]:
        return [self.entities[c] for c in sorted(self.entities)]
