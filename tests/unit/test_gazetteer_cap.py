"""A gazetteer past its cap (``gazetteer.MAX_NAMES``): the ids a question's words would have
are looked up, and a prefix unique among the names held is not taken as unique."""

from __future__ import annotations

from typing import Any

from substrate.retrieval.gazetteer import PREFIXES, Gazetteer, name_keys, named_ids


def gazetteer(names: list[str], capped: bool = False) -> Gazetteer:
    entities = [{"ceid": f"service:{n}", "name": n, "label": "Service"} for n in names]
    return Gazetteer([(k, e) for e in entities for k in name_keys(e, [])], capped)


def ceids(found: list[dict[str, Any]]) -> list[str]:
    return [e["ceid"] for e in found]


def test_runs_of_words_become_ids_with_and_without_a_trailing_service() -> None:
    ids = named_ids("who owns the payments export 9 service", PREFIXES)
    assert {"service:payments-export-9", "team:payments-export-9", "infra:payments-export-9",
            "repo:payments-export-9", "service:export-9"} <= set(ids)
    assert "service:9-service" in ids and "service:9" in ids  # "9 service" without "service"
    assert not any(i.endswith(":the") or i.endswith(":who") for i in ids)  # stop words alone
    assert len(ids) == len(set(ids))


def test_names_looked_up_are_matched_beside_the_held_ones() -> None:
    held = gazetteer(["checkout"], capped=True)
    extra = gazetteer(["payments-export-9"])
    assert ceids(held.match("does checkout call payments export 9?", extra)) == [
        "service:checkout", "service:payments-export-9"]
    assert ceids(held.match("does checkout call payments export 9?")) == ["service:checkout"]


def test_a_capped_gazetteer_takes_no_unique_prefix() -> None:
    names = ["balancereader", "ledgerwriter"]
    assert ceids(gazetteer(names).match("who calls balance")) == ["service:balancereader"]
    assert ceids(gazetteer(names, capped=True).match("who calls balance")) == []


def test_a_service_by_the_other_number_when_no_service_has_the_word() -> None:
    team = {"ceid": "team:payments", "name": "payments", "label": "Team"}
    services = [{"ceid": f"service:{n}", "name": n, "label": "Service"}
                for n in ("payment", "orders", "contact", "contacts")]
    both = Gazetteer([(k, e) for e in [*services, team] for k in name_keys(e, [])])
    assert ceids(both.match("what does payments depend on?")) == ["service:payment",
                                                                   "team:payments"]
    assert ceids(both.match("who calls order")) == ["service:orders"]
    assert ceids(both.match("who calls contacts")) == ["service:contacts"]  # named as such
