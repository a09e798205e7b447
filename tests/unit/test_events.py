"""The ``graph.updated`` payload: one message per snapshot, always within NATS's limit."""

from __future__ import annotations

import json

from substrate.graph.events import encode_event


def test_small_event_carries_every_changed_id() -> None:
    event = {"snapshot_version": 7, "tenant_id": "acme", "changed_ids": ["service:a", "x"]}
    assert json.loads(encode_event(event, 1_000)) == event


def test_event_too_large_for_one_message_leaves_the_ids_to_the_change_log() -> None:
    ids = [f"service:s{i}-[CALLS]->service:t{i}@bench" for i in range(50_000)]
    event = {"snapshot_version": 8, "tenant_id": "acme", "changed_ids": ids}
    data = encode_event(event, 1_048_576 - 4096)
    assert len(data) < 1_000
    assert json.loads(data) == {"snapshot_version": 8, "tenant_id": "acme", "changed_ids": [],
                                "changed_ids_truncated": True, "changed_count": 50_000}
