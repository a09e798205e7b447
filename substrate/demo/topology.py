"""The demo organisation "acme": people, teams, services and datastores (data only).

Service folders use the canonical names (``services/checkout``); the Compose keys are
deliberately spelled differently now and then (``checkout-service``, ``paymentservice``,
``user-svc``, ``fraud_svc``) so that the alias resolution has work to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

ORG = "acme"
REPO_URL = "https://github.com/acme/shop.git"
KAFKA = "${KAFKA_HOST:-kafka}:9092"


@dataclass(frozen=True)
class Person:
    handle: str
    full_name: str
    team: str

    @property
    def email(self) -> str:
        return f"{self.handle}@acme.example"


PEOPLE = {
    p.handle: p
    for p in (
        Person("mchen", "Mei Chen", "platform"),
        Person("jdoe", "John Doe", "platform"),
        Person("priya", "Priya Natarajan", "payments"),
        Person("rkumar", "Ravi Kumar", "payments"),
        Person("lgarcia", "Lucia Garcia", "payments"),
        Person("tnguyen", "Thanh Nguyen", "commerce"),
        Person("akowalski", "Anna Kowalski", "catalog"),
        Person("bokafor", "Bola Okafor", "fulfilment"),
        Person("sjohansson", "Sven Johansson", "growth"),
        Person("hyamada", "Hana Yamada", "data"),
        Person("dsmith", "Dana Smith", "identity"),
        Person("ebrown", "Eli Brown", "web"),
        Person("oadeyemi", "Ola Adeyemi", "sre"),
    )
}

TEAMS = {
    "platform": "Platform", "web": "Web", "identity": "Identity", "catalog": "Catalog",
    "commerce": "Commerce", "payments": "Payments", "fulfilment": "Fulfilment",
    "growth": "Growth", "data": "Data", "sre": "SRE", "tech-writers": "Tech writers",
}  # fmt: skip


def url(host: str) -> str:
    return f"http://{host}:8080"


@dataclass(frozen=True)
class ServiceSpec:
    """One application service: its folder name, Compose key (or k8s namespace) and config."""

    name: str
    key: str
    team: str
    lang: str
    summary: str
    env: tuple[tuple[str, str], ...] = ()
    depends: tuple[str, ...] = ()
    hostname: str = ""
    namespace: str = ""  # set: deployed on Kubernetes instead of Compose

    def with_env(self, **changes: str | None) -> ServiceSpec:
        """A copy with variables changed (``None`` removes one; new ones are appended)."""
        env = dict(self.env)
        for key, value in changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return replace(self, env=tuple(env.items()))


@dataclass(frozen=True)
class InfraSpec:
    name: str
    image: str
    namespace: str = ""
    env: tuple[tuple[str, str], ...] = field(default=())


def S(  # noqa: N802 - reads like a table row constructor
    name: str, key: str, team: str, lang: str, summary: str, *env: tuple[str, str],
    depends: tuple[str, ...] = (), hostname: str = "", namespace: str = "",
) -> ServiceSpec:  # fmt: skip
    return ServiceSpec(name, key, team, lang, summary, env, depends, hostname, namespace)


INFRA = [
    InfraSpec("users-db", "postgres:16", env=(("POSTGRES_DB", "users"),)),
    InfraSpec("catalog-db", "postgres:16", env=(("POSTGRES_DB", "catalog"),)),
    InfraSpec("orders-db", "postgres:16", env=(("POSTGRES_DB", "orders"),)),
    InfraSpec("payments-db", "postgres:16", env=(("POSTGRES_DB", "payments"),)),
    InfraSpec("ledger-db", "postgres:16", env=(("POSTGRES_DB", "ledger"),)),
    InfraSpec("fulfilment-db", "postgres:16", env=(("POSTGRES_DB", "fulfilment"),)),
    InfraSpec("redis", "redis:7.2"),
    InfraSpec("kafka", "bitnami/kafka:3.7"),
]
SEARCH_INDEX = InfraSpec("search-index", "docker.elastic.co/elasticsearch/elasticsearch:8.14.0")
RABBITMQ = InfraSpec("rabbitmq", "rabbitmq:3.13-management")
WAREHOUSE_DB = InfraSpec("analytics-warehouse", "clickhouse/clickhouse-server:24.8", "data")

SERVICES = [
    S("api-gateway", "api-gateway", "platform", "go",
      "Single public entry point: routing, authentication and rate limiting.",
      ("AUTH_URL", url("auth-service")), ("CATALOG_URL", url("catalog-api")),
      ("SEARCH_URL", url("search-service")), ("CART_URL", url("cart")),
      ("CHECKOUT_URL", url("checkout-service")), ("ORDERS_URL", url("orders")),
      ("USER_URL", url("user-svc")), ("REVIEWS_URL", url("reviews")),
      ("RATE_LIMIT_REDIS", "redis://redis:6379/1"), depends=("auth-service", "redis")),
    S("web-frontend", "web-frontend", "web", "node",
      "Server-rendered storefront for desktop and mobile browsers.",
      ("GATEWAY_URL", url("api-gateway")), ("FEATURE_FLAGS_URL", url("feature-flags")),
      ("RECOMMENDATION_URL", "http://recommendation-svc.catalog.svc.cluster.local:8080"),
      depends=("api-gateway",)),
    S("mobile-bff", "mobile-bff", "web", "kotlin",
      "Backend-for-frontend of the iOS and Android apps.",
      ("GATEWAY_URL", url("api-gateway")), ("AUTH_URL", url("auth-service")),
      ("FEATURE_FLAGS_URL", url("feature-flags"))),
    S("auth", "auth-service", "identity", "go",
      "Issues and validates JWT sessions; owns login and signing-key rotation.",
      ("USER_URL", url("user-svc")), ("SESSION_REDIS_URL", "redis://redis:6379/0"),
      ("JWKS_CACHE_TTL", "5m"), depends=("redis",)),
    S("user", "user-svc", "identity", "java", "Customer accounts, addresses and preferences.",
      ("DB_HOST", "users-db"), ("DB_PASSWORD", "${POSTGRES_PASSWORD}"), ("KAFKA_BROKERS", KAFKA),
      depends=("users-db",)),
    S("catalog", "catalog-api", "catalog", "java",
      "Product catalogue: products, variants, categories and media.",
      ("DATABASE_URL", "postgres://catalog:${POSTGRES_PASSWORD}@catalog-db:5432/catalog"),
      ("PRICING_URL", url("pricing")), ("INVENTORY_URL", url("inventory")),
      ("KAFKA_BROKERS", KAFKA), depends=("catalog-db", "kafka")),
    S("inventory", "inventory", "catalog", "go", "Stock levels per warehouse and reservations.",
      ("DB_HOST", "catalog-db"), ("WAREHOUSE_URL", url("warehouse")), ("KAFKA_BROKERS", KAFKA)),
    S("search", "search-service", "catalog", "python",
      "Product search and autocomplete, fed by catalogue change events.",
      ("CATALOG_URL", url("catalog-api")), ("DB_HOST", "catalog-db"), ("KAFKA_BROKERS", KAFKA)),
    S("reviews", "reviews", "catalog", "python", "Product ratings and reviews.",
      ("DB_HOST", "catalog-db"), ("USER_URL", url("user-svc"))),
    S("pricing", "pricing", "commerce", "kotlin",
      "Computes prices: list price, currency conversion and discounts.",
      ("CURRENCY_URL", url("currencyservice")), ("COUPONS_URL", url("legacy-coupons"))),
    S("cart", "cart", "commerce", "go", "Shopping carts of signed-in and anonymous customers.",
      ("CART_STORE", "memory"), ("CATALOG_URL", url("catalog-api")),
      ("PRICING_URL", url("pricing"))),
    S("checkout", "checkout-service", "commerce", "go",
      "Orchestrates a purchase: prices the cart, authorises payment, creates the order and "
      "books shipping.",
      ("CART_URL", url("cart")), ("PAYMENT_URL", url("paymentservice")),
      ("ORDERS_URL", url("orders")), ("SHIPPING_URL", url("shipping")),
      ("PRICING_URL", url("pricing")), ("PAYMENT_TIMEOUT_MS", "5000"),
      ("PAYMENT_RETRIES", "1"), ("KAFKA_BROKERS", KAFKA),
      depends=("cart", "paymentservice", "orders", "kafka")),
    S("orders", "orders", "commerce", "java", "Order lifecycle from placement to completion.",
      ("DATABASE_URL", "postgres://orders:${POSTGRES_PASSWORD}@orders-db:5432/orders"),
      ("INVENTORY_URL", url("inventory")), ("INVOICING_URL", url("invoicing")),
      ("KAFKA_BROKERS", KAFKA), depends=("orders-db", "kafka")),
    S("payment", "paymentservice", "payments", "java",
      "Authorises, captures and refunds card and wallet payments through the PSP.",
      ("DATABASE_URL", "postgres://payments:${PAYMENTS_DB_PASSWORD}@payments-db:5432/payments"),
      ("FRAUD_URL", url("fraud_svc")), ("LEDGER_URL", url("ledger")),
      ("CURRENCY_URL", url("currencyservice")), ("PSP_URL", "https://api.psp.example/v1"),
      ("KAFKA_BROKERS", KAFKA), depends=("payments-db",), hostname="payment-api"),
    S("fraud", "fraud_svc", "payments", "python",
      "Scores payments for fraud risk before authorisation.",
      ("USER_URL", url("user-svc")), ("REDIS_URL", "redis://redis:6379/5")),
    S("ledger", "ledger", "payments", "java", "Double-entry ledger of every money movement.",
      ("DB_HOST", "ledger-db"), ("KAFKA_BROKERS", KAFKA), depends=("ledger-db",)),
    S("invoicing", "invoicing", "payments", "kotlin", "Issues invoices and credit notes.",
      ("LEDGER_URL", url("ledger")), ("EMAIL_URL", url("email-svc")),
      ("ORDERS_DB_HOST", "orders-db")),
    S("currency", "currencyservice", "payments", "go", "Exchange rates and conversion.",
      ("RATES_CACHE_URL", "redis://redis:6379/6")),
    S("shipping", "shipping", "fulfilment", "go", "Shipping quotes, labels and tracking.",
      ("DB_HOST", "fulfilment-db"), ("WAREHOUSE_URL", url("warehouse")),
      ("NOTIFICATION_URL", url("notification-service")),
      ("CARRIER_API_URL", "https://api.carrier.example/v2")),
    S("warehouse", "warehouse", "fulfilment", "go", "Pick, pack and dispatch in warehouses.",
      ("DB_HOST", "fulfilment-db"), ("KAFKA_BROKERS", KAFKA)),
    S("returns", "returns", "fulfilment", "python", "Return requests, labels and refunds.",
      ("ORDERS_URL", url("orders")), ("PAYMENT_URL", "http://payment-api:8080"),
      ("SHIPPING_URL", url("shipping")), ("DB_HOST", "fulfilment-db")),
    S("notification", "notification-service", "growth", "node",
      "Routes customer notifications to e-mail, SMS and push.",
      ("EMAIL_URL", url("email-svc")), ("SMS_URL", url("sms")), ("USER_URL", url("user-svc")),
      ("KAFKA_BROKERS", KAFKA)),
    S("email", "email-svc", "growth", "node", "Renders and sends transactional e-mail.",
      ("SMTP_HOST", "smtp.mailer.example")),
    S("sms", "sms", "growth", "node", "Sends SMS through the SMS provider.",
      ("SMS_PROVIDER_URL", "https://sms.provider.example/api")),
    S("loyalty", "loyalty", "growth", "kotlin", "Loyalty points and tiers.",
      ("USER_URL", url("user-svc")), ("ORDERS_URL", url("orders")), ("DB_HOST", "users-db")),
    S("legacy-coupons", "legacy-coupons", "commerce", "php",
      "Coupon codes of the old shop (being replaced by promotions).",
      ("DB_HOST", "orders-db")),
    S("audit", "audit", "data", "python", "Append-only audit trail of privileged actions.",
      ("KAFKA_BROKERS", KAFKA), ("DB_HOST", "ledger-db")),
    S("config", "config-service", "platform", "go", "Central runtime configuration.",
      ("REDIS_URL", "redis://redis:6379/9")),
    S("feature-flags", "feature-flags", "platform", "go", "Feature flags and gradual rollouts.",
      ("CONFIG_URL", url("config-service"))),
    S("reporting", "reporting-api", "data", "python", "Finance and operations reports.",
      ("ANALYTICS_URL", "http://analytics:8080"), ("LEDGER_URL", url("ledger")),
      ("WAREHOUSE_DSN", "clickhouse://analytics-warehouse:9000/default"), namespace="data"),
    S("analytics", "analytics", "data", "python", "Event analytics and dashboards.",
      ("KAFKA_BROKERS", "kafka:9092"),
      ("WAREHOUSE_DSN", "clickhouse://analytics-warehouse:9000/default"), namespace="data"),
]  # fmt: skip

RECOMMENDATION = S(
    "recommendation", "recommendation", "catalog", "python",
    "Personalised product recommendations.",
    ("CATALOG_URL", url("catalog-api")),
    ("ANALYTICS_URL", "http://analytics.data.svc.cluster.local:8080"),
    ("REDIS_URL", "redis://redis:6379/4"), namespace="catalog",
)  # fmt: skip
PROMOTIONS = S(
    "promotions", "promotions", "growth", "kotlin", "Promotions, discount rules and coupons.",
    ("CATALOG_URL", url("catalog-api")), ("REDIS_URL", "redis://redis:6379/7"),
)  # fmt: skip
TAX = S("tax", "tax-service", "payments", "java", "VAT and sales-tax calculation.",
        ("CURRENCY_URL", url("currencyservice")))  # fmt: skip
WISHLIST = S("wishlist", "wishlist", "commerce", "go", "Saved-for-later lists of customers.",
             ("USER_URL", url("user-svc")), ("CATALOG_URL", url("catalog-api")),
             ("REDIS_URL", "redis://redis:6379/8"))  # fmt: skip
