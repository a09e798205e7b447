"""Jars from Maven Central, pinned by sha256 in a lock file and copied into an install tree.

Maven only resolves and downloads (``dependency:list`` into a private local repository); this
module owns the lock, checks every jar against it and copies the verified jars into place, so
an unverified jar never reaches a classpath. When the local repository already holds every
locked jar, Maven is not run at all (no network).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from substrate.errors import StackError

Progress = Callable[[str], None]

_DOWNLOADED = re.compile(r"Downloaded from \S+: (\S+\.jar) \(([^)]*)\)")


@dataclass(frozen=True)
class Coord:
    """One resolved jar: ``group:artifact:jar[:classifier]:version``."""

    group: str
    artifact: str
    version: str
    classifier: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity without the version (what Maven mediates on)."""
        return (self.group, self.artifact, self.classifier)

    @property
    def coords(self) -> str:
        cls = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.artifact}:jar{cls}:{self.version}"

    @property
    def file_name(self) -> str:
        cls = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{cls}.jar"

    def repo_path(self, m2: Path) -> Path:
        return m2.joinpath(*self.group.split("."), self.artifact, self.version, self.file_name)

    @classmethod
    def parse(cls, coords: str) -> Coord:
        parts = coords.split(":")
        if len(parts) == 5:
            return cls(parts[0], parts[1], parts[4], parts[3])
        if len(parts) == 4:
            return cls(parts[0], parts[1], parts[3])
        raise ValueError(f"bad coordinates {coords!r}")


@dataclass(frozen=True)
class LockedJar:
    coords: str
    dir: str  # sub-directory of the install root (lib, plugins, ...)
    sha256: str
    size: int

    @property
    def coord(self) -> Coord:
        return Coord.parse(self.coords)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mvn_binary() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError(
            "Maven (mvn) is needed to download the Neo4j jars once; "
            "install it with `apt-get install -y maven` (the jars are then cached)"
        )
    return mvn


def resolve(pom: Path, m2: Path, progress: Progress, *, offline: bool = False) -> list[Coord]:
    """Run ``mvn dependency:list`` for ``pom`` (downloading into ``m2``) and return its jars."""
    m2.mkdir(parents=True, exist_ok=True)
    out_file = m2.parent / f".{pom.stem}.deps.txt"
    out_file.unlink(missing_ok=True)
    cmd = [
        mvn_binary(), "-B", "-C", f"-Dmaven.repo.local={m2}", "-f", str(pom),
        "dependency:list", "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true",
        f"-DoutputFile={out_file}",
    ]
    if offline:
        cmd.insert(1, "-o")
    progress(f"[maven] resolving {pom.name}{' (offline)' if offline else ''}")
    lines: list[str] = []
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        match = _DOWNLOADED.search(line)
        if match:
            progress(f"[maven]   fetched {match.group(1).rsplit('/', 1)[-1]} ({match.group(2)})")
    if proc.wait() != 0 or not out_file.exists():
        tail = "\n".join(lines[-25:])
        raise StackError(f"mvn failed for {pom} (exit {proc.returncode}):\n{tail}")
    return parse_dependency_list(out_file.read_text())


def parse_dependency_list(text: str) -> list[Coord]:
    """Parse ``dependency:list`` output lines ``g:a:jar[:cls]:v:scope:/path.jar -- module x``."""
    result: list[Coord] = []
    for raw in text.splitlines():
        line = raw.strip().split(" -- ", 1)[0]
        if not line.endswith(".jar") or ":" not in line:
            continue
        parts = line.split(":")
        head = parts[:-1]  # last part is the absolute file name
        if len(head) == 6:
            group, artifact, _, classifier, version, _scope = head
        elif len(head) == 5:
            group, artifact, _, version, _scope = head
            classifier = ""
        else:
            raise StackError(f"cannot parse Maven dependency line {raw!r}")
        result.append(Coord(group, artifact, version, classifier))
    return result


