"""The JSONL record format: valid records, and errors that name the line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from substrate.connectors.jsonl_format import parse_jsonl_lines
from substrate.graph.records import EdgeRecord, NodeRecord

NODE = {"kind": "node", "label": "Service", "ceid": "service:checkout",
        "props": {"name": "checkout"}, "confidence": 0.99,
        "provenance": ["jira:SHOP-1"]}  # fmt: skip
EDGE = {"kind": "edge", "type": "CALLS", "src": "service:a", "dst": "service:b",
        "evidence_ref": "github:acme/shop#pr-412", "confidence": 0.97, "weight": 2,
        "props": {"via": "http"}}  # fmt: skip


def _lines(*records: dict[str, Any] | str) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in records]


def test_valid_records_with_line_numbers() -> None:
    parsed = list(parse_jsonl_lines(_lines(NODE, "", "   ", EDGE)))
    assert [n for n, _ in parsed] == [1, 4]
    node, edge = parsed[0][1], parsed[1][1]
    assert node == NodeRecord("service:checkout", "Service", {"name": "checkout"},
                              ("jira:SHOP-1",), 0.99)  # fmt: skip
    assert edge == EdgeRecord("CALLS", "service:a", "service:b", "github:acme/shop#pr-412",
                              0.97, 2.0, "jsonl", {"via": "http"})  # fmt: skip


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "JSON object"),
        ({"kind": "thing"}, "kind must be"),
        ({**NODE, "label": "Spaceship"}, "unknown label"),
        ({**NODE, "ceid": "svc:checkout"}, "must start with 'service'"),
        ({**NODE, "props": {}}, "required prop 'name'"),
        ({**NODE, "label": "ProjectItem", "ceid": "item:x"}, "required prop 'kind'"),
        ({**NODE, "confidence": 0}, "confidence"),
        ({**NODE, "confidence": 1.5}, "confidence"),
        ({**NODE, "extra": 1}, "unknown keys"),
        ({**EDGE, "type": "LIKES"}, "unknown relationship type"),
        ({**EDGE, "evidence_ref": ""}, "evidence_ref must be"),
        ({k: v for k, v in EDGE.items() if k != "evidence_ref"}, "evidence_ref must be"),
        ({**EDGE, "weight": "heavy"}, "weight"),
        ({**EDGE, "props": []}, "props must be"),
    ],
)
def test_errors_carry_the_line_number(bad: dict[str, Any] | str, message: str) -> None:
    with pytest.raises(ValueError, match=rf"^line 3: .*{message}"):
        list(parse_jsonl_lines(_lines(NODE, EDGE, bad)))
