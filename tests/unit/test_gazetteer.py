"""The tenant's names found in a question (substrate/retrieval/gazetteer.py): role words."""

from __future__ import annotations

from substrate.retrieval.gazetteer import match_names


def test_the_api_is_the_one_service_named_for_it() -> None:
    """US Notify's "what language is the API written in?": "the API" is notify-api, the one
    service whose name ends so; "an API" names nothing, and neither does a short word
    anywhere else."""
    names = [("notifyapi", {"ceid": "service:notify-api", "name": "notify-api",
                            "label": "Service"}),
             ("worker", {"ceid": "service:worker", "name": "worker", "label": "Service"})]
    assert [e["ceid"] for e in match_names("What language is the API written in?", names)] \
        == ["service:notify-api"]
    assert match_names("Which services expose an API?", names) == []
    two = [*names, ("adminapi", {"ceid": "service:admin-api", "name": "admin-api",
                                 "label": "Service"})]
    assert match_names("What language is the API written in?", two) == []
