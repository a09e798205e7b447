"""``substrate doctor`` on the real stack: healthy, then the broken set-ups the tests make —
a wrong password in a copy's secrets, a pending migration and an applied migration changed on
disk in a copy of the migrations, a port taken by another listener, a missing model file, an
EMBEDDING_DIM other than the vector indexes', an embedding model other than the one the vector
indexes were built with — each found, with its fix."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from substrate.doctor.checks import Finding, run_doctor
from substrate.migrate import MIGRATIONS_DIR, discover
from substrate.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.integration
SHARED = ("run", "cache", "data", "logs", "neo4j", "models")


def home_copy(stack: Settings, home: Path, *, share: tuple[str, ...] = SHARED) -> Path:
    """A state directory using the stack's processes and data, with its own secrets."""
    home.mkdir()
    for name in share:
        if (stack.home / name).exists():
            (home / name).symlink_to(stack.home / name)
    shutil.copytree(stack.secrets_dir, home / "secrets")
    return home


def settings_for(stack: Settings, **env: str) -> Settings:
    return Settings.from_env({**stack.env, **env})


def problems(findings: list[Finding], area: str) -> list[Finding]:
    return [f for f in findings if f.area == area and not f.ok]


@pytest.fixture
def listener() -> Iterator[int]:
    """Another process's listener, as far as the stack is concerned: a bare TCP socket."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


def test_a_healthy_stack_has_no_problems(stack: Settings) -> None:
    findings = run_doctor(stack)
    assert [f for f in findings if not f.ok] == []
    assert {f.area for f in findings} == {"ports", "versions", "credentials", "migrations",
                                          "indexes", "embeddings"}


def test_a_wrong_password_in_the_secrets_file(stack: Settings, tmp_path: Path) -> None:
    home = home_copy(stack, tmp_path / "home")
    (home / "secrets" / "redis_password").write_text("not-the-password\n")
    findings = run_doctor(settings_for(stack, SUBSTRATE_HOME=str(home)))
    found = problems(findings, "credentials")
    assert [f.subject for f in found] == ["redis"], findings
    assert "refused" in found[0].detail
    assert "redis_password" in found[0].fix
    assert not problems(findings, "ports")  # the process is the stack's own, just refusing


def test_a_pending_migration(stack: Settings, tmp_path: Path) -> None:
    root = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, root)
    version = discover("postgres")[-1].version + 1
    (root / "postgres" / f"V{version:04d}__Doctor_probe.sql").write_text("SELECT 1;\n")
    findings = run_doctor(stack, migrations_root=root)
    found = problems(findings, "migrations")
    assert [f.subject for f in found] == ["postgres"], findings
    assert f"V{version:04d}__Doctor_probe.sql" in found[0].detail
    assert found[0].fix == "substrate migrate up --target postgres"


def test_an_applied_migration_changed_on_disk(stack: Settings, tmp_path: Path) -> None:
    root = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, root)
    applied = discover("neo4j")[0].path.name
    changed = root / "neo4j" / applied
    changed.write_text(changed.read_text() + "\n// edited after it was applied\n")
    findings = run_doctor(stack, migrations_root=root)
    found = problems(findings, "migrations")
    assert [f.subject for f in found] == ["neo4j"], findings
    assert f"applied file(s) changed on disk: {applied}" in found[0].detail
    assert "restore the applied files" in found[0].fix and "new migration" in found[0].fix


def test_vector_indexes_of_other_dimensions_than_embedding_dim(stack: Settings) -> None:
    findings = run_doctor(settings_for(stack, EMBEDDING_DIM="768"))
    found = problems(findings, "indexes")
    assert {f.subject for f in found} == {"entity_embedding", "chunk_embedding"}, findings
    assert all("384 dimensions, EMBEDDING_DIM is 768" in f.detail for f in found)
    assert all("migration recreating the vector indexes" in f.fix and "reembed" in f.fix
               for f in found)
    assert not problems(findings, "embeddings")  # the local model is still the one stored


def test_a_port_taken_by_another_listener(stack: Settings, listener: int) -> None:
    findings = run_doctor(settings_for(stack, GATEWAY_PORT=str(listener)))
    found = problems(findings, "ports")
    assert [f.subject for f in found] == [f"gateway:{listener}"], findings
    assert "taken by another listener" in found[0].detail
    assert f"pid={os.getpid()}" in found[0].detail  # names the process that holds it
    assert "GATEWAY_PORT" in found[0].fix


def test_the_cli_reports_a_taken_port_as_json_with_exit_3(stack: Settings,
                                                          listener: int) -> None:
    env = {**stack.env, "GATEWAY_PORT": str(listener)}
    run = subprocess.run([sys.executable, "-m", "substrate.cli", "doctor", "--json"], env=env,
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is False
    bad = [f for f in report["findings"] if not f["ok"]]
    assert [f["subject"] for f in bad] == [f"gateway:{listener}"]


def test_a_missing_model_file(stack: Settings, tmp_path: Path) -> None:
    home = home_copy(stack, tmp_path / "home", share=tuple(n for n in SHARED if n != "models"))
    source = next((stack.home / "models").iterdir())
    target = home / "models" / source.name
    target.mkdir(parents=True)
    for f in source.iterdir():
        if f.name != "tokenizer.json":
            (target / f.name).symlink_to(f)
    findings = run_doctor(settings_for(stack, SUBSTRATE_HOME=str(home)))
    found = problems(findings, "embeddings")
    assert [f.subject for f in found] == ["local model"], findings
    assert "tokenizer.json is missing" in found[0].detail
    assert "substrate.local_model" in found[0].fix


def test_an_embedding_model_other_than_the_indexes_were_built_with(stack: Settings) -> None:
    other = settings_for(stack, EMBEDDING_URL="http://127.0.0.1:9/v1", EMBEDDING_MODEL="bge-m3",
                         EMBEDDING_DIM="384")
    findings = run_doctor(other)
    found = problems(findings, "embeddings")
    assert {f.subject for f in found} == {"entity_embedding", "chunk_embedding"}, findings
    assert all("openai:bge-m3:384" in f.detail and "reembed" in f.fix for f in found)
