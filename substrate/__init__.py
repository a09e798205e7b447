"""Substrate Reasoning: a Neo4j-centric hardened GraphRAG reasoning and search service."""

__version__ = "0.1.0"
