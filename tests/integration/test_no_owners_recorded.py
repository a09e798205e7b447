"""A repository with no CODEOWNERS, ownership file or catalog descriptor records no owner:
"which services have no owner?" lists every service (the translator reads ownership as part
of the contract even where no OWNS edge exists), where it could not read the question before
and answered with unrelated documents. Gold: the files this test writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

COMPOSE = """\
services:
  cart:
    image: shop/cart:1.0
  orders:
    image: shop/orders:1.0
    environment:
      CART_URL: http://cart:8080
"""


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with repo_tenant(stack, tmp_path_factory.mktemp("unowned"), "t-unowned",
                     {"docker-compose.yml": COMPOSE}) as name:
        yield name


def test_every_service_has_no_owner_when_none_is_recorded(stack: Settings, tenant: str
                                                         ) -> None:
    body = ask(stack, tenant, "Which services have no owner?")
    assert body["answer"].startswith("2 result(s): cart[1], orders[2]"), body["answer"]
    assert [c["evidence_ref"].split("@")[0] for c in body["citations"]] == [
        "docker-compose.yml#L2", "docker-compose.yml#L4"]


def test_a_question_about_something_the_graph_lacks_says_so_first(stack: Settings,
                                                                  tenant: str) -> None:
    """Before, the answer was "No family answered this question; the most relevant evidence
    is: ..." (unrelated documents) with no word on the name."""
    body = ask(stack, tenant, "Who owns the payment service?")
    assert body["answer"].startswith('Nothing named "payment" is known at this snapshot'), \
        body["answer"]
    assert "cart" not in body["answer"].split(".")[0]
    body = ask(stack, tenant, "What does payment depend on?")
    assert body["answer"].startswith('Nothing named "payment" is known'), body["answer"]
