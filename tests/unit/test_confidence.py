from __future__ import annotations

import pytest

from substrate.retrieval.confidence import (
    Support,
    combined_confidence,
    confidence_block,
    evidence_document,
    path_confidence,
    source_density,
)


def test_path_confidence_is_the_product_of_edge_confidences() -> None:
    assert path_confidence([0.99, 0.96]) == pytest.approx(0.9504)
    assert path_confidence([]) == 1.0
    with pytest.raises(ValueError):
        path_confidence([0.5, 1.2])


@pytest.mark.parametrize(
    ("ref", "document"),
    [
        ("docker-compose.yml#L12@3f2a9c1", "docker-compose.yml"),
        ("oms:db:orders/881#row_v3", "oms:db:orders/881"),
        ("crm:exports/segments_2026_05_01.parquet#offset_4112",
         "crm:exports/segments_2026_05_01.parquet"),
        ("services/checkout/main.py@0123456789abcdef0123456789abcdef01234567",
         "services/checkout/main.py"),
        ("slack:thread@team", "slack:thread@team"),
    ],
)
def test_evidence_document(ref: str, document: str) -> None:
    assert evidence_document(ref) == document


def test_spec_example_shape() -> None:
    support = [
        Support("ServiceNode:PaymentService", 0.6, source="compose"),
        Support("DecisionNode:ADR-047", 0.5, source="adr"),
        Support("DecisionNode:ADR-047", 0.2, source="slack"),
    ]
    block = confidence_block(support, ["local_graphrag", "hyDE", "rrf_fusion", "hyDE"])
    assert block.to_dict() == {
        "confidence": round(1 - 0.4 * 0.5 * 0.8, 3),
        "evidence_nodes": ["ServiceNode:PaymentService", "DecisionNode:ADR-047"],
        "source_density": 3,
        "retrieval_strategies_used": ["local_graphrag", "hyDE", "rrf_fusion"],
        "low_confidence_warning": False,
    }
    assert block.well_supported
    assert list(block.to_dict()) == ["confidence", "evidence_nodes", "source_density",
                                     "retrieval_strategies_used", "low_confidence_warning"]


def test_one_connector_is_one_source_and_warns() -> None:
    support = [Support("Service:a", 0.9, source="compose", document="a.yml"),
               Support("Service:b", 0.7, source="compose", document="b.yml")]
    block = confidence_block(support, ["local_graphrag"])
    assert block.source_density == 1
    assert block.confidence == 0.9  # the best evidence of the one source; no self-corroboration
    assert block.low_confidence_warning and not block.well_supported


def test_independence_falls_back_to_document_then_node() -> None:
    support = [Support("Service:a", 0.5, document="a.yml"),
               Support("Service:a", 0.5, document="a.yml"),
               Support("Service:b", 0.5, document="b.yml"),
               Support("Service:c", 0.5)]
    assert source_density(support) == 3
    assert combined_confidence(support) == pytest.approx(1 - 0.5 ** 3)


def test_no_support_and_degraded_answers_warn() -> None:
    empty = confidence_block([], ["vector"])
    assert (empty.confidence, empty.source_density, empty.low_confidence_warning) == (0.0, 0, True)
    support = [Support(f"Service:{n}", 0.9, source=n) for n in "abc"]
    assert not confidence_block(support, []).low_confidence_warning
    assert confidence_block(support, [], degraded=True).low_confidence_warning


def test_support_validates_confidence() -> None:
    with pytest.raises(ValueError):
        Support("Service:a", 1.5)
