"""Post-mortems of the demo organisation (docs/postmortems)."""

from __future__ import annotations

PM_DIR = "docs/postmortems"

CART_SESSIONS_LOST = """\
---
title: Carts emptied after Redis evictions
date: 2026-08-20T21:40:00Z
severity: SEV2
status: resolved
---
# Carts emptied after Redis evictions

## Summary

Between 21:40 and 23:05 UTC about 8% of active carts were emptied. Cart data moved to Redis
the day before had no protection against eviction.

## Impact

Customers lost the contents of their carts: the cart service returned empty carts and the
checkout service rejected 1,240 purchases with "cart not found".

## Root Cause

PR #414 moved cart storage from process memory to the shared redis instance. That instance
runs with `maxmemory-policy allkeys-lru`; during the evening peak the rate-limit keys of the
gateway filled its memory and Redis evicted cart keys.

## Timeline

* 21:40 first "cart not found" errors.
* 22:10 on-call links the errors to evictions.
* 23:05 eviction policy changed to `volatile-lru`; carts no longer expire.

## Action Items

* Separate cache and storage instances.
* Alert on evicted keys above zero.
"""

STALE_SEARCH = """\
---
date: 2026-09-02T08:10:00Z
severity: SEV3
---
# Search results six hours stale

## Summary

Product changes made after 02:00 UTC did not show up in search until 08:10 UTC.

## Impact

The search service returned outdated prices and stock, and the web-frontend showed sold-out
products as available. No orders were lost, because checkout re-checks stock.

## Root Cause

A malformed catalogue event blocked the search-service consumer on Kafka: it retried the same
message forever instead of parking it, so search-index stopped receiving updates.

## Action Items

* Dead-letter topic for events that fail three times.
* Alert on consumer lag above five minutes.
"""

CHECKOUT_TIMEOUTS = """\
---
date: 2026-09-17T14:32:00Z
severity: SEV1
status: resolved
---
# Checkout payment timeouts and duplicate authorisations

## Summary

From 14:32 to 16:05 UTC 31% of purchases failed with "payment timed out", and 212 customers
saw two authorisation holds for one order.

## Impact

* checkout service: 31% of purchases failed during the afternoon peak.
* payment service: five times the normal request rate; p99 latency above 4 s.
* orders service: 2,900 orders left in `PAYMENT_PENDING` and fixed by hand.

## Root Cause

PR #431, merged on 2026-09-15, changed the `checkout` configuration: `PAYMENT_TIMEOUT_MS`
went from 5000 to 800 and `PAYMENT_RETRIES` from 1 to 5, and a fraud pre-check was added in
line. The p99 of an authorisation is about 1.2 s, so at the afternoon peak most calls timed
out and were retried up to five times, each retry a new authorisation.

## Timeline

* 2026-09-15 10:12 PR #431 merged and deployed.
* 2026-09-17 14:32 error-rate alert on checkout.
* 2026-09-17 15:40 configuration rolled back to 3000 ms and 2 retries (PR #436).
* 2026-09-17 16:05 error rate back to normal.

## Action Items

* Policy: the timeout of a synchronous call must exceed the p99 of the callee.
* Decide on asynchronous payment authorisation (done: ADR-0012).
"""

LOGIN_FAILURES = """\
---
date: 2026-10-06T07:55:00Z
severity: SEV1
---
# Login failures after signing-key rotation

## Summary

After the weekly signing-key rotation at 07:55 UTC, 40% of requests were rejected with 401
for 47 minutes.

## Impact

The api-gateway rejected valid sessions; the web-frontend and the mobile-bff logged customers
out.

## Root Cause

PR #445 raised `JWKS_CACHE_TTL` of the auth service from 5 minutes to 24 hours. After the
rotation the auth service signed tokens with the new key while validators still held the old
key set.

## Action Items

* Validators refetch the key set when they see an unknown key id.
* Rotation overlaps old and new keys for one hour.
"""

LEDGER_DOUBLE_POSTINGS = """\
---
date: 2026-10-20T03:15:00Z
severity: SEV2
---
# Ledger double postings

## Summary

The nightly settlement found 1,312 payment postings recorded twice in the ledger.

## Impact

* invoicing service: 96 invoices showed doubled totals and were re-issued.
* `reporting-api`: the finance report of 2026-10-19 overstated revenue and was withdrawn.

## Root Cause

PR #457 made the ledger service retry a posting after a timeout without an idempotency key,
so postings that had succeeded slowly were written a second time.

## Action Items

* Postings carry the payment's idempotency key (PR #458).
"""

EMAIL_BACKLOG = """\
---
date: 2026-10-27T12:20:00Z
severity: SEV3
---
# Order confirmations delayed by up to three hours

## Summary

Order confirmations and shipping updates reached customers up to three hours late.

## Impact

The notification service queued 180,000 messages, and the email service sent confirmations
up to three hours late.

## Root Cause

The new rabbitmq broker (PR #460) ran with the default disk limit. Once unacknowledged
messages filled its volume it raised a disk alarm and blocked every publisher.

## Action Items

* Size the broker volume and alert at 70% use.
"""

POSTMORTEMS = {
    "2026-08-20-cart-sessions-lost.md": CART_SESSIONS_LOST,
    "2026-09-02-stale-search-results.md": STALE_SEARCH,
    "2026-09-17-checkout-payment-timeouts.md": CHECKOUT_TIMEOUTS,
    "2026-10-06-login-failures-after-key-rotation.md": LOGIN_FAILURES,
    "2026-10-20-ledger-double-postings.md": LEDGER_DOUBLE_POSTINGS,
    "2026-10-27-email-backlog.md": EMAIL_BACKLOG,
}
