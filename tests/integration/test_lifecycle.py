"""The stack's lifecycle: ``status`` reports every part, a part killed behind the tool's back
shows up in ``status`` and ``/readyz`` and ``up`` brings it back; stale pid files, a taken
port and a part that never becomes healthy give clear errors; a second ``up`` is a no-op."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from substrate.errors import MigrationError, StackError
from substrate.settings import PROJECT_ROOT, Settings, redact_url
from substrate.stack.part import Part, pid_alive
from substrate.stack.redis_server import RedisPart
from substrate.stack.supervisor import PART_NAMES, status
from substrate.stack.up import up

pytestmark = pytest.mark.integration

CLI = PROJECT_ROOT / ".substrate" / "venv" / "bin" / "substrate"


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def cli_status() -> tuple[int, dict[str, dict[str, object]]]:
    result = cli("status", "--json", timeout=60)
    return result.returncode, {p["name"]: p for p in json.loads(result.stdout)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


def readyz(settings: Settings) -> httpx.Response:
    return httpx.get(f"http://{settings.gateway_host}:{settings.gateway_port}/readyz", timeout=15)


def quiet(_message: str) -> None:
    pass


def up_again(settings: Settings, messages: list[str]) -> dict[str, object]:
    """``up``, waiting out another session's ``up`` that holds the migration lock right now
    (the stack is shared by everyone working on this machine)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return up(settings, demo=False, progress=messages.append)
        except MigrationError as exc:
            if "another `migrate up`" not in exc.message or time.monotonic() > deadline:
                raise
            time.sleep(2)


# --- status -------------------------------------------------------------------------------
def test_status_json_reports_every_part_healthy(stack: Settings) -> None:
    code, parts = cli_status()
    assert code == 0
    assert list(parts) == list(PART_NAMES)
    for name, part in parts.items():
        assert part["healthy"] is True, part
        assert part["running"] is True
        pid = part["pid"]
        assert isinstance(pid, int) and pid_alive(pid)
        assert (stack.run_dir / f"{name}.pid").read_text().strip() == str(pid)
        assert part["address"] and part["version"]
    assert str(parts["neo4j"]["version"]).startswith("5.26.")
    assert "apoc" in str(parts["neo4j"]["version"]) and "gds" in str(parts["neo4j"]["version"])
    assert "pgvector" in str(parts["postgres"]["version"])
    assert "jetstream" in str(parts["nats"]["version"])
    assert parts["neo4j"]["address"] == stack.neo4j_uri
    assert parts["postgres"]["address"] == redact_url(stack.postgres_dsn)
    assert parts["gateway"]["address"] == f"http://{stack.gateway_host}:{stack.gateway_port}"


def test_second_up_is_a_no_op_that_says_so(stack: Settings) -> None:
    result = cli("up", "--no-demo")
    assert result.returncode == 0, result.stderr
    assert "already up" in result.stdout
    messages: list[str] = []
    report = up(stack, demo=False, progress=messages.append)
    assert report["started"] == [] and report["migrations_applied"] == []
    assert any("already up" in m for m in messages)


# --- a part killed behind the tool's back --------------------------------------------------
def test_killed_neo4j_is_reported_and_up_brings_it_back(stack: Settings) -> None:
    pid_file = stack.run_dir / "neo4j.pid"
    pid = int(pid_file.read_text())
    try:
        os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not pid_alive(pid)

        code, parts = cli_status()
        assert code == 3
        assert parts["neo4j"]["healthy"] is False
        assert parts["neo4j"]["running"] is False and parts["neo4j"]["pid"] is None
        assert parts["neo4j"]["detail"]
        assert all(parts[n]["healthy"] for n in PART_NAMES if n != "neo4j")
        assert not pid_file.exists()  # the stale pid file was cleared

        response = readyz(stack)
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "not_ready"
        assert "neo4j" in error["message"]
        assert error["detail"]["neo4j"]["ok"] is False
        assert all(error["detail"][n]["ok"] for n in ("postgres", "redis", "nats"))

        messages: list[str] = []
        report = up_again(stack, messages)
        assert report["migrations_applied"] == []
        # `up` restarted it (unless another session's `up` got there first)
        assert "neo4j" in report["started"] or not any("[neo4j] starting" in m for m in messages)
    finally:
        if not all(p.healthy for p in status(stack)):
            up_again(stack, [])  # never leave the stack broken

    code, parts = cli_status()
    assert code == 0
    new_pid = parts["neo4j"]["pid"]
    assert parts["neo4j"]["healthy"] is True and new_pid not in (None, pid)
    assert pid_file.read_text().strip() == str(new_pid)
    deadline = time.monotonic() + 60  # the gateway's driver reconnects on its own
    while (response := readyz(stack)).status_code != 200 and time.monotonic() < deadline:
        time.sleep(1)
    assert response.status_code == 200, response.text
    assert response.json()["parts"]["neo4j"]["ok"] is True


