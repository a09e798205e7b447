"""Strings known to hold no PII are remembered per set of kinds: a string clean for one set
is still redacted for another, and counts stay right on the remembered path."""

from __future__ import annotations

import pytest

from substrate.security import pii
from substrate.security.pii import KINDS, Redactor

TEXT = "write to ops.lead@example.com about checkout"


def test_clean_for_some_kinds_is_still_redacted_for_others() -> None:
    only_phones = Redactor(kinds=frozenset({"phone"}))
    assert only_phones.text(TEXT) == TEXT and only_phones.text(TEXT) == TEXT
    assert TEXT in pii._CLEAN[frozenset({"phone"})]
    every = Redactor(kinds=frozenset(KINDS))
    for _ in range(2):
        assert every.text(TEXT) == "write to [REDACTED:email] about checkout"
    assert every.summary() == {"email": 2}
    assert TEXT not in pii._CLEAN.get(frozenset(KINDS), set())


def test_the_clean_set_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = frozenset({"iban"})
    pii._CLEAN.pop(kinds, None)
    monkeypatch.setattr(pii, "MAX_CLEAN", 3)
    r = Redactor(kinds=kinds)
    for i in range(5):
        r.text(f"service number {i}")
    assert len(pii._CLEAN[kinds]) <= 3
