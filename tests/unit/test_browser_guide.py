"""The Neo4j Browser guide: a slide per saved script, its params and query runnable."""

from __future__ import annotations

import html
from html.parser import HTMLParser

from substrate import browser
from substrate.browser_guide import browser_origins, guide_html, slide
from substrate.settings import Settings


class Blocks(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.slides, self.runnable, self._in = 0, list[str](), False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.slides += tag == "slide"
        self._in = tag == "pre" and "runnable" in (dict(attrs).get("class") or "")
        if self._in:
            self.runnable.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = self._in and tag != "pre"

    def handle_data(self, data: str) -> None:
        if self._in:
            self.runnable[-1] += data


def test_every_saved_script_has_a_slide_with_runnable_params_and_query() -> None:
    scripts = browser.browser_scripts()
    page = Blocks()
    page.feed(guide_html("http://localhost:8080/browser/guide"))
    assert page.slides == len(scripts) + 3  # welcome, scope, one per script, keep them
    for path in scripts:
        script = browser.parse_script(path.read_text())
        assert script.query + ";" in page.runnable, path.name
        for name, value in script.params.items():
            assert any(f":param {name} => {value};" in block for block in page.runnable)


def test_slides_carry_the_scripts_notes_escaped() -> None:
    path = browser.browser_scripts()[0]
    s = slide(path)
    assert s.title.startswith("RSN-UC-01") and s.notes
    text = guide_html("http://localhost:8080/browser/guide")
    assert html.escape(s.title) in text
    assert "<script" not in text  # a guide is slides and code blocks only


def test_the_browser_origins_follow_the_http_port() -> None:
    origins = browser_origins(Settings.from_env({"NEO4J_HTTP_PORT": "17474"}))
    assert "http://localhost:17474" in origins and "http://127.0.0.1:17474" in origins
