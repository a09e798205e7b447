"""Multi-hop questions over the demo organisation and two devset repositories, with the
entities an answer must name. Gold was written by reading the sources, never by running the
product: the demo's ``substrate/demo/topology.py`` (service environment and ``depends``) and
``EXPECTED.md``; ``retail-store-sample-app`` at its bundle HEAD (``src/*/docker-compose.yml``,
``src/app/compose.override.yaml`` L4-7 and L33, ``src/app/docker-compose.tracing.yml``,
``src/app/otel-collector-config.yml`` L8-9); ``bank-of-anthos`` at its bundle HEAD
(``kubernetes-manifests/config.yaml`` L28-32 service-api-config, the ``envFrom`` config maps of
each manifest: accounts-db-config for userservice and contacts, ledger-db-config for
balance-reader, ledger-writer and transaction-history).

Each question needs two hops or more (a service reached through another, then what it uses),
or a fan-in over several services. ``corpus`` names the tenant: ``demo`` is the stack's demo
tenant, the others ``devset-<repository>`` (loaded by ``bench_raptor``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    corpus: str
    text: str
    expected: frozenset[str]


def _q(corpus: str, text: str, *expected: str) -> Question:
    return Question(corpus, text, frozenset(expected))


SVC, INF = "service:", "infra:"
QUESTIONS: tuple[Question, ...] = (
    # demo (acme): topology.py environment variables and depends_on, HEAD
    _q("demo", "Which database does the service that checkout calls for payments use?",
       SVC + "payment", INF + "payments-db"),
    _q("demo", "Which datastore holds the orders that checkout creates?",
       SVC + "orders", INF + "orders-db"),
    _q("demo", "Where does the fraud scoring that payment calls keep its cache?",
       SVC + "fraud", INF + "redis"),
    _q("demo", "Which services share the catalog database?",
       SVC + "catalog", SVC + "inventory", SVC + "reviews", INF + "catalog-db"),
    _q("demo", "Which services share the fulfilment database?",
       SVC + "shipping", SVC + "warehouse", SVC + "returns", INF + "fulfilment-db"),
    _q("demo", "Where does the ledger that payment records money movements in keep its data?",
       SVC + "ledger", INF + "ledger-db"),
    _q("demo", "Which services read or write the ledger database?",
       SVC + "ledger", SVC + "audit", INF + "ledger-db"),
    _q("demo", "Which services read the analytics warehouse for reports and dashboards?",
       SVC + "analytics", SVC + "reporting", INF + "analytics-warehouse"),
    _q("demo", "Which database stores the customer accounts that reviews and loyalty look up?",
       SVC + "user", INF + "users-db"),
    _q("demo", "Which service sends the e-mails that invoicing asks for?",
       SVC + "email", SVC + "invoicing"),
    _q("demo", "Which services does the api-gateway route shoppers to for search and catalogue?",
       SVC + "search", SVC + "catalog", SVC + "api-gateway"),
    _q("demo", "Which service converts currencies for pricing, payment and tax?",
       SVC + "currency", SVC + "pricing", SVC + "payment"),
    _q("demo", "What does the backend of the mobile apps call to authenticate users?",
       SVC + "mobile-bff", SVC + "auth"),
    _q("demo", "Where does the auth service keep the sessions it issues?",
       SVC + "auth", INF + "redis"),
    _q("demo", "Through which queue are customer notifications fanned out?",
       SVC + "notification", INF + "rabbitmq"),
    _q("demo", "Which service does shipping ask to pick and pack orders, and where does it "
               "store data?", SVC + "warehouse", INF + "fulfilment-db"),
    _q("demo", "Which services publish domain events to Kafka?",
       INF + "kafka", SVC + "checkout", SVC + "orders", SVC + "catalog", SVC + "ledger"),
    _q("demo", "Which feature flag service does the web frontend use and what configuration "
               "service backs it?", SVC + "feature-flags", SVC + "config"),
    _q("demo", "Where do recommendations get product data and cache their results?",
       SVC + "recommendation", SVC + "catalog", INF + "redis"),
    _q("demo", "Which search engine backs the product search the gateway exposes?",
       SVC + "search", INF + "search-index"),
    _q("demo", "Which services handle returns and the refunds of payments?",
       SVC + "returns", SVC + "payment"),
    _q("demo", "Which services and caches does the promotions service rely on?",
       SVC + "promotions", SVC + "catalog", INF + "redis"),
    _q("demo", "Which services does checkout call to price the cart and book shipping?",
       SVC + "pricing", SVC + "shipping", SVC + "cart"),
    # retail-store-sample-app at HEAD
    _q("devset-retail-store-sample-app", "Which database stores the carts the UI shows?",
       SVC + "cart", INF + "carts-db"),
    _q("devset-retail-store-sample-app",
       "Which datastores does the catalog that the UI browses use?",
       SVC + "catalog", INF + "catalog-db", INF + "opensearch"),
    _q("devset-retail-store-sample-app",
       "Where does checkout keep its state and which service does it submit orders to?",
       INF + "checkout-redis", SVC + "orders"),
    _q("devset-retail-store-sample-app",
       "Which message broker and database does the orders service behind checkout use?",
       INF + "orders-db", INF + "rabbitmq"),
    _q("devset-retail-store-sample-app",
       "Where do the services' traces end up after the collector?",
       SVC + "otel-collector", SVC + "jaeger"),
    # bank-of-anthos at HEAD
    _q("devset-bank-of-anthos", "Which database holds the balances the frontend shows?",
       SVC + "balancereader", INF + "ledger-db"),
    _q("devset-bank-of-anthos", "Which services share the accounts database?",
       SVC + "userservice", SVC + "contacts", INF + "accounts-db"),
    _q("devset-bank-of-anthos",
       "Where does the service that records new transactions store them?",
       SVC + "ledgerwriter", INF + "ledger-db"),
    _q("devset-bank-of-anthos",
       "Which database backs the transaction history the frontend shows?",
       SVC + "transactionhistory", INF + "ledger-db"),
    _q("devset-bank-of-anthos",
       "Which service manages user accounts for the frontend and where are they stored?",
       SVC + "userservice", INF + "accounts-db"),
)
