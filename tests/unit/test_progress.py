"""Progress bars: rate and ETA on a terminal, nothing on anything else; plain hooks unchanged."""

from __future__ import annotations

import io
import re

from substrate.observability.progress import Bar, advance, set_total


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal_shows_rate_and_eta() -> None:
    out = Terminal()
    with Bar("ingest org.jsonl", "line", out=out) as bar:
        set_total(bar, 40)
        for _ in range(4):
            bar("[jsonl] org.jsonl: through line 10, snapshot 7")
            advance(bar, 10)
    text = out.getvalue()
    assert "ingest org.jsonl" in text and "40/40" in text
    assert re.search(r"line/s|s/line", text)  # the rate
    assert re.search(r"<\d\d:\d\d", text)  # elapsed<remaining: the ETA
    assert "through line 10" in text  # the connector's message beside the bar


def test_a_bar_is_quiet_when_not_a_terminal() -> None:
    out = io.StringIO()
    with Bar("reembed", "vector", out=out) as bar:
        assert not bar.enabled
        bar("[reembed] Entity: 500 vectors")
        advance(bar, 500)
    assert out.getvalue() == ""


def test_plain_hooks_are_left_alone() -> None:
    seen: list[str] = []
    advance(seen.append, 3)
    set_total(seen.append, 10)
    assert seen == []
