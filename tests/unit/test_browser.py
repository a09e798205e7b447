"""Neo4j Browser procedures and saved scripts: what is installed and shipped (no database)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from substrate import browser
from substrate.cypher import CypherLibrary, parse_template
from substrate.errors import TemplateError

HEADER = """\
// name: retrieval/{name}
// version: 2
// mode: read
// params: {params}
// returns: target, depth
// serves: RSN-UC-01
// doc: Test template.
"""


def template(tmp_path: Path, name: str, params: str, extra: str = "", body: str = "") -> Path:
    path = tmp_path / "retrieval" / f"{name}.cypher.j2"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER.format(name=name, params=params) + extra + (body or (
        "MATCH (s {tenant_id: $tenant, ceid: $ceid})-[*1..{{ depth }}]->(t)\n"
        "WHERE s.v <= $v AND t.c IN $clearance RETURN t AS target, $k AS depth\n")))
    return path


def test_signature_renames_short_names_and_types_parameters(tmp_path: Path) -> None:
    t = parse_template(template(tmp_path, "deps", "tenant, v, clearance, ceid, k, limit",
                                '// sample: {"depth": 2}\n'), tmp_path)
    p = browser.build(t, "", t.sample)
    assert p.name == "substrate_retrieval_deps"
    assert p.signature == (
        "substrate_retrieval_deps(tenant :: STRING, snapshot :: INTEGER, clearance :: LIST OF "
        "STRING, ceid :: STRING, top_k = 10 :: INTEGER, limit = 100 :: INTEGER) :: "
        "(target :: ANY, depth :: ANY)")
    assert "$snapshot" in p.statement and "$top_k" in p.statement and "*1..2" in p.statement
    assert not re.search(r"\$(v|k)\b", p.statement)
    assert f"sha {p.digest}]" in p.description and "retrieval/deps v2" in p.description


def test_header_types_override_and_unknown_parameters_are_any(tmp_path: Path) -> None:
    t = parse_template(template(tmp_path, "odd", "tenant, v, clearance, ceid, since, ceid2",
                                '// sample: {"depth": 1}\n// types: since:INTEGER, '
                                'ceid: list of string\n'), tmp_path)
    sig = browser.build(t, "", t.sample).signature
    assert "ceid :: LIST OF STRING, since :: INTEGER, ceid2 :: ANY" in sig


def test_bad_types_and_procedures_lines_are_template_errors(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="bad types entry"):
        parse_template(template(tmp_path, "t1", "tenant, v, clearance, ceid",
                                "// types: nope:STRING\n"), tmp_path)
    with pytest.raises(TemplateError, match="bad types entry"):
        parse_template(template(tmp_path, "t2", "tenant, v, clearance, ceid",
                                "// types: ceid:TEXT\n"), tmp_path)
    with pytest.raises(TemplateError, match="procedures"):
        parse_template(template(tmp_path, "t3", "tenant, v, clearance, ceid",
                                '// procedures: {"Bad-Suffix": {}}\n'), tmp_path)


def test_variants_and_skipped_templates(tmp_path: Path) -> None:
    template(tmp_path, "deps", "tenant, v, clearance, ceid, k",
             '// procedures: {"": {"depth": 1}, "deep": {"depth": 3}}\n')
    template(tmp_path, "unscoped", "tenant, ceid, k", '// sample: {"depth": 1}\n')
    procedures, skipped = browser.plan(CypherLibrary.load(tmp_path))
    assert [p.name for p in procedures] == ["substrate_retrieval_deps",
                                            "substrate_retrieval_deps_deep"]
    assert "*1..3" in procedures[1].statement
    assert skipped == {"retrieval/unscoped": "lacks the scope parameters ['v', 'clearance']"}


def test_shipped_library_gives_one_procedure_per_read_retrieval_template() -> None:
    library = CypherLibrary.load()
    procedures, skipped = browser.plan(library)
    templates = {t.name for t in library.templates.values()
                 if t.name.startswith("retrieval/") and t.mode == "read"}
    assert {p.template for p in procedures} | set(skipped) == templates
    deps = {p.name for p in procedures if p.template == "retrieval/dependencies"}
    assert {"substrate_retrieval_dependencies", "substrate_retrieval_dependencies_callers"} <= deps
    assert all("browser" not in name for name in library.templates)  # scripts are not templates


def test_every_shipped_script_parses_and_calls_only_known_procedures() -> None:
    known = {p.name for p in browser.procedures(CypherLibrary.load())}
    scripts = browser.browser_scripts()
    assert len(scripts) == 8
    for path in scripts:
        script = browser.parse_script(path.read_text())
        assert script.title.startswith("RSN-UC-0"), path.name
        assert {"tenant", "snapshot", "clearance"} <= set(script.params), path.name
        called = set(re.findall(r"custom\.(\w+)", script.query))
        assert called <= known, (path.name, called - known)
        used = set(re.findall(r"\$(\w+)", script.query))
        assert used <= set(script.params), (path.name, used - set(script.params))


def test_parse_script_rejects_two_queries() -> None:
    with pytest.raises(TemplateError, match="exactly one query"):
        browser.parse_script("// t\n:param a => 1;\nRETURN $a;\nRETURN 2;")
    with pytest.raises(TemplateError, match="title"):
        browser.parse_script(":param a => 1;\nRETURN $a;")


def test_shipped_favorites_archive_is_the_scripts(tmp_path: Path) -> None:
    built = browser.favorites_zip(tmp_path / "favorites.zip")
    assert built.read_bytes() == browser.FAVORITES_ZIP.read_bytes(), \
        "cypher/browser/substrate-favorites.zip is stale: run `substrate browser export`"
    with zipfile.ZipFile(built) as archive:
        names = archive.namelist()
        assert names == [f"{browser.FAVORITES_FOLDER}/{p.name}"
                         for p in browser.browser_scripts()]
        assert archive.read(names[0]).decode() == browser.browser_scripts()[0].read_text()
