"""Attribute answers (issue 8): which recorded value a question asks for (pure ranking, no
database), and the lines a wrapped ADR sentence is cited with."""

from __future__ import annotations

from typing import Any

from substrate.retrieval import composers as c
from substrate.retrieval.adr_text import sentences, written_status
from substrate.retrieval.attributes import node_values, rank, wanted

LEDGER = {"ceid": "infra:ledger-db", "name": "ledger-db", "label": "Infrastructure",
          "mention": "ledger-db"}
BALANCE = {"ceid": "service:balancereader", "name": "balancereader", "label": "Service",
           "mention": "balancereader"}
CHECKOUT = {"ceid": "service:checkout", "name": "checkout", "label": "Service",
            "mention": "checkout"}


def edge(target: dict[str, Any], outgoing: bool, address: str, port: str | None = None,
         kind: str | None = None, image: str | None = None) -> dict[str, Any]:
    props = {"address": address, "evidence_refs": [f"k8s/{target['name']}.yaml#L3@abc1234"]}
    if port:
        props["port"] = port
    return {"target": target, "kind": kind, "image": image, "outgoing": outgoing, "props": props,
            "hop": {"type": "CALLS", "evidence_ref": "k8s/config.yaml#L9@abc1234"}}


def test_the_kind_of_value_asked_for() -> None:
    assert wanted("On which port does ledger-db listen?") == {"port"}
    assert wanted("Which image does db run?") == {"image"}
    assert wanted("What Redis URL does checkout use?") == {"address"}
    assert wanted("Which database name does accounts-db serve?") == {"name"}
    assert wanted("Where is it?") == {"address"}  # nothing named: an address
    # the runtime's version, not the image's tag (which is asked for by name)
    assert wanted("Which Go version does dispatch use?") == {"language_version"}
    assert wanted("Which Node version does the web image use?") == {"language_version",
                                                                     "image"}
    # the runtime it runs on: its language and version, and what it is built with
    assert wanted("What runtime does basket-api use?") == {"language_version", "language",
                                                          "framework"}


def test_a_runtime_version_before_the_image_and_the_tag_when_none_is_recorded() -> None:
    """"Which Go version does dispatch use?" (robot-shop): its runtime version, not the image
    it runs; with no version recorded, the image (its tag may say it)."""
    dispatch = {"ceid": "service:dispatch", "name": "dispatch", "label": "Service"}
    props = {"image": "robotshop/rs-dispatch:2.1.0", "language_version": "Go 1.17",
             "attribute_refs": ["image|robotshop/rs-dispatch:2.1.0|docker-compose.yaml#L135@abc",
                                "language_version|Go 1.17|dispatch/Dockerfile#L1@abc"]}
    got = rank("Which Go version does dispatch use?", [dispatch], [],
               {"service:dispatch": props})
    assert [c["value"] for c in got] == ["Go 1.17"]
    bare = {k: v for k, v in props.items() if k != "language_version"}
    got = rank("Which Go version does dispatch use?", [dispatch], [],
               {"service:dispatch": bare})
    assert [c["value"] for c in got] == ["robotshop/rs-dispatch:2.1.0"]


def test_address_of_x_is_how_others_reach_it() -> None:
    frontend = {"ceid": "service:frontend", "name": "frontend", "label": "Service"}
    rows = [edge(LEDGER, True, "jdbc:postgresql://ledger-db:5432/postgresdb", "5432",
                 "database"),
            edge(frontend, False, "balancereader:8080", "8080")]
    got = rank("What is the address of balancereader's API?", [BALANCE], rows, {})
    assert got[0]["value"] == "balancereader:8080"


def test_a_kind_word_picks_the_dependency_the_subject_uses() -> None:
    redis = {"ceid": "infra:checkout-redis", "name": "checkout-redis", "label": "Infrastructure"}
    orders = {"ceid": "service:orders", "name": "orders", "label": "Service"}
    rows = [edge(redis, True, "redis://checkout-redis:6379", "6379", "cache"),
            edge(orders, True, "http://orders:8080", "8080")]
    got = rank("What Redis URL does checkout use?", [CHECKOUT], rows, {})
    assert got[0]["value"] == "redis://checkout-redis:6379"


