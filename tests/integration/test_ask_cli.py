"""``substrate ask``: through the running gateway when it is up, in-process when it is not."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from substrate.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.integration

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"
QUESTION = "What does checkout depend on?"


def ask(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), "ask", *args], capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, **env})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ask_through_the_gateway_matches_in_process(stack: Settings) -> None:
    remote = ask(QUESTION, "--json")
    local = ask(QUESTION, "--json", "--local")
    assert remote.returncode == 0 and local.returncode == 0, remote.stderr + local.stderr
    a, b = json.loads(remote.stdout), json.loads(local.stdout)
    # the same snapshot, unless the gateway's answer is a cache entry made at an earlier
    # version that no later write touched (a stack kept running across test sessions)
    assert a["snapshot_version"] == b["snapshot_version"] or (
        a["cache"]["hit"] and a["snapshot_version"] < b["snapshot_version"]), (a["cache"], b)
    assert {c["to"] for c in a["citations"]} == {c["to"] for c in b["citations"]}
    assert "service:cart" in {c["to"] for c in a["citations"]}


def test_ask_falls_back_to_in_process_when_no_gateway_listens(stack: Settings) -> None:
    result = ask(QUESTION, GATEWAY_PORT=str(closed_port()))
    assert result.returncode == 0, result.stderr
    assert "checkout depends on" in result.stdout and "@" in result.stdout


def test_ask_with_a_bad_key_says_so_in_one_line(stack: Settings) -> None:
    result = ask(QUESTION, SUBSTRATE_API_KEY="sk_bogus_key")
    if result.returncode == 0:
        pytest.fail("the gateway accepted a bogus API key")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "401" in lines[0], result.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(stack: Settings) -> None:
    """``substrate ask ... | head -1``: the pipe closes before the answer is written; the
    command exits 141 (as cat does) with no error line."""
    proc = subprocess.Popen([str(CLI), "ask", QUESTION], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # nobody reads the answer
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141, err
    assert err.strip() == ""
