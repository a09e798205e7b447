"""The AT(past) property-read rewrite of /cypher (issue 9): which reads, which keys, names."""

from __future__ import annotations

from substrate.retrieval.cypher_past import rewrite_past_reads
from substrate.retrieval.cypher_scope import scope_query


def rewrite(query: str) -> tuple[str, frozenset[str] | None]:
    reads = rewrite_past_reads(scope_query(query).text)
    assert reads is not None
    return reads.text, reads.keys


def test_property_reads_look_up_the_past_values_and_keep_column_names() -> None:
    text, keys = rewrite("MATCH (s:Service) WHERE s.env IS NOT NULL RETURN s.env, s.name AS n")
    assert keys == frozenset({"env", "name"})
    assert "$__past[s.ceid]['env']" in text and "$__past[s.ceid]['name']" in text
    assert text.endswith("AS `s.env`, (CASE WHEN NOT s IS :: NODE NOT NULL THEN s.name "
                         "WHEN 'name' IN keys(coalesce($__past[s.ceid], {})) THEN "
                         "$__past[s.ceid]['name'] ELSE s.name END) AS n")
    assert "s.tenant_id = $__tenant" in text  # the scope predicates read today's bookkeeping


def test_projections_and_property_maps() -> None:
    text, keys = rewrite("MATCH (s:Service) RETURN s {.image, `my key`: 1}, properties(s)")
    assert keys is None  # properties(s) reads every key
    assert "image: (CASE" in text and "apoc.map.merge(properties(s), $__past[s.ceid])" in text
    text, keys = rewrite("MATCH (s:Service) RETURN s {.`odd key`}")
    assert keys == frozenset({"odd key"}) and "`odd key`: (CASE" in text and "['odd key']" in text


def test_what_is_not_rewritten() -> None:
    scoped = scope_query("MATCH (s:Service) RETURN s.ceid, s, date().year, [1, 2][0]").text
    assert rewrite_past_reads(scoped) is None  # bookkeeping, whole nodes, non-variables
