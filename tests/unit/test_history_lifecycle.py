""""When" answers about an entity's life: when its owners changed (per source, a moved line
being no change) and when it was removed, and how those answers read."""

from __future__ import annotations

from typing import Any

import pytest

from substrate.retrieval import composers as c
from substrate.retrieval.history_lifecycle import (
    LOSS_CUE,
    REMOVAL_CUE,
    candidate_ceids,
    lifetime,
    owned_subject,
    owner_cue,
    owner_events,
    pick_event,
)
from substrate.retrieval.strategies_facts import _internal, _touches

ENDLESS = 2**53 - 1


def claim(owner: str, kind: str, start: int, end: int | None, ref: str,
          source: str = "git:shop") -> dict[str, Any]:
    return {"hop": {"type": kind, "from": owner, "to": "service:checkout", "evidence_ref": ref,
                    "valid_from_v": start, "source": source, "confidence": 1.0},
            "owner": {"ceid": owner, "name": owner.split(":")[1], "label": "Team"},
            "handle": "@acme/" + owner.split(":")[1], "valid_to_v": end}


# checkout's owners in the demo's history: commerce until v16 (CODEOWNERS#L22@d2fbaec),
# payments and lgarcia from v16 (#L22@a54581c); the org catalog, loaded at v39, says commerce
ROWS = [claim("team:commerce", "PRIMARY_OWNER", 1, 16, "CODEOWNERS#L22@d2fbaec"),
        claim("team:commerce", "OWNS", 1, 16, "CODEOWNERS#L22@d2fbaec"),
        claim("team:payments", "PRIMARY_OWNER", 16, None, "CODEOWNERS#L22@a54581c"),
        claim("team:payments", "OWNS", 16, None, "CODEOWNERS#L22@a54581c"),
        claim("dev:lgarcia", "OWNS", 16, None, "CODEOWNERS#L22@a54581c"),
        claim("team:commerce", "OWNS", 39, None, "catalog:acme/services#checkout",
              source="jsonl:org")]


def test_the_owners_change_once_and_a_source_stating_its_owners_later_is_no_change() -> None:
    first, events = owner_events(ROWS, current=39)
    assert first == 1
    assert [e["version"] for e in events] == [16]
    gained = {(r["owner"]["ceid"], r["hop"]["type"]) for r in events[0]["gained"]}
    lost = {(r["owner"]["ceid"], r["hop"]["type"]) for r in events[0]["lost"]}
    assert gained == {("team:payments", "PRIMARY_OWNER"), ("team:payments", "OWNS"),
                      ("dev:lgarcia", "OWNS")}
    assert lost == {("team:commerce", "PRIMARY_OWNER"), ("team:commerce", "OWNS")}


def test_a_claim_whose_line_moved_is_no_change() -> None:
    rows = [claim("team:web", "OWNS", 1, 5, "CODEOWNERS#L3@aaa"),
            claim("team:web", "OWNS", 5, None, "CODEOWNERS#L4@bbb")]
    assert owner_events(rows, current=9) == (1, [])


def test_a_change_after_the_version_read_is_not_seen() -> None:
    first, events = owner_events(ROWS[:2] + ROWS[2:5], current=10)
    assert first == 1 and events == []
    assert owner_events([], current=3) == (None, [])


def test_the_event_asked_for() -> None:
    _, events = owner_events(ROWS + [claim("team:web", "OWNS", 20, None, "CODEOWNERS#L9@ccc")],
                             current=39)
    assert [e["version"] for e in events] == [16, 20]
    assert pick_event(events, set(), {"team:commerce"})["version"] == 20  # the latest
    assert pick_event(events, {"team:payments"}, {"team:commerce"})["version"] == 16
    assert pick_event(events, {"team:commerce"}, {"team:commerce"}, lost=True)["version"] == 16
    assert pick_event(events, {"team:commerce"}, {"team:commerce"}) is None  # from the start
    assert pick_event([], set(), set()) is None


@pytest.mark.parametrize(("question", "asks"), [
    ("When did the owner of checkout change?", True),
    ("When did payments take over checkout?", True),
    ("When did commerce stop owning checkout?", True),
    ("When was checkout handed over to payments?", True),
    ("When did checkout start calling fraud?", False),
    ("When was legacy-coupons removed?", False),
])
def test_an_ownership_question(question: str, asks: bool) -> None:
    assert owner_cue(question, []) is asks


def test_a_move_to_a_named_team_is_an_ownership_question() -> None:
    team = [{"ceid": "team:payments", "name": "payments", "label": "Team"}]
    assert owner_cue("When did checkout move to the payments team?", team)
    assert not owner_cue("When did orders move to postgres?", [])