def test_two_named_entities_keep_only_the_edge_between_them() -> None:
    other = {"ceid": "infra:accounts-db", "name": "accounts-db", "label": "Infrastructure"}
    rows = [edge(LEDGER, True, "jdbc:postgresql://ledger-db:5432/postgresdb"),
            edge(other, True, "jdbc:postgresql://accounts-db:5432/accounts-db")]
    got = rank("At what address does balancereader reach ledger-db?", [BALANCE, LEDGER], rows,
               {})
    assert [g["value"] for g in got] == ["jdbc:postgresql://ledger-db:5432/postgresdb"]


def test_own_image_and_published_port_cite_their_lines() -> None:
    props = {"image": "postgres:16.1", "ports": ["5432:5432"],
             "env": ["POSTGRES_DB=orders", "POSTGRES_PASSWORD=***"],
             "attribute_refs": ["image|postgres:16.1|compose.yml#L50@abc1234",
                                "port|5432:5432|compose.yml#L52@abc1234",
                                "env|POSTGRES_DB|compose.yml#L54@abc1234"]}
    db = {"ceid": "infra:orders-db", "name": "orders-db", "label": "Infrastructure"}
    image = rank("Which image does orders-db run?", [db], [], {db["ceid"]: props})
    assert image[0]["value"] == "postgres:16.1"
    cites = c.Citations()
    text = c.attributes([{"subject": db, "stated": image}], cites)
    assert "postgres:16.1" in text and cites.items[0]["evidence_ref"].endswith("#L50@abc1234")
    port = rank("Which host port does orders-db publish?", [db], [], {db["ceid"]: props})
    assert port[0]["value"] == "5432:5432"
    name = rank("Which database name does orders-db serve?", [db], [], {db["ceid"]: props})
    assert [n["value"] for n in name] == ["orders"]  # never a masked secret


def test_nothing_recorded_is_said_plainly() -> None:
    assert rank("Which image does orders-db run?", [], [], {}) == []
    text = c.attributes([{"subject": LEDGER, "stated": []}], c.Citations())
    assert text.startswith("No address, port or image answering this is recorded for ledger-db")


def test_what_a_service_does_and_its_language_come_from_the_readme() -> None:
    """"What does X do?" and "what language is X written in?" are answered from the
    description and language a README gives (readme_tables), cited at their line."""
    assert wanted("What does recommendationservice do?") == {"description"}
    # a language question also takes the frameworks its build declares
    assert wanted("What language is cartservice written in?") == {"language", "framework"}
    assert wanted("Which programming language does checkout use?") == {"language", "framework"}
    assert wanted("Which web framework does payment use?") == {"framework"}
    props = {"description": "Recommends other products.", "language": "Python",
             "image": "example/reco:1", "attribute_refs": [
                 "description|Recommends other products.|README.md#L155@abc1234",
                 "language|Python|README.md#L155@abc1234"]}
    reco = {"ceid": "service:reco", "name": "reco", "label": "Service", "mention": "reco"}
    found = rank("What does reco do?", [reco], [], {reco["ceid"]: props})
    assert [(f["attr"], f["value"]) for f in found] == [
        ("description", "Recommends other products.")]
    cites = c.Citations()
    text = c.attributes([{"subject": reco, "stated": found}], cites)
    assert text == "reco: Recommends other products[1]."
    assert cites.items[0]["evidence_ref"] == "README.md#L155@abc1234"
    lang = rank("What language is reco written in?", [reco], [], {reco["ceid"]: props})
    assert c.attributes([{"subject": reco, "stated": lang}], c.Citations()) \
        == "reco: written in Python[1]."


