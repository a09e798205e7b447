"""The devset question set (issue 8): format, coverage, and every gold evidence resolves in its
bundle (``git show <commit>:<path>`` exists, the line exists and holds the key token); the
scorer tells right from wrong answers and evidence."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.devset_qa import (
    FAMILIES,
    KINDS,
    REPOS,
    answer_right,
    blob_lines,
    clone,
    evidence_right,
    load,
    parse_ref,
    score,
    summarise,
)

FIELDS = {"id", "repo", "family", "question", "answer", "evidence", "notes"}
ROWS = load()


@pytest.fixture(scope="session")
def clones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each bundle cloned once per session."""
    root = tmp_path_factory.mktemp("devset-qa")
    return {name: clone(name, root) for name in REPOS}


def _check_answer(gold: dict[str, Any]) -> None:
    assert gold["kind"] in KINDS
    if gold["kind"] == "entities":
        assert gold["all"] and all(isinstance(n, str | list) for n in gold["all"])
    elif gold["kind"] == "value":
        assert gold["any"] and all(isinstance(v, str) and v for v in gold["any"])
    elif gold["kind"] == "date":
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", gold["date"])
    elif gold["kind"] == "rationale":
        assert re.fullmatch(r"\d{4}", gold["adr"]) and len(gold["phrases"]) >= 2
        assert 1 <= gold["min_phrases"] <= len(gold["phrases"])


def test_format_and_coverage() -> None:
    assert len(ROWS) >= 120
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert FIELDS <= set(row) <= FIELDS | {"as_of"}, row["id"]
        assert row["repo"] in REPOS and row["family"] in FAMILIES, row["id"]
        assert row["question"].strip() and row["evidence"], row["id"]
        _check_answer(row["answer"])
        if "as_of" in row:
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["as_of"]), row["id"]
        for ev in row["evidence"]:
            assert set(ev) == {"path", "line", "commit", "token"}, row["id"]
            assert re.fullmatch(r"[0-9a-f]{40}", ev["commit"]) and ev["line"] >= 1, row["id"]
    per_repo = Counter(r["repo"] for r in ROWS)
    assert set(per_repo) == set(REPOS) and min(per_repo.values()) >= 25
    assert set(FAMILIES) <= {r["family"] for r in ROWS}
    assert sum(1 for r in ROWS if r["family"] == "ownership" and "as_of" in r) >= 6
    adr_repos = {r["repo"] for r in ROWS if r["answer"]["kind"] == "rationale"}
    assert adr_repos == {"fac", "manage.get.gov"}


def test_every_gold_evidence_resolves_in_its_bundle(clones: dict[str, Path]) -> None:
    broken = []
    for row in ROWS:
        for ev in row["evidence"]:
            lines = blob_lines(clones[row["repo"]], ev["commit"], ev["path"])
            if lines is None or not 1 <= ev["line"] <= len(lines) \
                    or ev["token"] not in lines[ev["line"] - 1]:
                broken.append(f"{row['id']}: {ev['path']}#L{ev['line']}@{ev['commit'][:8]}")
    assert broken == []


def test_a_missing_path_commit_or_line_does_not_resolve(clones: dict[str, Path]) -> None:
    row = ROWS[0]
    ev, repo = row["evidence"][0], clones[row["repo"]]
    assert blob_lines(repo, ev["commit"], "no/such/file.yaml") is None
    assert blob_lines(repo, "0" * 40, ev["path"]) is None
    assert not evidence_right(row["evidence"], [f"{ev['path']}#L99999@{ev['commit']}"], repo)


ENT = {"kind": "entities", "all": ["ledger-db", ["cart", "carts"]], "none": ["accounts-db"]}