# --- clear errors, on parts of a scratch home ----------------------------------------------
def scratch_settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"SUBSTRATE_HOME": str(tmp_path / "home"), **env})


def test_stale_pid_file_is_handled(tmp_path: Path) -> None:
    port = free_port()
    part = RedisPart(scratch_settings(tmp_path, REDIS_URL=f"redis://127.0.0.1:{port}/0"), quiet)
    part.settings.run_dir.mkdir(parents=True)
    part.pid_file.write_text(str(dead_pid()))
    assert part.pid() is None
    assert not part.pid_file.exists()
    assert part.status().running is False

    part.pid_file.write_text(str(dead_pid()))  # as after a crash: start() must not trip on it
    try:
        assert part.start() is True
        new_pid = int(part.pid_file.read_text())
        assert pid_alive(new_pid)
        st = part.status()
        assert st.healthy and st.pid == new_pid and st.version
    finally:
        part.stop()
    assert not part.pid_file.exists() and not pid_alive(new_pid)


def test_concurrent_starts_start_one_process(tmp_path: Path) -> None:
    port = free_port()
    settings = scratch_settings(tmp_path, REDIS_URL=f"redis://127.0.0.1:{port}/0")
    barrier = threading.Barrier(2)
    results: list[bool | BaseException] = []

    def start() -> None:
        part = RedisPart(settings, quiet)
        barrier.wait()
        try:
            results.append(part.start())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    part = RedisPart(settings, quiet)
    try:
        assert sorted(results, key=str) == [False, True]  # one started it, one found it up
        pid = part.pid()
        assert pid is not None and part.status().healthy
        assert (settings.run_dir / "redis.pid").read_text().strip() == str(pid)
    finally:
        part.stop()


def test_port_already_taken_names_port_and_holder(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        settings = scratch_settings(tmp_path, REDIS_URL=f"redis://127.0.0.1:{port}/0")
        with pytest.raises(StackError) as info:
            RedisPart(settings, quiet).start()
    message = info.value.message
    assert f"port {port} is already taken" in message
    assert f"pid={os.getpid()}" in message  # the holder, as `ss` names it
    assert info.value.detail == {"part": "redis", "port": port}
    assert not (settings.run_dir / "redis.pid").exists()


class ScriptPart(Part):
    """A tiny part whose process is a shell script and which is never healthy."""

    name = "scratch"
    start_timeout = 2.0
    script = ""

    def ports(self) -> list[int]:
        return []

    def address(self) -> str:
        return "nowhere"

    def command(self) -> list[str]:
        return ["sh", "-c", self.script]

    def check(self) -> str:
        raise RuntimeError("still warming up")


def test_part_that_never_becomes_healthy_shows_its_log_tail(tmp_path: Path) -> None:
    part = ScriptPart(scratch_settings(tmp_path), quiet)
    part.script = "echo 'scratch: listening soon'; exec sleep 30"
    started = time.monotonic()
    try:
        with pytest.raises(StackError) as info:
            part.start()
        assert time.monotonic() - started < 15
        message = info.value.message
        assert "scratch did not become healthy within 2s (still warming up)" in message
        assert str(part.log_file) in message
        assert "scratch: listening soon" in message  # the tail of its log
    finally:
        part.stop(timeout=5)
    assert not part.pid_file.exists()


def test_part_that_exits_while_starting_shows_its_log_tail(tmp_path: Path) -> None:
    part = ScriptPart(scratch_settings(tmp_path), quiet)
    part.script = "echo 'scratch: bad config line 3' >&2; exit 7"
    with pytest.raises(StackError) as info:
        part.start()
    assert "scratch exited with code 7 while starting" in info.value.message
    assert "scratch: bad config line 3" in info.value.message
    assert not part.pid_file.exists()
