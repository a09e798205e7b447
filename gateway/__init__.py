"""The thin HTTP shell: HTTP in, calls into substrate's graph/retrieval modules, JSON out."""