ADR = """# 21. Use Django Admin

## Status

Pending review.

## Decision

Use Django's Admin site for administrative actions. Django
Admin gives administrators all the powers we anticipate needing, with little overhead on the
development team.

## Considered Options

### Option 1

- Composability
"""


def test_a_wrapped_sentence_cites_its_line_range_and_options_are_read() -> None:
    found = {s.text[:20]: s for s in sentences(ADR, 1, "Use Django Admin")}
    assert found["Use Django's Admin s"].lines() == "L9"
    assert found["Django Admin gives a"].lines() == "L9-L11"
    option = found["Option 1: Composabil"]  # an option's heading announces its list
    assert option.section == "Considered options" and option.lines() == "L15-L17"
    assert option.text == "Option 1: Composability."
    assert written_status(ADR, 1) == ("Pending review", 5)


def test_what_a_service_does_with_no_description_is_what_it_runs_and_talks_to() -> None:
    """OpenTelemetry demo's flagd: no README; its image and the services it calls say what it
    is, and the answer says that no description is recorded."""
    flagd = {"ceid": "service:flagd", "name": "flagd", "label": "Service", "mention": "flagd"}
    collector = {"ceid": "service:otel-collector", "name": "otel-collector",
                 "label": "Service"}
    props = {"image": "ghcr.io/open-feature/flagd:v0.16.0",
             "attribute_refs": ["image|ghcr.io/open-feature/flagd:v0.16.0|"
                                "docker-compose.yml#L593@abc1234"]}
    rows = [edge(collector, True, "otel-collector:4317")]
    got = rank("What does flagd do?", [flagd], rows, {"service:flagd": props})
    assert {g["value"] for g in got} == {"ghcr.io/open-feature/flagd:v0.16.0",
                                         "otel-collector:4317"}
    assert all(g["instead_of"] == "description" for g in got)
    text = c.attributes([{"subject": flagd, "stated": got}], c.Citations())
    assert text.startswith("No description of flagd is recorded; what the sources state "
                           "about it: "), text
    described = {**props, "description": "Feature flag daemon.",
                 "attribute_refs": [*props["attribute_refs"],
                                    "description|Feature flag daemon.|README.md#L3@abc1234"]}
    got = rank("What does flagd do?", [flagd], rows, {"service:flagd": described})
    assert [g["value"] for g in got] == ["Feature flag daemon."]
    assert "instead_of" not in got[0]


def test_an_answer_in_place_of_a_description_is_not_reported_as_sure() -> None:
    from substrate.retrieval.calibration import NEGATIVE, calibrated
    from substrate.retrieval.context import StrategyResult

    res = StrategyResult("attributes")
    res.facts.append({"subject": CHECKOUT, "stated": [{"attr": "image", "value": "x:1",
                                                       "instead_of": "description"}]})
    res.hops.append({"type": "DEFINED", "evidence_ref": "a.yml#L1@abc1234",
                     "confidence": 1.0})
    assert calibrated("attributes", {"attributes": res}, "No description of ...") == NEGATIVE


def test_the_port_a_service_uses_is_its_own_unless_it_names_a_peer() -> None:
    """"What port does X use?" asks for X's own port; a peer's port answers only when the
    question names the peer or its kind ("which Redis port does X use?")."""
    redis = {"ceid": "infra:checkout-redis", "name": "checkout-redis", "label": "Infrastructure"}
    config = {"ceid": "service:config-server", "name": "config-server", "label": "Service"}
    rows = [edge(config, True, "http://config-server:8888", "8888"),
            edge(redis, True, "redis://checkout-redis:6379", "6379", "cache")]
    props = {"ports": ["8081:8081"], "attribute_refs": ["ports|8081:8081|compose.yml#L48@abc1234"]}
    got = rank("What port does checkout use?", [CHECKOUT], rows, {CHECKOUT["ceid"]: props})
    assert got[0]["value"] == "8081:8081"
    got = rank("Which Redis port does checkout use?", [CHECKOUT], rows,
               {CHECKOUT["ceid"]: props})
    assert got[0]["value"] == "6379"


