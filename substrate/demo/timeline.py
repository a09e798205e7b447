"""The history of the demo repository: one step per commit, oldest first (all times UTC)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from substrate.demo import content_adr as a
from substrate.demo import content_adr2 as a2
from substrate.demo import content_design as d
from substrate.demo import content_postmortems as pm
from substrate.demo.topology import (
    PROMOTIONS,
    RABBITMQ,
    RECOMMENDATION,
    SEARCH_INDEX,
    TAX,
    WISHLIST,
)
from substrate.demo.world import World

ADR = a.ADR_DIR + "/"
PM = pm.PM_DIR + "/"
DESIGN = d.DESIGN_DIR + "/"
ADR_0003_PATH = ADR + "0003-synchronous-rest-checkout-to-payment.md"
ADR_0006_PATH = ADR + "0006-mobile-bff-for-the-apps.md"


@dataclass(frozen=True)
class Step:
    when: str  # ISO 8601, UTC
    author: str  # handle of a Person
    subject: str
    apply: Callable[[World], None]


def _doc(path: str, text: str) -> Callable[[World], None]:
    def apply(world: World) -> None:
        world.docs[path] = text

    return apply


def _all(*changes: Callable[[World], None]) -> Callable[[World], None]:
    def apply(world: World) -> None:
        for change in changes:
            change(world)

    return apply


def _env(name: str, **values: str | None) -> Callable[[World], None]:
    return lambda world: world.set_env(name, **values)


def _cart_in_redis(world: World) -> None:
    world.set_env("cart", CART_STORE="redis", CART_REDIS_URL="redis://redis:6379/2")
    world.services["cart"] = replace(world.services["cart"], depends=("redis",))


def _search_on_elasticsearch(world: World) -> None:
    world.infra.append(SEARCH_INDEX)
    world.set_env("search", DB_HOST=None, ELASTICSEARCH_URL="http://search-index:9200")


def _add_tax(world: World) -> None:
    world.add_service(TAX)
    world.set_env("invoicing", TAX_URL="http://tax-service:8080")
    world.set_env("pricing", TAX_URL="http://tax-service:8080")


def _remove_coupons(world: World) -> None:
    world.remove_service("legacy-coupons")
    world.set_env("pricing", COUPONS_URL=None)


def _rabbitmq(world: World) -> None:
    world.infra.append(RABBITMQ)
    world.dotenv_extra["RABBIT_PASSWORD"] = "devrabbit"
    amqp = "amqp://notify:${RABBIT_PASSWORD}@rabbitmq:5672"
    world.set_env("notification", EMAIL_URL=None, AMQP_URL=amqp)
    world.set_env("email", AMQP_URL=amqp)


STEPS = [
    Step("2026-08-03T09:00:00Z", "mchen", "Import the shop monorepo", lambda w: None),
    Step("2026-08-05T10:30:00Z", "lgarcia",
         "ADR-0003: synchronous REST from checkout to payment (#405)",
         _doc(ADR_0003_PATH, a.ADR_0003.replace("{status}", a.ADR_0003_ACCEPTED))),
    Step("2026-08-07T15:00:00Z", "mchen", "ADR-0004: Kafka for domain events (#406)",
         _doc(ADR + "0004-kafka-for-domain-events.md", a.ADR_0004)),
    Step("2026-08-10T09:45:00Z", "mchen", "ADR-0005: API gateway as the single entry point (#408)",
         _doc(ADR + "0005-api-gateway-single-entry-point.md", a.ADR_0005)),
    Step("2026-08-11T11:00:00Z", "ebrown", "ADR-0006: mobile BFF for the apps (#409)",
         _doc(ADR_0006_PATH, a.ADR_0006.replace("{status}", a.ADR_0006_ACCEPTED))),
    Step("2026-08-12T14:20:00Z", "dsmith", "auth: JWT sessions, ADR-0007 (#410)",
         _doc(ADR + "0007-jwt-sessions-issued-by-auth.md", a.ADR_0007)),
    Step("2026-08-14T16:00:00Z", "lgarcia", "docs: checkout flow design (#411)",
         _doc(DESIGN + "checkout-flow.md", d.CHECKOUT_FLOW)),
    Step("2026-08-18T10:00:00Z", "rkumar", "payment: idempotency keys, ADR-0008 (#412)",
         _all(_doc(ADR + "0008-idempotency-keys-in-payment.md", a2.ADR_0008),
              _env("payment", IDEMPOTENCY_TTL_HOURS="24"))),
    Step("2026-08-19T13:30:00Z", "tnguyen", "cart: keep carts in redis (#414)", _cart_in_redis),
    Step("2026-08-21T09:15:00Z", "oadeyemi",
         "postmortem: carts emptied after Redis evictions (#415)",
         _doc(PM + "2026-08-20-cart-sessions-lost.md", pm.CART_SESSIONS_LOST)),
    Step("2026-08-24T11:00:00Z", "akowalski", "search: move to Elasticsearch, ADR-0009 (#417)",
         _all(_search_on_elasticsearch,
              _doc(ADR + "0009-elasticsearch-for-product-search.md", a2.ADR_0009))),
    Step("2026-08-26T15:30:00Z", "akowalski",
         "k8s: deploy recommendation in the catalog namespace (#419)",
         lambda w: w.add_service(RECOMMENDATION)),
    Step("2026-09-01T10:00:00Z", "sjohansson",
         "ADR-0010: replace legacy-coupons with a promotions service (#422)",
         _doc(ADR + "0010-replace-legacy-coupons-with-promotions.md", a2.ADR_0010)),
    Step("2026-09-03T14:00:00Z", "sjohansson", "promotions: new service (#423)",
         _all(lambda w: w.add_service(PROMOTIONS),
              _env("pricing", PROMOTIONS_URL="http://promotions:8080"))),
    Step("2026-09-04T11:20:00Z", "oadeyemi", "postmortem: search results six hours stale (#424)",
         _doc(PM + "2026-09-02-stale-search-results.md", pm.STALE_SEARCH)),
    Step("2026-09-08T09:00:00Z", "tnguyen", "Move checkout to the payments team, ADR-0011 (#427)",
         _all(lambda w: w.set_owner("/services/checkout/", "@acme/payments @lgarcia"),
              _doc(ADR + "0011-checkout-ownership-moves-to-payments.md", a2.ADR_0011))),
    Step("2026-09-10T12:00:00Z", "lgarcia", "checkout: cache shipping quotes in redis (#429)",
         _env("checkout", SHIPPING_QUOTE_CACHE="redis://redis:6379/3")),
    Step("2026-09-15T10:12:00Z", "lgarcia",
         "checkout: payment timeout 800 ms, 5 retries, inline fraud check (#431)",
         _env("checkout", PAYMENT_TIMEOUT_MS="800", PAYMENT_RETRIES="5",
              FRAUD_URL="http://fraud_svc:8080")),
    Step("2026-09-16T13:45:00Z", "akowalski", "docs: search relevance tuning design (#433)",
         _doc(DESIGN + "search-relevance.md", d.SEARCH_RELEVANCE)),
    Step("2026-09-17T15:40:00Z", "lgarcia",
         "checkout: roll back payment timeout to 3000 ms, 2 retries (#436)",
         _env("checkout", PAYMENT_TIMEOUT_MS="3000", PAYMENT_RETRIES="2")),
    Step("2026-09-18T09:30:00Z", "oadeyemi", "postmortem: checkout payment timeouts (#437)",
         _doc(PM + "2026-09-17-checkout-payment-timeouts.md", pm.CHECKOUT_TIMEOUTS)),
    Step("2026-09-22T10:00:00Z", "priya", "tax: new service for EU VAT (#438)",
         _all(_add_tax, _doc(DESIGN + "eu-tax-compliance.md", d.EU_TAX))),
    Step("2026-09-28T16:00:00Z", "rkumar",
         "ADR-0012: asynchronous payment authorisation, supersedes ADR-0003 (#441)",
         _all(_doc(ADR + "0012-asynchronous-payment-authorisation.md", a2.ADR_0012),
              _doc(ADR_0003_PATH, a.ADR_0003.replace("{status}", a.ADR_0003_SUPERSEDED)))),
    Step("2026-09-30T11:00:00Z", "rkumar", "payment: consume payment requests from Kafka (#443)",
         _all(_env("payment", PAYMENT_REQUESTS_TOPIC="payment-requested"),
              _env("checkout", PAYMENT_MODE="async"))),
    Step("2026-10-02T10:30:00Z", "dsmith", "auth: cache JWKS for 24 hours (#445)",
         _env("auth", JWKS_CACHE_TTL="24h")),
    Step("2026-10-06T09:10:00Z", "dsmith", "auth: JWKS cache back to 5 minutes (#446)",
         _env("auth", JWKS_CACHE_TTL="5m")),
    Step("2026-10-07T10:00:00Z", "oadeyemi",
         "postmortem: login failures after signing-key rotation (#448)",
         _doc(PM + "2026-10-06-login-failures-after-key-rotation.md", pm.LOGIN_FAILURES)),
    Step("2026-10-08T14:00:00Z", "tnguyen", "wishlist: new service (#447)",
         _all(lambda w: w.add_service(WISHLIST),
              _env("api-gateway", WISHLIST_URL="http://wishlist:8080"))),
    Step("2026-10-09T10:00:00Z", "ebrown",
         "ADR-0013 rejected; ADR-0006 mobile BFF deprecated (#449)",
         _all(_doc(ADR + "0013-server-side-web-sessions-in-redis.md", a2.ADR_0013),
              _doc(ADR_0006_PATH, a.ADR_0006.replace("{status}", a.ADR_0006_DEPRECATED)))),
    Step("2026-10-13T15:00:00Z", "sjohansson", "legacy-coupons: remove the service (#450)",
         _remove_coupons),
    Step("2026-10-19T17:30:00Z", "priya", "ledger: retry postings after timeouts (#457)",
         _env("ledger", POSTING_RETRIES="3")),
    Step("2026-10-21T10:00:00Z", "priya", "ledger: idempotent postings (#458)",
         _env("ledger", POSTING_IDEMPOTENCY_KEYS="on")),
    Step("2026-10-21T15:00:00Z", "oadeyemi", "postmortem: ledger double postings (#459)",
         _doc(PM + "2026-10-20-ledger-double-postings.md", pm.LEDGER_DOUBLE_POSTINGS)),
    Step("2026-10-22T09:00:00Z", "mchen",
         "ADR-0014: feature flags served by the config service, proposed (#461)",
         _doc(ADR + "0014-feature-flags-served-by-config.md", a2.ADR_0014)),
    Step("2026-10-26T11:00:00Z", "sjohansson", "notification: fan out through rabbitmq (#460)",
         _rabbitmq),
    Step("2026-10-28T10:00:00Z", "oadeyemi", "postmortem: order confirmations delayed (#462)",
         _doc(PM + "2026-10-27-email-backlog.md", pm.EMAIL_BACKLOG)),
    Step("2026-10-30T16:00:00Z", "mchen", "docs: refresh the architecture overview (#463)",
         _doc(DESIGN + "architecture-overview.md",
              d.OVERVIEW.replace("{extra}", d.OVERVIEW_EXTRA))),
]  # fmt: skip
