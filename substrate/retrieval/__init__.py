"""Grounded retrieval: routing, strategies, fusion, evidence bundles."""