def test_the_port_a_service_listens_on_is_its_own_never_a_peer_it_calls() -> None:
    """Online Boutique: frontend's container listens on 8080, its Kubernetes Service takes
    callers on 80 (loadgenerator's FRONTEND_ADDR), and frontend calls adservice on 9555."""
    frontend = {"ceid": "service:frontend", "name": "frontend", "label": "Service",
                "mention": "frontend"}
    loadgen = {"ceid": "service:loadgenerator", "name": "loadgenerator", "label": "Service"}
    ads = {"ceid": "service:adservice", "name": "adservice", "label": "Service"}
    rows = [edge(loadgen, False, "frontend:80", "80"),
            edge(ads, True, "adservice:9555", "9555")]
    props = {"ports": ["8080"], "attribute_refs": ["ports|8080|k8s/frontend.yaml#L41@abc1234"]}
    got = rank("Which port does frontend listen on?", [frontend], rows,
               {frontend["ceid"]: props})
    assert [g["value"] for g in got] == ["8080", "80"]  # adservice's 9555 is not frontend's
    # Robot Shop's shipping: its Dockerfile's CART_ENDPOINT=cart:8080 is the only port
    # recorded near it, and it is cart's: nothing answers, rather than that
    shipping = {"ceid": "service:shipping", "name": "shipping", "label": "Service",
                "mention": "shipping"}
    cart = {"ceid": "service:cart", "name": "cart", "label": "Service"}
    assert rank("Which port does shipping listen on?", [shipping],
                [edge(cart, True, "cart:8080", "8080")], {}) == []
    # how callers reach it: the port they use first
    got = rank("What is the address of frontend?", [frontend], rows, {frontend["ceid"]: props})
    assert got[0]["value"] == "frontend:80"


def test_a_setting_of_the_subject_named_by_its_peers_kind_is_its_own() -> None:
    """manage.get.gov's "What is the database URL of app?" and fac's "What is the virus scan
    URL of web?": "of X" with the peer's kind or purpose named is X's own setting, not how
    others reach X (owasp's "-t http://app:8080")."""
    app = {"ceid": "service:app", "name": "app", "label": "Service", "mention": "app"}
    db = {"ceid": "infra:db", "name": "db", "label": "Infrastructure"}
    owasp = {"ceid": "service:owasp", "name": "owasp", "label": "Service"}
    rows = [edge(db, True, "postgres://user:***@db/app", kind="database"),
            edge(owasp, False, "http://app:8080")]
    got = rank("What is the database URL of app?", [app], rows, {})
    assert got[0]["value"] == "postgres://user:***@db/app"
    web = {"ceid": "service:web", "name": "web", "label": "Service", "mention": "web"}
    clam = {"ceid": "service:clamav-rest", "name": "clamav-rest", "label": "Service"}
    got = rank("What is the virus scan URL of web?", [web],
               [edge(clam, True, "http://clamav-rest:9000/v2/scan", "9000")], {})
    assert [g["value"] for g in got] == ["http://clamav-rest:9000/v2/scan"]


def test_how_a_service_is_exposed_is_the_way_in_from_outside_first() -> None:
    frontend = {"ceid": "service:frontend", "name": "frontend", "label": "Service",
                "mention": "frontend"}
    inside = "ClusterIP Service frontend (inside the cluster only): port 80 -> 8080"
    outside = "LoadBalancer Service frontend-external: port 80 -> 8080"
    props = {"ports": ["8080"], "exposure": [inside, outside],
             "attribute_refs": [f"exposure|{inside}|k8s/frontend.yaml#L109@abc1234",
                                f"exposure|{outside}|k8s/frontend.yaml#L122@abc1234"]}
    assert wanted("How is frontend exposed?") == {"exposure"}
    assert wanted("Which port does frontend expose?") == {"port", "exposure"}
    got = rank("How is frontend exposed?", [frontend], [], {frontend["ceid"]: props})
    assert [g["value"] for g in got] == [outside, inside]
    cites = c.Citations()
    text = c.attributes([{"subject": frontend, "stated": got}], cites)
    assert text.startswith(f"frontend: {outside}[1]. Also recorded: {inside}[2]")
    assert cites.items[0]["evidence_ref"] == "k8s/frontend.yaml#L122@abc1234"
    # Compose: a port published on the host is how it is reached
    ui = {"ceid": "service:ui", "name": "ui", "label": "Service", "mention": "ui"}
    published = {"ports": ["8888:8080"],
                 "attribute_refs": ["port|8888:8080|docker-compose.yml#L12@abc1234"]}
    got = rank("How is ui exposed?", [ui], [], {ui["ceid"]: published})
    assert [g["value"] for g in got] == ["published on the host as 8888:8080"]


