""""What are the main components of this system?": which questions ask for an overview, the
facts drawn from the graph's rows, and how the overview reads."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.composers import Citations, system_overview
from substrate.retrieval.overview import asks_overview, summarise


def test_questions_about_the_system_as_a_whole() -> None:
    for q in ("What are the main components of this system?", "Give me an overview",
              "What is the architecture of bank of anthos?", "What does the system consist of?",
              "How is the platform structured?", "What is the big picture?",
              "What are the modules and what does each do?",
              "What are the components of this repository?", "What is this repository for?",
              "What does this project do?", "Describe this repo", "What is our tech stack?",
              "Which technologies do we use?"):
        assert asks_overview(q), q
    for q in ("What are our top architectural risks?", "Why was the architecture chosen?",
              "Which architecture decisions are pending?", "What does checkout depend on?",
              "When did the architecture change?", "Why did we choose this tech stack?"):
        assert not asks_overview(q), q


def _entity(ceid: str) -> dict[str, Any]:
    kind, name = ceid.split(":", 1)
    return {"ceid": ceid, "name": name, "label": {"service": "Service", "module": "Module"}.get(
        kind, "Infrastructure")}


def _edge(src: str, dst: str, ref: str) -> dict[str, Any]:
    return {"to": _entity(dst), "hop": {"type": "CALLS", "from": src, "to": dst,
                                        "evidence_ref": ref}}


ROWS = [
    {"entity": _entity("service:api"), "language": "Go",
     "description": "The public API. It routes every request to the others.",
     "description_ref": "description|The public API. It routes ...|api/README.md#L3@abc1234",
     "kind": None, "image": None,
     "out": [_edge("service:api", "service:orders", "compose.yml#L7@abc1234"),
             _edge("service:api", "service:orders", "compose.yml#L8@abc1234"),  # one per end
             _edge("service:api", "infra:db", "compose.yml#L9@abc1234")]},
    {"entity": _entity("service:orders"), "language": None, "description": None,
     "description_ref": None, "kind": None, "image": None,
     "out": [_edge("service:orders", "infra:db", "compose.yml#L15@abc1234")]},
    {"entity": _entity("infra:db"), "language": None, "description": None,
     "description_ref": None, "kind": "database", "image": "postgres:16", "out": []},
]


def test_the_overview_facts_and_text() -> None:
    fact = summarise(ROWS)
    assert [e["entity"]["ceid"] for e in fact["services"]] == ["service:api", "service:orders"]
    assert len(fact["links"]) == 3 and fact["fan_in"] == {"service:orders": 1, "infra:db": 2}
    cites = Citations()
    text = system_overview(fact, cites)
    assert text == (
        "The system holds 2 service(s) and 1 infrastructure component(s). Services: api (Go): "
        "The public API.[1]; orders. Infrastructure: db (database: postgres). Connections: api -> "
        "orders[2], db[3]; orders -> db[4]. Depended on most: db (2), orders (1).")
    assert cites.items[0]["evidence_ref"] == "api/README.md#L3@abc1234"
    assert system_overview(summarise([]), Citations()).startswith("No service")


def test_modules_of_code_no_deployment_names_are_listed_too() -> None:
    """Adyen's commercetools integration deploys nothing the connectors read: its two
    modules (a folder with a Dockerfile and a package.json each) are the system."""
    rows = [{"entity": _entity("module:extension"), "language": "JavaScript",
             "description": "Handles payments. More text.", "out": [],
             "description_ref": "description|Handles payments.|extension/README.md#L3@abc1234"},
            {"entity": _entity("module:notification"), "language": "JavaScript", "out": []}]
    cites = Citations()
    text = system_overview(summarise(rows), cites)
    assert text == ("The system holds 0 service(s) and 0 infrastructure component(s), and 2 "
                    "module(s) of code that no deployment names. Modules: extension "
                    "(JavaScript): Handles payments.[1]; notification (JavaScript).")


def test_the_overview_opens_with_what_the_readme_says_the_whole_is() -> None:
    repo = {"entity": {"ceid": "repo:sock", "name": "sock", "label": "Repository"},
            "language": None, "kind": None, "image": None,
            "description": "The application is the user-facing part of an online shop\n"
                           "that sells socks.",
            "description_ref": "description|The application ...|README.md#L5@abc1234",
            "aliases": ["Sock Shop : A Microservice Demo Application", "Sock Shop"], "out": []}
    fact = summarise([repo, *ROWS])
    assert [p["title"] for p in fact["projects"]] == ["Sock Shop : A Microservice Demo "
                                                      "Application"]
    assert len(fact["services"]) == 2  # the repository is no service
    cites = Citations()
    text = system_overview(fact, cites)
    assert text.startswith("Sock Shop : A Microservice Demo Application: The application is "
                           "the user-facing part of an online shop that sells socks.[1] The "
                           "system holds 2 service(s)"), text
    assert cites.items[0]["evidence_ref"] == "README.md#L5@abc1234"
    # a repository whose README says nothing of it opens nothing
    silent = summarise([{**repo, "description": None}, *ROWS])
    assert silent["projects"] == [] and system_overview(silent, Citations()).startswith(
        "The system holds")
