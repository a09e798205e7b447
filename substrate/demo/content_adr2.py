"""Architecture decision records 0008-0014 of the demo."""

from __future__ import annotations

ADR_0008 = """\
---
status: accepted
date: 2026-08-18
deciders: rkumar, priya
---
# Idempotency keys in the payment service

## Context and Problem Statement

Clients retry payment requests after timeouts. Without a way to recognise a retry the payment
service can charge a customer twice.

## Decision Outcome

Chosen option: "client-supplied idempotency keys". Every authorisation and capture request to
the payment service carries an `Idempotency-Key` header; the service stores the key with the
result in payments-db for 24 hours and answers a repeated key with the stored result.

### Consequences

* Good, because retries from checkout and returns are safe.
* Bad, because callers must generate and keep keys.
"""

ADR_0009 = """\
---
status: accepted
date: 2026-08-24
deciders: akowalski
---
# Elasticsearch for product search

## Context and Problem Statement

The search service queries catalog-db with `ILIKE`, which is slow and cannot rank results.

## Considered Options

* PostgreSQL full-text search
* Elasticsearch
* A hosted search product

## Decision Outcome

Chosen option: "Elasticsearch". The search service keeps its own index in search-index, fed
from the catalogue events on Kafka.

### Consequences

* Good, because relevance and facets come built in.
* Bad, because the index can lag behind the catalogue.
"""

ADR_0010 = """\
# 10. Replace legacy-coupons with a promotions service

Date: 2026-09-01

## Status

Accepted

## Context

Coupon codes live in legacy-coupons, a PHP application of the old shop that reads orders-db
directly. It cannot express rules such as "10% off shoes for loyalty members".

## Decision

We build a promotions service that owns discount rules and coupon codes. The pricing service
asks it for the promotions that apply. legacy-coupons is switched off once its codes are
migrated.

## Consequences

One more deployment to run until legacy-coupons is gone; richer promotions afterwards.
"""

ADR_0011 = """\
# 11. Checkout ownership moves to the payments team

Date: 2026-09-08

## Status

Accepted

## Context

Most checkout changes of the last quarter were about payment flows, and the commerce team
waited for a payments review on each of them. On-call for checkout incidents already
involved the payments team.

## Decision

From 2026-09-08 the payments team (@acme/payments) owns the checkout service, with @lgarcia
as its lead; CODEOWNERS changes in the same pull request. The commerce team keeps carts,
prices and orders.

## Consequences

Payment-related checkout changes need one team's review instead of two.
"""

ADR_0012 = """\
---
status: accepted
date: 2026-09-28
deciders: rkumar, lgarcia, mchen
---
# Asynchronous payment authorisation via Kafka

Supersedes [ADR-0003](0003-synchronous-rest-checkout-to-payment.md).

## Context and Problem Statement

The checkout payment timeouts of 2026-09-17 showed that synchronous calls couple checkout
latency to PSP latency (see ADR-0003), and that retries multiply the load on the PSP.

## Decision Outcome

Chosen option: "asynchronous authorisation". The checkout service publishes a
`payment-requested` event to Kafka and shows the order as pending; the payment service
consumes it, authorises with the PSP and publishes `payment-authorised` or `payment-failed`.

### Consequences

* Good, because a slow PSP no longer holds checkout requests.
* Bad, because the storefront must show a pending state.
"""

ADR_0013 = """\
# 13. Server-side web sessions in Redis

Date: 2026-10-09

## Status

❌ Rejected

## Context

The storefront team proposed keeping web sessions in Redis, so that customers can be logged
out everywhere at once, after the login failures of 2026-10-06.

## Decision

Rejected. JWT sessions (ADR-0007) stay; instead the auth service publishes a revocation list
that validators fetch every minute.

## Consequences

No new session store to run; a revocation takes up to a minute to apply.
"""

ADR_0014 = """\
---
status: "🚧 proposed"
date: 2026-10-22
deciders: mchen, jdoe
---
# Feature flags served by the config service

## Context and Problem Statement

feature-flags and config-service both store runtime settings, with two clients, two caches
and two audit trails.

## Decision Outcome

Proposed: fold feature-flags into the config service; clients keep the feature-flags API
until they have migrated.
"""
