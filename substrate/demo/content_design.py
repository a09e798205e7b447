"""Design documents of the demo organisation (docs/design)."""

from __future__ import annotations

DESIGN_DIR = "docs/design"

OVERVIEW = """\
# Shop architecture overview

The shop is a set of small services behind one public entry point, the api-gateway
(ADR-0005). The web-frontend serves browsers; the mobile-bff serves the apps. Sessions are
JWTs issued by the auth service (ADR-0007).

## Purchase path

The checkout service orchestrates a purchase. It reads the cart from the cart service, asks
the pricing service for the final price, asks the payment service to authorise the amount,
creates the order in the orders service and books a shipment with the shipping service.

## Data

Every stateful service owns its PostgreSQL database (ADR-0002). Domain events flow over
Kafka (ADR-0004); Redis holds caches, rate limits and carts.

## Data platform

The reporting-api and the analytics service run on Kubernetes in the `data` namespace and
keep their facts in analytics-warehouse.
{extra}"""
OVERVIEW_EXTRA = """
## Changes since launch

* Payment authorisation became asynchronous (ADR-0012, superseding ADR-0003).
* The promotions service replaced legacy coupons (ADR-0010).
* The tax service computes VAT for invoices and prices.
"""

CHECKOUT_FLOW = """\
# Checkout flow

Owner: checkout team. Status: implemented.

## Goal

A purchase completes in under 800 ms at p95, and a customer is never charged twice.

## Steps

1. The checkout service loads the cart from the cart service and locks it.
2. It asks the pricing service for the final price of every line.
3. It asks the payment service for an authorisation, with an idempotency key per attempt.
4. It creates the order in the orders service and books shipping with the shipping service.
5. It publishes `order-placed` on Kafka.

## Failure handling

A failed authorisation releases the cart lock. Timeouts of the payments-service call are
retried once; the idempotency key makes the retry safe (ADR-0008).
"""

SEARCH_RELEVANCE = """\
# Search relevance tuning

## Problem

Customers searching for "running shoes" get socks first: the search service ranks by text
match only.

## Proposal

* Boost by sales rank from the analytics service (daily export).
* Boost in-stock items using events of the inventory service.
* Keep the index in search-index; re-index nightly from the catalog-api.

## Rollout

An A/B test behind the feature-flags service, 10% of traffic for two weeks.

## Open questions

Should the recommendations-service reuse these boosts for its "similar items" rail?
"""

EU_TAX = """\
# EU tax compliance

## Context

From 2026-10-01 invoices to EU customers must show VAT per line at the rate of the
customer's country.

## Design

The new tax service owns VAT rules and rates. The pricing service asks it for the tax of a
basket; the invoicing service asks it again when the invoice is issued, so that rate changes
between order and invoice are visible. Currency conversion uses the currency service.

## Out of scope

Sales tax for the United States.
"""
