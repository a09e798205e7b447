""""Who are the code owners?": which questions ask for the owners in general, and how the
overview reads."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.composers import Citations, owners_overview
from substrate.retrieval.owned_paths import asks_overview


def test_questions_for_the_owners_in_general() -> None:
    for q in ("Who are the code owners?", "Who are our owners", "List the owners",
              "Show all the code owners", "Who owns what?", "Which teams own code?",
              "What people own something?", "Give me the ownership overview",
              "Who are the code owners of this repository?",  # the whole tenant: no subject
              "Who owns what in the FAC repo?"):
        assert asks_overview(q), q
    for q in ("Who owns checkout?", "Who are the owners of the payment service?",
              "Who owns the frobnicator?", "List the owners of /docs/"):
        assert not asks_overview(q), q


def _owned(ceid: str, ref: str) -> dict[str, Any]:
    return {"entity": {"ceid": ceid, "name": ceid.split(":", 1)[1], "label": "Service"},
            "hop": {"type": "OWNS", "from": "team:payments", "to": ceid, "evidence_ref": ref}}


def test_each_owner_with_how_much_it_owns_and_the_first_few_named() -> None:
    fact = {"truncated": False, "overview": [
        {"owner": {"ceid": "team:payments", "name": "payments", "handle": "@acme/payments"},
         "owned": 6, "examples": [_owned("service:checkout", ".github/CODEOWNERS#L21@abc1234"),
                                  _owned("service:fraud", ".github/CODEOWNERS#L23@abc1234")]},
        {"owner": {"ceid": "dev:jdoe", "name": "jdoe", "handle": "@jdoe"}, "owned": 1,
         "examples": [_owned("service:currency", ".github/CODEOWNERS#L26@abc1234")]}]}
    cites = Citations()
    assert owners_overview(fact, cites) == (
        "2 owner(s) recorded: @acme/payments owns 6: checkout[1], fraud[2] and 4 more; "
        "@jdoe owns 1: currency[3].")
    assert len(cites.items) == 3
    assert owners_overview({"overview": []}, Citations()).startswith("No owner is recorded")
