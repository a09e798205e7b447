"""The local stack: Neo4j, PostgreSQL, Redis, NATS and the gateway as loopback processes."""
