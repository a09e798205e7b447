""""How is cart deployed?" is answered with the files that deploy it, each cited where it
declares the service: its Compose file, its Kubernetes manifest and its Helm chart (where the
chart names itself). Gold: the files this test writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from substrate.settings import Settings
from tests.support.repo_tenant import ask, repo_tenant

pytestmark = pytest.mark.integration

K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
spec:
  template:
    spec:
      containers:
      - name: cart
        image: shop/cart:1.0
"""


@pytest.fixture(scope="module")
def tenant(stack: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = {"docker-compose.yml": "services:\n  cart:\n    build: ./src/cart\n",
             "src/cart/Dockerfile": "FROM eclipse-temurin:21\n",
             "src/cart/chart/Chart.yaml": "apiVersion: v2\nname: cart\nversion: 0.1.0\n",
             "deploy/kubernetes/cart.yaml": K8S}
    with repo_tenant(stack, tmp_path_factory.mktemp("deploy"), "t-deploy", files) as name:
        yield name


def test_how_a_service_is_deployed_cites_each_file_that_deploys_it(stack: Settings,
                                                                   tenant: str) -> None:
    body = ask(stack, tenant, "How is the cart service deployed?")
    assert body["route"]["intent"] == "attributes"
    assert body["answer"].startswith(
        "cart: deployed by Docker Compose (docker-compose.yml)[1]. Also recorded: deployed by "
        "Kubernetes (deploy/kubernetes/cart.yaml)[2]; deployed by the Helm chart "
        "src/cart/chart[3]."), body["answer"]
    refs = [c["evidence_ref"] for c in body["citations"]]
    assert refs[0].startswith("docker-compose.yml#L2@")
    assert refs[1].startswith("deploy/kubernetes/cart.yaml#L4@")
    assert refs[2].startswith("src/cart/chart/Chart.yaml#L2@")
