"""A datastore named after the service beside it, which no setting links to it (Sock Shop's
images hard-code their hosts): the edge waits in the verification queue (confidence 0.6,
under the threshold), the dependency answer says nothing is recorded and names the suggestion
with its queue item and the store's line; once a reviewer approves it, the answer states it
as a dependency. Gold lines read from the Compose file written here."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from substrate.settings import Settings
from tests.support.gateway_client import gateway
from tests.support.repo_tenant import ask, repo_tenant
from tests.unit.test_manifests import SOCK_COMPOSE

pytestmark = pytest.mark.integration

COMPOSE = SOCK_COMPOSE  # carts, carts-db (line 4), user with MONGO_HOST, user-db, session-db


@pytest.fixture()
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"docker-compose.yml": COMPOSE}
    try:
        with repo_tenant(stack, tmp_path_factory.mktemp("sock"), "t-suggest", files) as name:
            yield name
    finally:
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM verification_queue WHERE tenant_id LIKE 't-suggest-%'")


def test_a_store_named_after_a_service_is_suggested_until_approved(
        stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What does carts depend on?")
    answer = body["answer"]
    assert answer.startswith("No dependencies are recorded for carts"), answer
    assert "Suggested, awaiting verification" in answer
    assert "carts-db (DEPENDS_ON, by name, confidence 0.60; queue item " in answer
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert refs and refs[0].startswith("docker-compose.yml#L4@"), refs  # "carts-db:"
    item = int(answer.split("queue item ", 1)[1].split(")", 1)[0])
    # user's store is linked by its setting: a fact, nothing suggested
    user = ask(stack, tenant, "What does user depend on?")["answer"]
    assert user.startswith("user depends on: user-db") and "Suggested" not in user

    with gateway(stack, headers={"X-Tenant": tenant}) as api:
        done = api.post(f"/queue/{item}/approve", json={"comment": "carts-db is carts'"})
    assert done.status_code == 200, done.text
    after = ask(stack, tenant, "What does carts depend on?")["answer"]
    assert after.startswith("carts depends on: carts-db"), after
    assert "Suggested" not in after


def test_a_rejected_suggestion_leaves_the_answer_at_once(stack: Settings, tenant: str) -> None:
    body = ask(stack, tenant, "What does carts depend on?")
    assert "Suggested, awaiting verification" in body["answer"], body["answer"]
    assert body.get("pending") == ["verification"]  # so the answer is not cached
    assert body["cache"]["status"] != "storing"
    item = int(body["answer"].split("queue item ", 1)[1].split(")", 1)[0])
    with gateway(stack, headers={"X-Tenant": tenant}) as api:
        done = api.post(f"/queue/{item}/reject", json={"comment": "not carts'"})
    assert done.status_code == 200, done.text
    after = ask(stack, tenant, "What does carts depend on?")["answer"]
    assert after.startswith("No dependencies are recorded for carts"), after
    assert "Suggested" not in after
