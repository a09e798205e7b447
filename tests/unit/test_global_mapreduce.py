"""The model-free parts of global map-reduce: reading the scout's scores and composing the
reduce answer with citations to the members' evidence."""

from __future__ import annotations

import json

import pytest

from substrate.retrieval.global_mapreduce import _parse_scores, compose


def test_scout_scores_are_read_clamped_and_limited_to_the_batch() -> None:
    reply = "Here you go: " + json.dumps({"scores": [
        {"id": "L1-a", "score": 7}, {"id": "L1-b", "score": 14}, {"id": "L1-x", "score": 3}]})
    assert _parse_scores(reply, ["L1-a", "L1-b"]) == {"L1-a": 0.7, "L1-b": 1.0}
    with pytest.raises(ValueError):
        _parse_scores("no JSON at all", ["L1-a"])


def test_the_composed_answer_cites_the_evidence_of_each_communitys_members() -> None:
    top = [(0.8, {"title": "checkout, payment", "members": [{"ceid": "service:payment"}],
                  "summary": "Checkout calls payment. Payment stores cards in payments-db. "
                             "Unrelated sentence."})]
    hops = [{"from": "service:payment", "type": "DEPENDS_ON", "to": "infra:payments-db",
             "evidence_ref": "docker-compose.yml#L142@d2fbaec"},
            {"from": "service:cart", "type": "CALLS", "to": "service:pricing",
             "evidence_ref": "docker-compose.yml#L90@d2fbaec"}]
    text = compose("where are payments stored?", top, hops)
    lines = text.splitlines()
    assert lines[1].startswith("- checkout, payment (relevance 0.80): ")
    assert "payments-db" in lines[1] and lines[1].endswith("[1]")
    assert "[1] service:payment DEPENDS_ON infra:payments-db: docker-compose.yml#L142@d2fbaec" \
        in lines
