"""The demo organisation "acme": a generated git repository plus ``org.jsonl``."""