def test_how_a_service_is_deployed_is_the_files_that_deploy_it() -> None:
    """Its manifests (one of each way first, the shallowest first: the main deployment before
    an extra's), named by what reads them, each cited where it declares the service; its Helm
    chart where the chart names itself."""
    assert wanted("How is ledgerwriter deployed?") == {"deployment"}
    assert wanted("Which manifests deploy checkout?") == {"deployment"}
    props = {
        "manifests": ["extras/cloudsql/kubernetes-manifests/checkout.yaml", "docker-compose.yml",
                      "kubernetes-manifests/checkout.yaml", "manifests/manifest-dev.yml",
                      "src/Shop.AppHost/Program.cs"],
        "charts": ["src/checkout/chart"],
        "provenance": ["kubernetes-manifests/checkout.yaml#L4@abc1234",
                       "docker-compose.yml#L12@abc1234"],
        "attribute_refs": ["chart|src/checkout/chart|src/checkout/chart/Chart.yaml#L2@abc1234"],
    }
    found = [(v["value"], v["refs"]) for v in rank("How is checkout deployed?", [CHECKOUT], [],
                                                   {"service:checkout": props})]
    assert found == [("Docker Compose (docker-compose.yml)", ["docker-compose.yml#L12@abc1234"]),
                     ("Kubernetes (kubernetes-manifests/checkout.yaml)",
                      ["kubernetes-manifests/checkout.yaml#L4@abc1234"]),
                     ("Cloud Foundry (manifests/manifest-dev.yml)", [""])]  # SHOWN: three
    values = [v["value"] for v in node_values(CHECKOUT, props) if v["attr"] == "deployment"]
    # one of each way first (the chart before a second Kubernetes manifest)
    assert values[3:] == ["the .NET Aspire app host (src/Shop.AppHost/Program.cs)",
                          "the Helm chart src/checkout/chart",
                          "Kubernetes (extras/cloudsql/kubernetes-manifests/checkout.yaml)"]
    cites = c.Citations()
    text = c.attributes([{"subject": CHECKOUT, "stated": rank(
        "How is checkout deployed?", [CHECKOUT], [], {"service:checkout": props})}], cites)
    assert text.startswith("checkout: deployed by Docker Compose (docker-compose.yml)[1].")


def test_what_a_store_is_comes_from_the_lines_that_state_it() -> None:
    """A Terraform store: its kind, engine and size, cited at the block and each detail; a
    store whose kind no line states (no Terraform block, no image) says nothing of it."""
    assert wanted("Which database engine does orders_rds run?") == {"image", "kind"}  # "run"
    assert wanted("What kind of infrastructure is fac-db?") == {"kind"}
    assert wanted("How is orders_rds provisioned?") == {"deployment"}
    tf = "terraform/lib/dependencies/orders_rds.tf"
    props = {"kind": "database", "engine": "aurora-postgresql", "engine_version": "15.10",
             "instance_class": "db.t3.medium", "manifests": [tf],
             "provenance": [f"{tf}#L1@abc1234"],
             "attribute_refs": [f"kind|database|{tf}#L1@abc1234",
                                f"engine|aurora-postgresql|{tf}#L6@abc1234",
                                f"engine_version|15.10|{tf}#L7@abc1234",
                                f"instance_class|db.t3.medium|{tf}#L8@abc1234"]}
    store = {"ceid": "infra:orders-rds", "name": "orders_rds", "label": "Infrastructure"}
    found = {v["attr"]: v for v in node_values(store, props)}
    assert found["kind"]["value"] == "a database (aurora-postgresql 15.10, db.t3.medium)"
    assert found["kind"]["refs"] == [f"{tf}#L{n}@abc1234" for n in (1, 6, 7, 8)]
    assert found["deployment"]["value"] == f"Terraform ({tf})"
    assert found["deployment"]["refs"] == [f"{tf}#L1@abc1234"]
    assert "kind" not in {v["attr"] for v in node_values(store, {"kind": "database"})}


