"""Checks the stack makes before starting anything: Java present and new enough."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.errors import StackError
from substrate.stack.neo4j_server import java_binary


def fake_java_home(tmp_path: Path, version_line: str) -> Path:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return java.parent.parent


def test_missing_java_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk-here"))
    with pytest.raises(StackError, match="Java 17\\+ is needed") as info:
        java_binary()
    assert "apt-get install -y openjdk-17-jre-headless" in info.value.message


@pytest.mark.parametrize(
    ("line", "major"),
    [('openjdk version "11.0.22" 2024-01-16', 11), ('java version "1.8.0_402"', 8)],
)
def test_old_java_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, major: int
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, line)))
    with pytest.raises(StackError, match=f"needs Java 17 or 21 but .* is Java {major};"):
        java_binary()


def test_java_17_or_newer_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = fake_java_home(tmp_path, 'openjdk version "17.0.13" 2024-10-15')
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert java_binary() == str(home / "bin" / "java")