def test_the_owned_subject_is_not_the_service_a_team_name_begins_with() -> None:
    seeds = [{"ceid": "service:payment", "name": "payment", "label": "Service"},
             {"ceid": "team:payments", "name": "payments", "label": "Team"},
             {"ceid": "service:checkout", "name": "checkout", "label": "Service"}]
    assert owned_subject(seeds)["ceid"] == "service:checkout"
    assert owned_subject(seeds[:2])["ceid"] == "service:payment"  # the only one named
    assert owned_subject(seeds[1:2]) is None


def test_removal_and_loss_words() -> None:
    for q in ("When was legacy-coupons removed?", "When did we decommission the v1 API?",
              "When was the monolith retired?", "When was ledger-db deleted?"):
        assert REMOVAL_CUE.search(q), q
    assert not REMOVAL_CUE.search("When was ADR-0006 deprecated?")  # a status, not a removal
    assert LOSS_CUE.search("When did commerce stop owning checkout?")
    assert not LOSS_CUE.search("When did payments take over checkout?")


def test_lifetime_of_an_entity() -> None:
    assert lifetime([1], [30], current=39) == (1, 30)  # removed at 30
    assert lifetime([1], [ENDLESS], current=39) == (1, None)
    assert lifetime([1], [30], current=20) == (1, None)  # read before its removal
    assert lifetime([1, 35], [30, ENDLESS], current=39) == (1, None)  # came back
    assert lifetime([28], [ENDLESS], current=10) == (None, None)  # not there yet


def test_candidate_ids_of_the_question_words() -> None:
    ids = candidate_ceids("When was legacy-coupons removed?")
    assert "service:legacy-coupons" in ids and "infra:legacy-coupons" in ids
    assert "team:legacy-coupons" in ids and "service:was" not in ids


def test_the_answers_read() -> None:
    cites = c.Citations()
    _, events = owner_events(ROWS, current=39)
    snap = {"valid_at": "2026-09-08T09:00:00+00:00", "commit": "a54581cb0000",
            "note": "a54581c Move checkout to the payments team"}
    text = c.owners_changed({"subject": {"name": "checkout"}, "event": {**events[0],
                             "snapshot": snap}, "others": [], "current": []}, cites)
    assert text.startswith("checkout's owners changed on 2026-09-08 (commit a54581cb")
    assert "@acme/payments (OWNS, PRIMARY_OWNER)[1]" in text
    assert "@acme/commerce (OWNS, PRIMARY_OWNER)[" in text and "stopped being" in text
    first = {"valid_at": "2026-08-03T09:00:00+00:00"}
    held = c.owners_changed({"subject": {"name": "checkout"}, "event": None, "first": first,
                             "current": ROWS[2:4], "named": ["team:payments"]}, c.Citations())
    assert held.startswith("@acme/payments (OWNS, PRIMARY_OWNER)[1] has owned checkout since")
    none = c.owners_changed({"subject": {"name": "tax"}, "event": None, "current": []},
                            c.Citations())
    assert none == "No owner of tax is recorded at any time in the history."
    gone = c.removed({"subject": {"name": "legacy-coupons"}, "first": first,
                      "removed": {"valid_at": "2026-10-13T15:00:00+00:00", "commit": "288422c6",
                                  "note": "288422c legacy-coupons: remove the service"},
                      "hop": {"evidence_ref": "services/legacy-coupons/README.md#L1@d2fbaec",
                              "type": "REMOVED"}}, c.Citations())
    assert gone.startswith("legacy-coupons was removed on 2026-10-13 (commit 288422c6 "
                           "\"legacy-coupons: remove the service\"); it had been defined[1]")
    here = c.removed({"subject": {"name": "payment"}, "first": first, "removed": None,
                      "hop": {}}, c.Citations())
    assert here.startswith("payment has not been removed: it is in the graph")


def test_a_decision_superseded_only_by_a_later_record_says_so() -> None:
    cites = c.Citations()
    text = c.rationale({
        "adr": {"ceid": "adr:0031", "name": "Waste balance transaction ledger"},
        "status": "superseded", "status_text": "Accepted", "date": "2026-04-21",
        "status_ref": "docs/adr/0031-ledger.md#L7@cf91439",
        "superseded_by": [{"entity": {"ceid": "adr:0036", "name": "Event-sourced stream"},
                           "hop": {"type": "SUPERSEDES", "from": "adr:0036", "to": "adr:0031",
                                   "evidence_ref": "docs/adr/0036-stream.md#L7@cf91439"}}],
        "quotes": [{"section": "Context", "text": "Failure is silent.",
                    "evidence_ref": "docs/adr/0031-ledger.md#L13@cf91439"}]}, cites)
    assert text.startswith('adr:0031 "Waste balance transaction ledger" (status Accepted '
                           '(superseded)[1]; superseded by adr:0036 "Event-sourced stream"[2], '
                           'dated 2026-04-21)')
    assert [x["evidence_ref"] for x in cites.items][:2] == [
        "docs/adr/0031-ledger.md#L7@cf91439", "docs/adr/0036-stream.md#L7@cf91439"]


