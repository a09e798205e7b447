"""Cypher templates: the header is parsed, and a broken file stops the library from loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.cypher import CYPHER_DIR, CypherLibrary, parse_template
from substrate.errors import TemplateError

HEADER = """\
// name: {name}
// version: 3
// mode: {mode}
// params: {params}
// returns: target, hops
// serves: RSN-UC-01
// doc: What a service depends on.
"""
BODY = "MATCH (s:Service {tenant_id: $tenant, ceid: $ceid})-[:DEPENDS_ON]->(t)\nRETURN t AS target"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def header(name: str, mode: str = "read", params: str = "tenant, ceid") -> str:
    return HEADER.format(name=name, mode=mode, params=params)


def test_header_is_parsed(tmp_path: Path) -> None:
    path = write(tmp_path, "retrieval/deps.cypher", header("retrieval/deps") + BODY + "\n")
    t = parse_template(path, tmp_path)
    assert t.header() == {
        "name": "retrieval/deps", "version": 3, "mode": "read", "params": ["tenant", "ceid"],
        "returns": ["target", "hops"], "serves": "RSN-UC-01",
        "doc": "What a service depends on.",
    }
    assert t.body == BODY and not t.is_template and t.sample == {}
    assert t.render() == BODY


def test_jinja_template_with_sample_renders_strictly(tmp_path: Path) -> None:
    text = (
        header("graph/by_label", params="tenant")
        + '// sample: {"label": "Service"}\n'
        + "MATCH (n:{{ label }} {tenant_id: $tenant}) RETURN n AS target, 0 AS hops\n"
    )
    t = parse_template(write(tmp_path, "graph/by_label.cypher.j2", text), tmp_path)
    assert t.is_template and t.name == "graph/by_label"
    assert t.sample == {"label": "Service"}
    assert t.render(**t.sample).startswith("MATCH (n:Service {tenant_id: $tenant})")
    with pytest.raises(TemplateError, match="cannot render graph/by_label"):
        t.render()  # StrictUndefined: a missing variable is an error, not an empty string


@pytest.mark.parametrize("key", ["name", "version", "mode", "params", "returns", "serves", "doc"])
def test_missing_header_key_is_refused(tmp_path: Path, key: str) -> None:
    text = "".join(
        line + "\n" for line in header("q").splitlines() if not line.startswith(f"// {key}:")
    )
    path = write(tmp_path, "q.cypher", text + BODY)
    with pytest.raises(TemplateError, match=f"header lacks {key}"):
        parse_template(path, tmp_path)


def test_params_header_must_match_the_parameters_used(tmp_path: Path) -> None:
    path = write(tmp_path, "q.cypher", header("q", params="tenant") + BODY)
    with pytest.raises(TemplateError, match="params header") as info:
        parse_template(path, tmp_path)
    assert "['ceid', 'tenant']" in info.value.message
    path = write(tmp_path, "q.cypher", header("q", params="tenant, ceid, depth") + BODY)
    with pytest.raises(TemplateError, match="params header"):
        parse_template(path, tmp_path)


def test_bad_jinja_is_refused(tmp_path: Path) -> None:
    text = header("q", params="tenant") + "MATCH (n:{{ label }) WHERE n.tenant_id = $tenant\n"
    path = write(tmp_path, "q.cypher.j2", text)
    with pytest.raises(TemplateError, match="template syntax error"):
        parse_template(path, tmp_path)


def test_name_must_match_the_path(tmp_path: Path) -> None:
    path = write(tmp_path, "retrieval/deps.cypher", header("retrieval/dependencies") + BODY)
    with pytest.raises(TemplateError, match="must be 'retrieval/deps'"):
        parse_template(path, tmp_path)


def test_mode_must_be_read_or_write(tmp_path: Path) -> None:
    path = write(tmp_path, "q.cypher", header("q", mode="admin") + BODY)
    with pytest.raises(TemplateError, match="mode must be read or write"):
        parse_template(path, tmp_path)


def test_library_refuses_to_load_with_any_broken_file(tmp_path: Path) -> None:
    write(tmp_path, "good.cypher", header("good") + BODY)
    write(tmp_path, "a/bad_name.cypher", header("a/other") + BODY)
    write(tmp_path, "b/bad_params.cypher", header("b/bad_params", params="x") + BODY)
    with pytest.raises(TemplateError, match="broken Cypher templates") as info:
        CypherLibrary.load(tmp_path)
    assert len(info.value.detail) == 2  # every broken file is reported, not just the first
    (tmp_path / "a" / "bad_name.cypher").unlink()
    (tmp_path / "b" / "bad_params.cypher").unlink()
    library = CypherLibrary.load(tmp_path)
    assert list(library.templates) == ["good"]
    assert library.text("good") == BODY
    with pytest.raises(TemplateError, match="no Cypher template named 'missing'"):
        library.get("missing")


def test_the_project_templates_load() -> None:
    library = CypherLibrary.load(CYPHER_DIR)
    ledger = library.get("migrations/ledger")
    assert ledger.is_template and ledger.sample == {"label": "__Migration"}
    assert "MATCH (m:__Migration)" in ledger.render(**ledger.sample)
    record = library.get("migrations/record")
    assert set(record.params) == {"version", "description", "checksum", "duration_ms"}
    for t in library.templates.values():
        if t.is_template:
            t.render(**t.sample)  # every sample is a complete context for its template
