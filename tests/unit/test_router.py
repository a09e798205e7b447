from __future__ import annotations

from datetime import UTC, datetime

import pytest

from substrate.retrieval.router import (
    SPEC_STRATEGIES,
    Intent,
    asks_for_risks,
    asks_where_stored,
    asks_whether,
    classify,
    depth_hint,
    entity_candidates,
    fuzzy_query,
)

NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)  # a Friday


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # the spec's own examples, RSN-UC-01..08
        ("What does PaymentService depend on?", Intent.DEPENDENCY),
        ("Who owns the checkout service?", Intent.OWNERSHIP),
        ("PR intent mismatch: code vs project item", Intent.INTENT_MISMATCH),
        ("What are our top 3 architectural risks?", Intent.STRATEGIC_RISKS),
        ("Why was this architectural decision made?", Intent.DECISION_RATIONALE),
        ("What changed before last Friday's incident?", Intent.TEMPORAL),
        ("Find all services calling auth directly", Intent.CALLERS),
        ("Which services does this epic affect?", Intent.EPIC_IMPACT),
        # and some more of each family
        ("Which services depend on redis transitively?", Intent.CALLERS),  # issue 8: reverse
        ("What are the dependencies of billing-api?", Intent.DEPENDENCY),
        ("What routes does webshoppingapigw forward to?", Intent.DEPENDENCY),  # a gateway's
        ("Which services does frontend-proxy proxy requests to?", Intent.DEPENDENCY),
        ("What does the notification service publish to?", Intent.DEPENDENCY),
        ("What does the email service consume from?", Intent.DEPENDENCY),
        ("Which services publish to kafka?", Intent.CALLERS),
        ("Who calls the payment-api?", Intent.CALLERS),
        ("List the callers of LedgerService", Intent.CALLERS),
        ("Which team is responsible for search?", Intent.OWNERSHIP),
        ("Who should I talk to about the ledger?", Intent.OWNERSHIP),
        ("Who knows about checkout?", Intent.OWNERSHIP),
        ("Which teams own code?", Intent.OWNERSHIP),  # the plural verb
        ("What do the developers own?", Intent.OWNERSHIP),
        ("What is the rationale behind ADR-047?", Intent.DECISION_RATIONALE),
        ("What does ADR 21 decide about dependency updates?", Intent.DECISION_RATIONALE),
        ("What changed in the three days before last Friday's outage?", Intent.TEMPORAL),
        ("What was the state of the graph on March 10th?", Intent.TEMPORAL),
        ("Where are our single points of failure?", Intent.STRATEGIC_RISKS),
        ("How is the data platform structured?", Intent.STRATEGIC_RISKS),
        ("Which services does epic PAY-12 affect?", Intent.EPIC_IMPACT),
        ("Does PR #123 match its linked ticket?", Intent.INTENT_MISMATCH),
        ("Tell me about the billing platform", Intent.FREE_TEXT),
        ("kafka consumer lag", Intent.FREE_TEXT),
    ],
)
def test_classifies_each_use_case_family(question: str, intent: Intent) -> None:
    route = classify(question, NOW)
    assert route.intent is intent, route.scores
    if intent is Intent.FREE_TEXT:
        assert route.cues == ()
    else:
        assert route.cues and all(c.intent is intent for c in route.cues)
        assert 0.3 <= route.confidence <= 1.0


@pytest.mark.parametrize(("question", "intent"), [
    ("What is the address of sqldata used by ordering-api?", Intent.ATTRIBUTES),
    ("What is the Redis URL used by cart?", Intent.ATTRIBUTES),
    ("What's the catalog-api's connection string?", Intent.ATTRIBUTES),
    ("What is used by checkout?", Intent.DEPENDENCY),
    ("What are the dependencies of payment?", Intent.DEPENDENCY),
    ("What is the image of catalogue-db?", Intent.ATTRIBUTES),
    ("What is the docker image of payment?", Intent.ATTRIBUTES),
    ("Which docker image does redis-cart use?", Intent.ATTRIBUTES),
    ("How is frontend exposed?", Intent.ATTRIBUTES),
    ("What does the payment service call?", Intent.DEPENDENCY),  # "service call": no caller
    ("What services call the payment service?", Intent.CALLERS),
    ("Is front-end exposed outside the cluster?", Intent.ATTRIBUTES),
    ("What is the reason we use Kafka?", Intent.DECISION_RATIONALE),
    ("Who took over checkout and when?", Intent.WHEN),
    ("Which commit removed legacy-coupons?", Intent.WHEN),
    ("What does checkout talk to?", Intent.DEPENDENCY),
    ("Which services share the catalog-db?", Intent.CALLERS),
    ("Which team looks after checkout?", Intent.OWNERSHIP),
    # how a service is deployed: the files that deploy it, not instructions
    ("How is the catalog service deployed?", Intent.ATTRIBUTES),
    ("Where is ledgerwriter deployed?", Intent.ATTRIBUTES),
    ("What deploys the orders service?", Intent.ATTRIBUTES),
    ("Which manifests deploy checkout?", Intent.ATTRIBUTES),
    ("How is the orders database provisioned?", Intent.ATTRIBUTES),
    # what a piece of infrastructure is (Terraform): its kind, engine and size
    ("Which database engine does orders_rds run?", Intent.ATTRIBUTES),
    ("What kind of infrastructure is checkout-sessions?", Intent.ATTRIBUTES),
    ("What instance class is the catalog database?", Intent.ATTRIBUTES),
    ("How do I deploy the cart service?", Intent.FREE_TEXT),
    ("What changed before the last deploy?", Intent.TEMPORAL),
    # the system's technologies as a whole: the overview (STRATEGIC_RISKS carries it)
    ("What is our tech stack?", Intent.STRATEGIC_RISKS),
    ("Which technologies do we use?", Intent.STRATEGIC_RISKS),
    ("Which technologies does checkout use?", Intent.DEPENDENCY),
])
def test_a_question_opening_on_a_value_asks_for_the_value(question: str, intent: Intent) -> None:
    """"used by" names the user (a dependency question), but "what is the address of A used
    by B" asks for the address on that edge."""
    route = classify(question, NOW)
    assert route.intent is intent, route.scores
    assert route.confidence >= 0.5


