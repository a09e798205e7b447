"""GDS jobs, scheduled by cron: PageRank, Leiden communities with their summaries, and the
architectural risk ranking.

Each job projects one tenant's structural graph as it was at a snapshot version (a Cypher
projection from ``cypher/gds/project.cypher.j2``), runs GDS algorithms through the
``graphdatascience`` client, and always drops the projection afterwards. Run them as
``python -m gds_jobs {communities|pagerank|risks} [--tenant T]``; ``gds_jobs/crontab.example``
shows a schedule.
"""