def test_entities_answers() -> None:
    assert answer_right(ENT, "balancereader depends on ledger-db and carts [1].")
    assert not answer_right(ENT, "balancereader depends on ledger-db [1].")
    assert not answer_right(ENT, "ledger-db, carts and accounts-db")
    assert not answer_right(ENT, "It depends on ledger-db2 and carts-db.")  # whole tokens only
    assert not answer_right(ENT, "Most relevant evidence: ledger-db (Service); carts (Service).")
    owners = {"kind": "entities", "all": ["@GoogleCloudPlatform/anthos-dpe"], "none": []}
    assert answer_right(owners, "frontend is owned by GoogleCloudPlatform/anthos-dpe [1].")
    assert not answer_right(owners, "frontend is owned by .")


def test_value_date_rationale_and_nobody_answers() -> None:
    assert answer_right({"kind": "value", "any": ["balancereader:8080"]},
                        "BALANCES_API_ADDR is balancereader:8080 [1]")
    assert not answer_right({"kind": "value", "any": ["5432"]}, "No grounded answer.")
    day = {"kind": "date", "date": "2020-02-19", "tolerance_days": 3}
    assert answer_right(day, "loadgenerator started calling frontend on 2020-02-20 (f460cf7).")
    assert answer_right(day, "since February 19, 2020")
    assert not answer_right(day, "on 2020-03-19")
    why = {"kind": "rationale", "adr": "0005", "phrases": ["licensing fees", "cloud.gov"],
           "min_phrases": 1}
    assert answer_right(why, "ADR 0005 (Accepted): Oracle may be subject to licensing fees [1].")
    assert answer_right(why, "Per adr:0005, cloud.gov supports MySQL, PostgreSQL and Oracle.")
    assert not answer_right(why, "Most relevant evidence: adr:0005 (Chunk); adr:0003 (Chunk)")
    assert not answer_right(why, "Oracle may be subject to licensing fees.")  # no ADR cited
    nobody = {"kind": "nobody", "none": ["@"]}
    assert answer_right(nobody, "No owner is recorded for cart.")
    assert not answer_right(nobody, "cart is owned by .")
    assert not answer_right(nobody, "cart is owned by @team; no owner for carts-db")


def test_evidence_matching(clones: dict[str, Path]) -> None:
    row = next(r for r in ROWS if r["id"] == "boa-015")  # balancereader:8080 in config.yaml
    gold = row["evidence"]
    ev, repo = gold[0], clones["bank-of-anthos"]
    right = f"{ev['path']}#L{ev['line']}@{ev['commit'][:12]}"
    assert parse_ref(right) == (ev["path"], ev["line"], ev["commit"][:12])
    assert evidence_right(gold, [right], repo)
    assert evidence_right(gold, ["README.md#L1@abc1234", right], repo)
    assert not evidence_right(gold, [f"{ev['path']}#L{ev['line'] + 1}@{ev['commit']}"], repo)
    assert not evidence_right(gold, ["adr:0005", ""], repo)
    # another commit where the same fact sits on the same line resolves to the same fact
    first = "57292ac7"  # config.yaml consolidated; the address line exists since
    lines = blob_lines(repo, first, ev["path"]) or ()
    moved = [i + 1 for i, text in enumerate(lines) if ev["token"] in text]
    assert moved and evidence_right(gold, [f"{ev['path']}#L{moved[0]}@{first}"], repo)


def test_score_and_summary(clones: dict[str, Path]) -> None:
    row = next(r for r in ROWS if r["id"] == "boa-015")
    ev = row["evidence"][0]
    good = {"answer": "frontend reaches balancereader at balancereader:8080 [1].",
            "citations": [{"n": 1, "evidence_ref":
                           f"{ev['path']}#L{ev['line']}@{ev['commit']}"}]}
    bad = {"answer": "No grounded answer.", "citations": []}
    scored = [score(row, good, clones[row["repo"]], False),
              score(row, bad, clones[row["repo"]], False)]
    assert (scored[0].right, scored[0].evidence, scored[0].no_model) == (True, True, True)
    assert (scored[1].right, scored[1].evidence, scored[1].answered) == (False, False, False)
    figures = summarise(scored)
    assert figures["overall"]["exact_answer_accuracy"] == 0.5
    assert figures["families"]["attributes"]["evidence_accuracy"] == 0.5
    assert figures["families"]["attributes"]["answered_no_model"] == 0.5