def test_route_reports_why_and_the_scores() -> None:
    route = classify("Who owns the checkout service?", NOW)
    assert [c.text for c in route.cues] == ["Who owns"]  # "owns" overlaps: counted once
    assert route.confidence == 0.9
    assert dict(route.scores)[Intent.OWNERSHIP] == 0.9
    assert route.mentions == ("checkout",)
    assert SPEC_STRATEGIES[route.intent] == ("owns_traversal", "codeowners")


def test_confidence_drops_when_two_families_compete() -> None:
    clear = classify("Who owns the checkout service?", NOW)
    mixed = classify("Who owns the services that call auth?", NOW)
    assert mixed.intent is Intent.OWNERSHIP
    assert Intent.CALLERS in mixed.secondary
    assert mixed.confidence < clear.confidence


def test_free_text_confidence_and_no_cues() -> None:
    route = classify("kafka consumer lag", NOW)
    assert (route.intent, route.confidence, route.secondary) == (Intent.FREE_TEXT, 1.0, ())


def test_a_date_qualifies_a_dependency_question_without_taking_it_over() -> None:
    route = classify("What did checkout depend on as of 2026-03-10?", NOW)
    assert route.intent is Intent.DEPENDENCY
    assert route.secondary == (Intent.TEMPORAL,)
    assert route.confidence == 0.8  # temporal is no rival
    assert route.time.as_of == datetime(2026, 3, 10, 23, 59, 59, 999999, tzinfo=UTC)
    assert route.mentions == ("checkout",)


def test_temporal_question_carries_its_window() -> None:
    route = classify("What changed in the three days before last Friday's outage?", NOW)
    assert route.time.start == datetime(2026, 11, 10, tzinfo=UTC)
    assert route.time.end == datetime(2026, 11, 14, tzinfo=UTC)
    assert any("before last Friday's outage" in c.text for c in route.cues)


def test_extracted_facts() -> None:
    route = classify("Does PR #123 match its linked ticket?", NOW)
    assert route.pr_numbers == (123,)
    assert classify("What are our top 3 architectural risks?", NOW).top_n == 3
    assert classify("top five risks", NOW).top_n == 5
    assert classify("Why did ADR-047 pick Kafka over RabbitMQ?", NOW).mentions == (
        "adr:0047", "Kafka", "RabbitMQ")  # a record by its number: its id


@pytest.mark.parametrize(
    ("question", "depth"),
    [
        ("Which services depend on redis transitively?", 3),
        ("what does checkout indirectly depend on", 3),
        ("Find all services calling auth directly", 1),
        ("dependencies of checkout within 2 hops", 2),
        ("dependencies of checkout two levels deep", 2),
        ("dependencies of checkout 9 hops", 3),  # RSN-04: 1-3 hops
        ("What does PaymentService depend on?", None),
    ],
)
def test_depth_hints(question: str, depth: int | None) -> None:
    assert depth_hint(question) == depth
    assert classify(question, NOW).depth == depth


def test_to_dict_is_json_ready() -> None:
    d = classify("What was the state of the graph on March 10th?", NOW).to_dict()
    assert d["intent"] == "temporal"
    assert d["time"]["as_of"] == "2026-03-10T23:59:59.999999+00:00"
    assert d["scores"]["temporal"] > 0.8


def test_router_reexports_lookup_helpers() -> None:
    assert entity_candidates("Who owns the checkout service?") == ["checkout"]
    assert fuzzy_query("checkout") == "checkout~1 OR checkout*"


