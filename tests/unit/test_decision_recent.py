""""What is the most recent architecture decision?": which questions ask for the records by
date, how the records are ordered, and the answer's wording."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.composers import Citations, decisions_by_date
from substrate.retrieval.decision_dates import asked_order, day_of, ordered


def test_which_questions_ask_for_the_newest_or_oldest_records() -> None:
    assert asked_order("What is the most recent architecture decision?") == (False, 1)
    assert asked_order("What is the latest ADR?") == (False, 1)
    assert asked_order("What are the last 3 ADRs?") == (False, 3)
    assert asked_order("Show the newest decisions") == (False, 3)  # plural: a few
    assert asked_order("What was our first architecture decision?") == (True, 1)
    assert asked_order("What are the 8 oldest ADRs?") == (True, 8)
    for q in ("Why was the latest ADR written?",  # a rationale
              "What did ADR 12 decide last?",  # one record, named
              "Which decisions were made in 2024?",  # a year's records
              "Which ADRs changed last year?",  # a time window, not an order
              "What is the most recent incident?"):  # not a decision
        assert asked_order(q) is None, q


def _row(ceid: str, date: str | None, first_seen: str | None = None,
         number: int | None = None) -> dict[str, Any]:
    return {"entity": {"ceid": ceid, "name": ceid, "label": "DecisionNode"},
            "props": {"date": date, "first_seen": first_seen, "number": number}}


def test_records_are_ordered_by_their_own_date_else_their_first_appearance() -> None:
    assert day_of({"date": "2024-05-22 (back dated)"}) == "2024-05-22"
    assert day_of({"date": None, "first_seen": "2023-11-06T10:00:00Z"}) == "2023-11-06"
    assert day_of({"date": "soon"}) == ""
    rows = [_row("adr:0003", "2022-03-30", number=3), _row("adr:0004", "2022-03-30", number=4),
            _row("adr:0009", None), _row("adr:0005", None, "2023-11-06T00:00:00Z"),
            _row("adr:0001", "2022-03-14", number=1)]
    newest = [r["entity"]["ceid"] for r in ordered(rows, oldest=False)]
    assert newest == ["adr:0005", "adr:0004", "adr:0003", "adr:0001", "adr:0009"]
    oldest = [r["entity"]["ceid"] for r in ordered(rows, oldest=True)]
    assert oldest == ["adr:0001", "adr:0003", "adr:0004", "adr:0005", "adr:0009"]


def _record(n: int, date: str, own: bool = True) -> dict[str, Any]:
    ceid = f"adr:{n:04d}"
    return {"adr": {"ceid": ceid, "name": f"Decision {n}"}, "status": "accepted",
            "date": date, "own_date": own,
            "hop": {"type": "RECORDED", "from": ceid, "to": ceid,
                    "evidence_ref": f"docs/adr/{n:04d}.md#L1@abc1234"}}


def test_the_answer_names_the_record_asked_for_then_the_ones_before_it() -> None:
    fact = {"oldest": False, "asked": 1, "total": 3,
            "records": [_record(3, "2026-10-22"), _record(2, "2026-09-28", own=False)]}
    cites = Citations()
    text = decisions_by_date(fact, cites)
    assert text == ('The most recent decision record is adr:0003 "Decision 3" (accepted, '
                    'dated 2026-10-22)[1]. Before it: adr:0002 "Decision 2" (accepted, '
                    'first seen 2026-09-28)[2].')
    assert [c["evidence_ref"] for c in cites.items] == ["docs/adr/0003.md#L1@abc1234",
                                                        "docs/adr/0002.md#L1@abc1234"]
    many = decisions_by_date({**fact, "asked": 2}, Citations())
    assert many.startswith("The 2 most recent decision records (of 3): adr:0003")
    assert decisions_by_date({**fact, "records": []}, Citations()).startswith("No decision")


def test_a_why_question_about_the_latest_record_names_an_order() -> None:
    from substrate.retrieval.decision_dates import recency

    assert recency("Why was the latest ADR written?") is False  # newest first
    assert recency("Why did we make our first architecture decision?") is True
    assert recency("Why was ADR 12 the latest?") is None  # a record named by number
    assert recency("Why did we choose Kafka?") is None
