"""Synthetic organisations of realistic shape and size for benchmarks (S / M / L).

Kept apart from :mod:`substrate.demo`: the demo is one hand-written 34-service story with
gold answers (``EXPECTED.md``); this package generates organisations of any size from a
seed, whose answers are known only statistically (fan-in skew, ownership, chains).
"""
