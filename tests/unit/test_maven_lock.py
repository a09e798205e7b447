"""The jar lock: a jar whose sha256 differs from the lock never reaches the install tree."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from substrate.errors import StackError
from substrate.stack import maven
from substrate.stack.maven import Coord, LockedJar
from substrate.stack.neo4j_server import LOCK_FILE

GOOD = b"PK\x03\x04 pretend this is a jar"


def locked(coords: str, content: bytes, subdir: str = "lib") -> LockedJar:
    return LockedJar(coords, subdir, hashlib.sha256(content).hexdigest(), len(content))


def put_in_cache(m2: Path, jar: LockedJar, content: bytes) -> Path:
    path = jar.coord.repo_path(m2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    path = tmp_path / "artifacts.lock"
    path.write_text('{"jars": []}\n')
    return path


def test_checksum_mismatch_names_the_jar(tmp_path: Path, lock: Path) -> None:
    m2, root = tmp_path / "m2", tmp_path / "neo4j"
    good = locked("org.example:good:jar:1.0", GOOD)
    bad = locked("org.example:evil:jar:2.0", GOOD)
    put_in_cache(m2, good, GOOD)
    src = put_in_cache(m2, bad, GOOD + b" with a trojan")
    with pytest.raises(StackError) as info:
        maven.install([good, bad], m2, root, lock, lambda _m: None)
    message = info.value.message
    assert "sha256 mismatch for org.example:evil:jar:2.0" in message
    assert str(src) in message and "delete the file" in message
    assert info.value.detail == {
        "jar": "org.example:evil:jar:2.0",
        "expected": bad.sha256,
        "actual": maven.sha256_file(src),
    }
    assert not (root / "lib").exists()  # nothing was copied, not even the good jar
    assert not maven.installed([good, bad], root, lock)


def test_verified_jars_are_installed_and_stamped(tmp_path: Path, lock: Path) -> None:
    m2, root = tmp_path / "m2", tmp_path / "neo4j"
    jars = [
        locked("org.example:server:jar:1.0", GOOD),
        locked("org.neo4j.procedure:plugin:jar:5.26.0", GOOD + b"2", "plugins"),
        locked("org.example:native:jar:linux-x86_64:3.1", GOOD + b"3"),
    ]
    for jar, content in zip(jars, (GOOD, GOOD + b"2", GOOD + b"3"), strict=True):
        put_in_cache(m2, jar, content)
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "server-0.9.jar").write_bytes(b"an older version")
    messages: list[str] = []
    maven.install(jars, m2, root, lock, messages.append)
    assert sorted(p.name for p in (root / "lib").glob("*.jar")) == [
        "native-3.1-linux-x86_64.jar", "server-1.0.jar"
    ]  # the stray older jar is gone
    assert (root / "plugins" / "plugin-5.26.0.jar").read_bytes() == GOOD + b"2"
    assert maven.installed(jars, root, lock)
    assert any("installed 3 verified jars" in m for m in messages)

    (root / "lib" / "server-1.0.jar").write_bytes(b"x")  # size changed behind our back
    assert not maven.installed(jars, root, lock)
    lock.write_text('{"jars": [], "changed": true}\n')  # another lock: reinstall needed
    maven.install(jars, m2, root, lock, lambda _m: None)
    assert (root / "lib" / "server-1.0.jar").read_bytes() == GOOD
    assert maven.installed(jars, root, lock)


def test_missing_lock_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="--write-lock"):
        maven.read_lock(tmp_path / "artifacts.lock")


def test_the_project_lock_pins_every_jar() -> None:
    jars = maven.read_lock(LOCK_FILE)
    assert jars
    assert all(len(j.sha256) == 64 and j.size > 0 for j in jars)
    assert {j.dir for j in jars} <= {"lib", "plugins", "plugin-lib"}
    coords = {j.coord.group + ":" + j.coord.artifact for j in jars}
    assert "org.neo4j:neo4j" in coords
    assert "org.neo4j.procedure:apoc-core" in coords


def test_plan_mismatch_is_refused(tmp_path: Path) -> None:
    jars = [locked("org.example:a:jar:1.0", GOOD)]
    maven.check_plan(jars, [(Coord.parse("org.example:a:jar:1.0"), "lib")], tmp_path / "x.lock")
    with pytest.raises(StackError, match="does not match the poms"):
        maven.check_plan(jars, [(Coord.parse("org.example:a:jar:1.1"), "lib")], tmp_path / "x")


def test_coordinates_and_dependency_list_parse() -> None:
    c = Coord.parse("io.netty:netty-transport-native-epoll:jar:linux-x86_64:4.1.118.Final")
    assert c.classifier == "linux-x86_64" and c.version == "4.1.118.Final"
    assert c.file_name == "netty-transport-native-epoll-4.1.118.Final-linux-x86_64.jar"
    assert Coord.parse(c.coords) == c
    with pytest.raises(ValueError):
        Coord.parse("just:two")
    text = (
        "\nThe following files have been resolved:\n"
        "   org.neo4j:neo4j:jar:5.26.0:compile:/m2/org/neo4j/neo4j/5.26.0/neo4j-5.26.0.jar"
        " -- module org.neo4j.server\n"
        "   io.netty:netty-x:jar:linux:4.1:runtime:/m2/io/netty/netty-x-4.1-linux.jar\n"
        "   org.example:pom-only:pom:1.0:compile\n"
    )
    assert maven.parse_dependency_list(text) == [
        Coord("org.neo4j", "neo4j", "5.26.0"),
        Coord("io.netty", "netty-x", "4.1", "linux"),
    ]
