"""A technology the question names that no entity is called ("which services use MongoDB?"),
and how the datastores running it are answered."""

from __future__ import annotations

from substrate.retrieval import composers as c
from substrate.retrieval.attributes import EACH
from substrate.retrieval.technologies import names_it, technology_named


def test_the_technology_a_question_names() -> None:
    assert technology_named("Which services use MongoDB?") == "mongodb"
    assert technology_named("What depends on Postgres?") == "postgres"
    assert technology_named("Who uses SQL Server?") == "sqlserver"
    assert technology_named("What does checkout depend on?") is None


def test_a_datastore_named_after_the_technology_answers_itself() -> None:
    assert names_it({"name": "redis-cart"}, "redis")
    assert names_it({"name": "orders-mysql"}, "mariadb")
    assert not names_it({"name": "carts-db"}, "mongodb")


def test_the_datastores_running_it_are_answered_together() -> None:
    def used(name: str) -> dict[str, object]:
        return {"ceid": f"infra:{name}", "name": name, "why": "technology", "mention": "mongodb"}

    hop = {"type": "DEPENDS_ON", "from": "service:user", "to": "infra:user-db",
           "evidence_ref": "compose.yml#L155@99bbbea", "address": "user-db:27017"}
    facts = [{"subject": used("carts-db"), "target": None, "hops": []},
             {"subject": used("orders-db"), "target": None, "hops": []},
             {"subject": used("user-db"), "target": {"ceid": "service:user", "name": "user"},
              "hops": [hop]}]
    text = c.dependencies(facts, c.Citations(), callers=True)
    assert text == ("mongodb runs as carts-db, orders-db, user-db. user-db is called directly "
                    "by: user (DEPENDS_ON at user-db:27017)[1]. Nothing is recorded as calling "
                    "or depending on carts-db, orders-db (checked the CALLS and DEPENDS_ON edges "
                    "into each).")


def test_one_attribute_of_each_service() -> None:
    assert EACH.search("What language is each service written in?")
    assert EACH.search("Which image does every service run?")
    assert not EACH.search("What language is checkout written in?")
    checkout = {"ceid": "service:checkout", "name": "checkout"}
    fact = {"each": "language", "silent": [{"ceid": "service:web", "name": "web"}],
            "stated": [{"node": checkout, "attr": "language", "value": "Go",
                        "refs": ["services/checkout/go.mod#L1@abc1234"]}]}
    cites = c.Citations()
    assert c.attributes([fact], cites) == ("Language of each service: checkout: "
                                           "Go[1]. Not stated for: web.")
    assert cites.items[0]["evidence_ref"] == "services/checkout/go.mod#L1@abc1234"
