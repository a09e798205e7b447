"""The evidence-bound graph: ontology, records, write path, snapshots."""
