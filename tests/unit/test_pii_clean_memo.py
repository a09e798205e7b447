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


LONG = "checkout authorises payments asynchronously; " * 12 + "page ops.lead@example.com"


def test_long_texts_clean_for_some_kinds_are_remembered_and_still_redacted_for_others() -> None:
    assert len(LONG) > pii.MEMO_MAX_LENGTH
    only_phones = Redactor(kinds=frozenset({"phone"}))
    assert only_phones.text(LONG) == LONG and only_phones.text(LONG) == LONG
    assert LONG in pii._CLEAN_LONG[frozenset({"phone"})]
    every = Redactor(kinds=frozenset(KINDS))
    for _ in range(2):
        assert every.text(LONG).endswith("page [REDACTED:email]")
    assert every.summary() == {"email": 2}
    assert LONG not in pii._CLEAN_LONG.get(frozenset(KINDS), set())


def test_the_long_clean_set_is_bounded_and_skips_very_long_texts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = frozenset({"ssn"})
    pii._CLEAN_LONG.pop(kinds, None)
    monkeypatch.setattr(pii, "MAX_CLEAN_LONG", 2)
    r = Redactor(kinds=kinds)
    for i in range(4):
        r.text(f"decision {i}: " + "x" * 300)
    assert len(pii._CLEAN_LONG[kinds]) <= 2
    huge = "y " * pii.LONG_MAX_LENGTH
    assert r.text(huge) == huge and huge not in pii._CLEAN_LONG[kinds]


def test_an_answer_of_known_clean_strings_is_returned_as_it_is() -> None:
    kinds = frozenset({"email"})
    answer = {"service": {"ceid": "service:checkout", "name": "checkout"},
              "hops": [{"evidence_ref": "compose.yml#L1@abc1234", "confidence": 1.0,
                        "refs": ["compose.yml#L1@abc1234", ["a", 2]]}],
              "summary": "checkout authorises payments asynchronously; " * 8, "n": None}
    first = Redactor(kinds=kinds)
    assert first.walk(answer) is answer and first.summary() == {}  # scanned: nothing changed
    again = Redactor(kinds=kinds)
    assert again.walk(answer) is answer and again.summary() == {}  # known clean now


def test_a_string_needing_redaction_anywhere_makes_a_redacted_copy() -> None:
    kinds = frozenset({"email"})
    Redactor(kinds=kinds).walk({"name": "checkout service", "ref": "compose.yml#L1@abc1"})
    for answer in ({"name": "checkout service", "owner": "ops.lead@example.com"},
                   {"name": "checkout service", "rows": [["ops.lead@example.com"]]},
                   {"name": "checkout service", "rows": ({"who": "ops.lead@example.com"},)}):
        r = Redactor(kinds=kinds)
        out = r.walk(answer)
        assert out is not answer and r.summary() == {"email": 1}
        assert "ops.lead@example.com" not in repr(out)
        assert "ops.lead@example.com" in repr(answer)  # the caller's value is left alone


def test_structural_keys_are_neither_redacted_nor_make_a_copy() -> None:
    kinds = frozenset({"email"})
    answer = {"name": "checkout service", "cache": {"key": "ops.lead@example.com"},
              "bundle_hash": "ops.lead@example.com"}
    Redactor(kinds=kinds).walk(answer)
    r = Redactor(kinds=kinds)
    assert r.walk(answer) is answer and r.summary() == {}


def test_only_the_path_to_a_redacted_string_is_copied() -> None:
    kinds = frozenset({"email"})
    page = [{"ceid": f"dev:{i}", "props": {"name": f"developer number {i}", "team": "payments"}}
            for i in range(50)]
    page[17]["props"]["email"] = "ops.lead@example.com"
    answer = {"service": {"ceid": "service:checkout", "name": "checkout"}, "nodes": page,
              "hops": ({"evidence_ref": "compose.yml#L1@abc1234"},)}
    r = Redactor(kinds=kinds)
    out = r.walk(answer)
    assert r.summary() == {"email": 1}
    assert out is not answer and out["nodes"] is not page
    assert out["nodes"][17]["props"]["email"] != "ops.lead@example.com"
    assert {k: v for k, v in out["nodes"][17]["props"].items() if k != "email"} \
        == {k: v for k, v in page[17]["props"].items() if k != "email"}
    # everything off that path is the caller's own object, the caller's value unchanged
    assert out["service"] is answer["service"] and out["hops"] is answer["hops"]
    assert all(out["nodes"][i] is page[i] for i in range(50) if i != 17)
    assert page[17]["props"]["email"] == "ops.lead@example.com"
