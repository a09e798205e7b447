"""retrieval/resolve_entity finds an entity by canonical id (an index seek) or, failing that,
by its exact name in any case or an alias: the candidates come from the entity_names
full-text index (direct.name_phrase), and a name without letters or digits reads the label's
entities. Exercised through /impact/{id} (an item id, key or exact name) on the demo."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from substrate.settings import Settings
from tests.support.gateway_client import gateway


@pytest.fixture(scope="module")
def api(stack: Settings) -> Iterator[httpx.Client]:
    with gateway(stack) as c:
        yield c


def item_of(api: httpx.Client, value: str) -> httpx.Response:
    return api.get(f"/impact/{quote(value, safe='')}", params={"depth": 0})


@pytest.mark.parametrize("value", ["item:shop-10", "SHOP-10", "Faster, safer checkout",
                                   "FASTER, SAFER CHECKOUT", "faster, safer checkout"])
def test_an_item_by_id_key_or_exact_name_in_any_case(api: httpx.Client, value: str) -> None:
    r = item_of(api, value)
    assert r.status_code == 200, r.text
    assert r.json()["item"]["ceid"] == "item:shop-10"


@pytest.mark.parametrize("value", ["Faster safer", "safer checkout", "Faster, safer checkouts",
                                   "---"])
def test_a_part_of_a_name_or_no_words_is_not_found(api: httpx.Client, value: str) -> None:
    r = item_of(api, value)
    assert r.status_code == 404, r.text
    assert r.json()["error"]["code"] == "not_found"