# --- the lock file ----------------------------------------------------------------------
def read_lock(path: Path) -> list[LockedJar]:
    if not path.exists():
        raise StackError(
            f"{path} is missing; create it with `python -m substrate.stack.neo4j_server "
            f"--write-lock`"
        )
    data = json.loads(path.read_text())
    return [LockedJar(**entry) for entry in data["jars"]]


def write_lock(
    path: Path, planned: Iterable[tuple[Coord, str]], m2: Path, header: dict[str, Any]
) -> list[LockedJar]:
    jars: list[LockedJar] = []
    for coord, subdir in sorted(planned, key=lambda p: (p[1], p[0].coords)):
        file = coord.repo_path(m2)
        jars.append(LockedJar(coord.coords, subdir, sha256_file(file), file.stat().st_size))
    names = [(j.dir, j.coord.file_name) for j in jars]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise StackError(f"two locked jars would share a file name: {sorted(dupes)}")
    doc = {**header, "jars": [asdict(j) for j in jars]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return jars


def missing_in_cache(jars: Iterable[LockedJar], m2: Path) -> list[LockedJar]:
    return [j for j in jars if not j.coord.repo_path(m2).is_file()]


def check_plan(jars: list[LockedJar], planned: Iterable[tuple[Coord, str]], lock: Path) -> None:
    """The poms must resolve to exactly the locked set of jars (same coordinates and dirs)."""
    want = {(j.coords, j.dir) for j in jars}
    got = {(c.coords, d) for c, d in planned}
    if want != got:
        extra = sorted(got - want)[:8]
        gone = sorted(want - got)[:8]
        raise StackError(
            f"{lock} does not match the poms (resolved but not locked: {extra}; locked but not "
            f"resolved: {gone}); regenerate it with `python -m substrate.stack.neo4j_server "
            f"--write-lock`"
        )


# --- install ----------------------------------------------------------------------------
def _stamp_value(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def installed(jars: list[LockedJar], root: Path, lock: Path) -> bool:
    """Cheap warm-start check: same lock as the last verified install, same files and sizes."""
    stamp = root / ".installed-lock"
    if not stamp.exists() or stamp.read_text().strip() != _stamp_value(lock):
        return False
    wanted = {(j.dir, j.coord.file_name): j.size for j in jars}
    for subdir in {j.dir for j in jars}:
        present = {p.name for p in (root / subdir).glob("*.jar")}
        if present != {name for d, name in wanted if d == subdir}:
            return False
    return all((root / d / n).stat().st_size == size for (d, n), size in wanted.items())


def install(jars: list[LockedJar], m2: Path, root: Path, lock: Path, progress: Progress) -> None:
    """Verify every cached jar against the lock, then copy it to ``root/<dir>/<file>``."""
    stamp = root / ".installed-lock"
    stamp.unlink(missing_ok=True)
    for jar in jars:
        src = jar.coord.repo_path(m2)
        actual = sha256_file(src)
        if actual != jar.sha256:
            raise StackError(
                f"sha256 mismatch for {jar.coords} ({src}): expected {jar.sha256}, got {actual}; "
                f"delete the file to download it again, or regenerate {lock.name} if the "
                f"change is intended",
                {"jar": jar.coords, "expected": jar.sha256, "actual": actual},
            )
    wanted: dict[str, set[str]] = {}
    for jar in jars:
        wanted.setdefault(jar.dir, set()).add(jar.coord.file_name)
    for subdir, names in wanted.items():
        target = root / subdir
        target.mkdir(parents=True, exist_ok=True)
        for stray in target.glob("*.jar"):
            if stray.name not in names:
                stray.unlink()  # e.g. an older version after an upgrade
    for jar in jars:
        src = jar.coord.repo_path(m2)
        dst = root / jar.dir / jar.coord.file_name
        if dst.exists() and dst.stat().st_size == jar.size and sha256_file(dst) == jar.sha256:
            continue
        tmp = dst.with_suffix(".tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    stamp.write_text(_stamp_value(lock) + "\n")
    total = sum(j.size for j in jars) / 1e6
    progress(f"[maven] installed {len(jars)} verified jars ({total:.0f} MB) into {root}")
