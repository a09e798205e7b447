"""direct.name_phrase: the full-text query that finds the candidates of a by-name lookup
(retrieval/resolve_entity seeks them instead of reading every entity of the label)."""

from __future__ import annotations

import pytest

from substrate.retrieval.direct import name_phrase


@pytest.mark.parametrize(
    ("name", "query"),
    [("PLAT-1", 'name:"PLAT\\-1" OR alias_text:"PLAT\\-1"'),
     ("payment service", 'name:"payment service" OR alias_text:"payment service"'),
     ('a"b OR c', 'name:"a\\"b \\OR c" OR alias_text:"a\\"b \\OR c"')],
)
def test_the_name_is_one_escaped_phrase_on_names_and_aliases(name: str, query: str) -> None:
    assert name_phrase(name) == query


@pytest.mark.parametrize("name", ["---", "__", " ", "()"])
def test_a_name_without_letters_or_digits_has_no_phrase(name: str) -> None:
    assert name_phrase(name) is None  # the template then reads the label's entities
