"""Connectors turn sources (JSONL, git repositories, documents) into graph records."""