def test_a_template_is_a_charts_only_when_the_chart_rendered_it() -> None:
    """"Deployed by the Helm chart X" when the connector recorded that X rendered the
    entity's manifest; a plain manifest in a folder named templates/ (an OpenShift
    template) is Kubernetes."""
    props = {"manifests": ["deploy/helm/templates/payment.yaml",
                           "openshift/templates/payment.yaml",
                           "deploy/helm/charts/db/templates/db.yaml"],
             "rendered_charts": ["deploy/helm"]}
    values = [v["value"] for v in node_values(CHECKOUT, props) if v["attr"] == "deployment"]
    assert values == ["Kubernetes (openshift/templates/payment.yaml)",  # shallowest first
                      "the Helm chart deploy/helm (deploy/helm/templates/payment.yaml)",
                      "the Helm chart deploy/helm/charts/db "
                      "(deploy/helm/charts/db/templates/db.yaml)"]
    root = {"manifests": ["templates/app.yaml"], "rendered_charts": ["."]}
    assert [v["value"] for v in node_values(CHECKOUT, root)] == \
        ["the Helm chart . (templates/app.yaml)"]
    assert [v["value"] for v in node_values(CHECKOUT, {"manifests": ["templates/app.yaml"]})] \
        == ["Kubernetes (templates/app.yaml)"]


def test_a_language_with_the_framework_its_build_declares() -> None:
    """"What language does payment use?" (robot-shop): Python, and Flask from its
    requirements.txt, each at its line; "which framework?" the framework alone."""
    payment = {"ceid": "service:payment", "name": "payment", "label": "Service"}
    props = {"language": "Python", "frameworks": ["Flask"],
             "attribute_refs": ["language|Python|payment/Dockerfile#L1@abc",
                                "frameworks|Flask|payment/requirements.txt#L2@abc"]}
    got = rank("What language does payment use?", [payment], [], {"service:payment": props})
    assert [(c["value"], c["refs"]) for c in got] == [
        ("Python", ["payment/Dockerfile#L1@abc"]), ("Flask", ["payment/requirements.txt#L2@abc"])]
    got = rank("Which framework does payment use?", [payment], [], {"service:payment": props})
    assert [c["value"] for c in got] == ["Flask"]
    assert c._stated(got[0], "service:payment", c.Citations()) == "built with Flask[1]"


def test_every_image_a_file_deploys_it_with() -> None:
    """"What image does web run?" (robot-shop): Compose's tag first (the node's image), then
    the Helm chart's, each at its line."""
    web = {"ceid": "service:web", "name": "web", "label": "Service"}
    props = {"image": "robotshop/rs-web:2.1.0",
             "attribute_refs": ["image|robotshop/rs-web:2.1.0|docker-compose.yaml#L148@abc",
                                "image|robotshop/rs-web:latest|K8s/helm/web.yaml#L22@abc"]}
    got = rank("What image does web run?", [web], [], {"service:web": props})
    assert [(c["value"], c["refs"]) for c in got] == [
        ("robotshop/rs-web:2.1.0", ["docker-compose.yaml#L148@abc"]),
        ("robotshop/rs-web:latest", ["K8s/helm/web.yaml#L22@abc"])]