def test_a_change_is_about_an_entity_when_it_or_its_edge_changed() -> None:
    ids = {"service:checkout"}
    assert _touches({"kind": "node", "id": "service:checkout"}, ids)
    assert not _touches({"kind": "node", "id": "service:tax"}, ids)
    assert _touches({"kind": "edge", "id": "x", "hop": {"from": "service:checkout",
                                                      "to": "service:fraud"}}, ids)
    assert _touches({"kind": "edge", "id": "team:payments-[OWNS]->service:checkout@3"}, ids)
    assert not _touches({"kind": "edge", "id": "service:cart-[CALLS]->service:user@3"}, ids)


def test_a_proposed_record_would_supersede_only() -> None:
    text = c.rationale({
        "adr": {"ceid": "adr:0016", "name": "Admin UI Authorisation MVP"},
        "status": "accepted", "status_text": "Accepted", "date": "2025-10-13",
        "status_ref": "docs/adr/0016-admin-ui.md#L7@cf91439",
        "superseded_by": [{"entity": {"ceid": "adr:0033", "name": "Admin UI scope-based RBAC"},
                           "status": "proposed",
                           "hop": {"type": "SUPERSEDES", "from": "adr:0033", "to": "adr:0016",
                                   "evidence_ref": "docs/adr/0033-rbac.md#L9@cf91439"}}],
        "quotes": [{"section": "Context", "text": "It builds on authentication.",
                    "evidence_ref": "docs/adr/0016-admin-ui.md#L11@cf91439"}]}, c.Citations())
    assert text.startswith('adr:0016 "Admin UI Authorisation MVP" (status accepted[1]; adr:0033 '
                           '"Admin UI scope-based RBAC" (proposed) would supersede it[2], dated')


def test_a_record_answering_in_place_of_the_one_it_superseded_says_so() -> None:
    """modernisation-platform: "what are the team's core languages?" matched ADR 4, which
    ADR 19 superseded; ADR 19 answers and names ADR 4, cited at its supersession line; a
    superseded record names the later one even when its own status already says so."""
    cites = c.Citations()
    hop = {"type": "SUPERSEDES", "from": "adr:0019", "to": "adr:0004",
           "evidence_ref": "adr/0004-use-bash-node-python.md#L7@cf91439"}
    text = c.rationale({
        "adr": {"ceid": "adr:0019", "name": "Use bash and go"}, "status": "accepted",
        "date": "2021-11-01", "replaces": {"adr": {"ceid": "adr:0004",
                                                    "name": "Use bash, node and python"},
                                            "hop": hop},
        "quotes": [{"section": "Decision", "text": "We will use bash and go.",
                    "evidence_ref": "adr/0019-use-bash-and-go.md#L15@cf91439"}]}, cites)
    assert text.startswith('adr:0019 "Use bash and go" (status accepted, dated 2021-11-01), '
                           'which superseded adr:0004 "Use bash, node and python"[1]')
    old = c.rationale({
        "adr": {"ceid": "adr:0004", "name": "Use bash, node and python"},
        "status": "superseded", "status_text": "⌛️ Superseded 0019", "date": "2020-11-19",
        "superseded_by": [{"entity": {"ceid": "adr:0019", "name": "Use bash and go"},
                           "hop": hop, "status": "accepted"}],
        "quotes": [{"section": "Context", "text": "We need languages.",
                    "evidence_ref": "adr/0004-use-bash-node-python.md#L11@cf91439"}]},
        c.Citations())
    assert 'superseded by adr:0019 "Use bash and go"' in old


def test_how_a_page_is_stored_is_no_change_a_reader_asked_about() -> None:
    """A window's changes leave out chunk edges and chunks (alphagov/gsp's June 2019: six new
    ADRs were "62 changes", 47 of them HAS_CHUNK edges)."""
    assert _internal({"kind": "edge", "type": "HAS_CHUNK"})
    assert _internal({"kind": "node", "label": "Chunk"})
    assert not _internal({"kind": "edge", "type": "SUPERSEDES"})
    assert not _internal({"kind": "node", "label": "DecisionNode"})
