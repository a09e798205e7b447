"""``substrate doctor``: what is wrong with this installation, and how to fix each problem.

:mod:`.checks` looks at ports (a part down, or its port taken by another listener), versions
(Neo4j 5.26 with APOC and GDS, PostgreSQL 16 with pgvector, Redis 7, NATS with JetStream),
credentials (each part accepts the password in ``$SUBSTRATE_HOME/secrets``), migrations
(pending or changed files), index state (every index ONLINE, vector dimensions =
``EMBEDDING_DIM``) and embedding-model consistency (the local model's files, the model each
vector index was built with). Each finding names its fix. :mod:`.report` prints them.
"""