def test_naive_now_is_taken_as_utc() -> None:
    naive = classify("what changed yesterday", datetime(2026, 11, 20, 12, 0))
    assert naive.time.start == datetime(2026, 11, 19, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "risk_plan"),
    [
        ("What are our top 3 architectural risks?", True),
        ("Where are our single points of failure?", True),
        ("Which services are the riskiest?", True),
        ("Where is our technical debt?", True),
        ("Summarise the architecture", False),
        ("What are the main domains of our system?", False),
        ("How is the data platform structured?", False),
        ("Give me an architecture overview", False),
    ],
)
def test_a_risk_question_runs_the_stored_ranking_alone(question: str, risk_plan: bool) -> None:
    """UC-04 answers from the stored GDS ranking; other strategic questions get the RAPTOR walk
    and the global map-reduce, never the risks strategy."""
    import substrate.retrieval.strategies_global  # noqa: F401 - registers the strategic presets
    from substrate.retrieval.registry import RISK_PLAN, plan_for

    route = classify(question, NOW)
    assert route.intent is Intent.STRATEGIC_RISKS, route.scores
    assert asks_for_risks(question) is risk_plan
    plan = plan_for(route.intent, question)
    if risk_plan:
        assert plan == RISK_PLAN == ("risks",)
    else:
        assert "risks" not in plan and {"raptor", "global_graphrag"} <= set(plan)


@pytest.mark.parametrize("question", [
    "What breaks if payment goes down?",
    "What is the blast radius of payment?",
    "If paymentservice is down, what else fails?",
    "What is impacted if paymentservice goes down?",
    "What would break if we removed the ledger service?",
    "If the payments db is unavailable, which services break?",
])
def test_blast_radius_asks_for_what_depends_on_the_service_transitively(question: str) -> None:
    """What fails with X is what depends on X (its callers), at any depth; it was read as X's
    own dependencies (or, with "impacted", as an epic's impact)."""
    route = classify(question, NOW)
    assert route.intent is Intent.CALLERS, route.scores
    assert route.depth == 3


def test_blast_radius_keeps_an_explicit_depth() -> None:
    assert classify("What breaks directly if cart goes down?", NOW).depth == 1
    assert classify("What breaks within 2 hops if cart goes down?", NOW).depth == 2
    assert classify("Which services call cart?", NOW).depth is None
    assert classify("What changed before the checkout outage?", NOW).intent is Intent.TEMPORAL


@pytest.mark.parametrize(("question", "intent"), [
    ("What does recommendationservice do?", Intent.ATTRIBUTES),
    ("What does the ledger service do?", Intent.ATTRIBUTES),
    ("What language is the cartservice written in?", Intent.ATTRIBUTES),
    ("Which programming language does checkout use?", Intent.ATTRIBUTES),
    ("What does checkout depend on?", Intent.DEPENDENCY),  # still its dependencies
    ("What does the payments team do?", Intent.FREE_TEXT),  # a team: no README answer
])
def test_what_a_service_does_is_an_attribute_question(question: str, intent: Intent) -> None:
    assert classify(question, NOW).intent is intent


@pytest.mark.parametrize(("question", "intent"), [
    ("Who is on call for payments?", Intent.OWNERSHIP),
    ("Who should I contact about checkout?", Intent.OWNERSHIP),
    # a how-to naming the rota is not a question of who owns something
    ("How do I add a team member to the PagerDuty on-call rota?", Intent.FREE_TEXT),
])
def test_on_call_asks_who_unless_it_asks_how(question: str, intent: Intent) -> None:
    assert classify(question).intent is intent


@pytest.mark.parametrize("question", [
    "Where does cart store its data?", "Where is the cart data kept?",
    "What does product-reviews persist to?", "Where does the session service keep sessions?",
    "Where are orders stored?"])
def test_where_data_is_kept_asks_for_the_datastores(question: str) -> None:
    assert classify(question).intent is Intent.DEPENDENCY and asks_where_stored(question)


@pytest.mark.parametrize("question", [
    "What does checkout depend on?", "Where is checkout deployed?",
    "Which datastore does cart use?"])
def test_other_questions_do_not_ask_where_data_is_kept(question: str) -> None:
    assert not asks_where_stored(question)


@pytest.mark.parametrize("question", [
    "Which Python version does tock use?", "What version of Node does frontend run?",
    "Which Go version is checkout built with?", "What is the runtime version of cart?"])
def test_a_runtime_version_question_asks_for_an_attribute(question: str) -> None:
    assert classify(question).intent is Intent.ATTRIBUTES


@pytest.mark.parametrize("question", [
    "Which framework does payment use?", "What web framework is checkout built with?",
    "Which frameworks do cart and orders use?",
    "What runtime and framework does basket-api use, and how does it expose its API?"])
def test_a_framework_question_asks_for_an_attribute(question: str) -> None:
    assert classify(question).intent is Intent.ATTRIBUTES


@pytest.mark.parametrize(("question", "whether"), [
    ("Does checkout call payment?", True), ("Does cart use a cache?", True),
    ("Is the orders service using Kafka?", True), ("Does the ledger depend on postgres?", True),
    # a name ending in "-service" is no "which services call" cue (spring-petclinic's names)
    ("Does genai-service call visits-service?", True),
    ("What does checkout call?", False), ("Which services call payment?", False)])
def test_a_question_whether_a_service_uses_something(question: str, whether: bool) -> None:
    assert asks_whether(question) is whether
    if whether:
        assert classify(question).intent is Intent.DEPENDENCY
