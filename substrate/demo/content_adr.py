"""Architecture decision records 0001-0007 of the demo (Nygard and MADR, as in real repos)."""

from __future__ import annotations

ADR_DIR = "docs/adr"

ADR_README = """\
# Architecture decision records

Decisions about the shop platform, numbered in order. Nygard's template for most records,
MADR for the ones that compare options. Copy `template.md` to start a new one.
"""

TEMPLATE = """\
# NNNN. Title

Date: YYYY-MM-DD

## Status

Proposed

## Context

## Decision

## Consequences
"""

ADR_0001 = """\
# 1. Record architecture decisions

Date: 2026-08-03

## Status

Accepted

## Context

We need to record the architectural decisions made on the shop platform, so that people
joining later can see why things are the way they are.

## Decision

We will use Architecture Decision Records, as described by Michael Nygard, kept in this
folder and numbered in order. Records that compare options may use the MADR template.

## Consequences

Every significant change of structure, technology or ownership gets a short record that is
reviewed like code.
"""

ADR_0002 = """\
# 2. One PostgreSQL database per service

Date: 2026-08-03

## Status

Accepted

## Context

Several teams read and write the same tables of the old shop database. Schema changes need
coordinated releases, and a slow query of one team locks the tables of another.

## Decision

Every stateful service owns its own PostgreSQL database and nothing else connects to it.
The first databases are users-db, catalog-db, orders-db, payments-db, ledger-db and
fulfilment-db. Others read that data through the owner's API or its events on Kafka.

## Consequences

Cross-team queries move to APIs and events; reports read replicated data instead of
production tables. Exceptions are recorded against the policy "one database per service".
"""

ADR_0003 = """\
# 3. Synchronous REST from checkout service to payment service

Date: 2026-08-05

## Status

{status}

## Context

At the end of a purchase the checkout service must know whether the payment was authorised
before it creates the order. The PSP answers within two seconds in most cases.

## Decision

The checkout service calls the payment service synchronously over REST
(`POST /payments/authorisations`) with a timeout of 5 seconds and one retry. The payment
service answers only after the PSP has answered.

## Consequences

Simple to build and to reason about. Checkout latency includes PSP latency, and a slow PSP
holds checkout threads; we accept this for the launch.
"""
ADR_0003_ACCEPTED = "Accepted"
ADR_0003_SUPERSEDED = (
    "Superseded by [ADR-0012](0012-asynchronous-payment-authorisation.md) on 2026-09-28."
)

ADR_0004 = """\
---
status: accepted
date: 2026-08-07
deciders: mchen, akowalski, rkumar
---
# Kafka for domain events

## Context and Problem Statement

Teams need to learn about changes elsewhere (orders placed, prices changed, stock reserved)
without calling each other in long chains.

## Considered Options

* Kafka
* RabbitMQ
* Polling the owner's API

## Decision Outcome

Chosen option: "Kafka", because it keeps an ordered, replayable log per topic that new
consumers can read from the beginning.

### Consequences

* Good, because producers do not know their consumers.
* Bad, because we now run and upgrade a broker cluster.
"""

ADR_0005 = """\
# 5. API gateway as the single entry point

Date: 2026-08-10

## Status

Accepted

## Context

Browsers and apps talk to a dozen backends directly, each with its own authentication and
rate limits.

## Decision

All public traffic enters through the api-gateway. It validates the session token with the
auth service, applies rate limits kept in Redis and routes to internal backends, which are
not reachable from the internet.

## Consequences

One place for TLS, authentication and rate limiting; the gateway must scale with the shop.
"""

ADR_0006 = """\
# 6. Mobile BFF for the apps

Date: 2026-08-11

## Status

{status}

## Context

The iOS and Android apps need fewer, larger responses than the storefront, and they release
on a slower cycle.

## Decision

We build a backend-for-frontend, the mobile-bff, that aggregates gateway calls for the apps
and keeps their API stable across releases.

## Consequences

A second client-facing API to maintain.
"""
ADR_0006_ACCEPTED = "✅ Accepted"
ADR_0006_DEPRECATED = (
    "⚠️ Deprecated on 2026-10-09: new app endpoints go to the GraphQL API of the api-gateway;\n"
    "the mobile-bff is frozen."
)

ADR_0007 = """\
# JWT sessions issued by the auth service

* Status: accepted
* Deciders: dsmith, mchen
* Date: 2026-08-12

## Context and Problem Statement

Every request through the api-gateway needs the customer's identity. Looking sessions up in a
shared store on every hop adds latency and couples every backend to that store.

## Decision Drivers

* Stateless validation at the edge
* Short-lived credentials

## Decision Outcome

Chosen option: "signed JWTs", because the api-gateway and internal backends can validate them
with the public keys the auth service publishes (JWKS), without a network call per request.
Tokens live 15 minutes; signing keys rotate weekly.

### Consequences

* Good, because validation is local.
* Bad, because every validator must refresh the JWKS in time when keys rotate.
"""
