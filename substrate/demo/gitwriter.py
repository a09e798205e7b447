"""Write git history with fixed identities and dates (same input, same commit SHAs).

Used by the demo generator and by tests that need small repositories. Git's user and system
configuration is ignored (see :func:`substrate.connectors.gitsource.run_git`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from substrate.connectors.gitcmd import run_git


def init_repo(dest: Path, remote: str | None = None, branch: str = "main") -> Path:
    """``git init`` at ``dest`` (created if needed), optionally with an ``origin`` remote."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    run_git(dest, "init", "--quiet", f"--initial-branch={branch}")
    run_git(dest, "config", "core.autocrlf", "false")
    if remote:
        run_git(dest, "remote", "add", "origin", remote)
    return dest


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Make the working tree hold exactly ``files`` (``.git`` untouched)."""
    for path in sorted(root.rglob("*"), reverse=True):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_file() and rel not in files:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def identity_env(name: str, email: str, when: str) -> dict[str, str]:
    """Author and committer ``name <email>`` at ``when`` (ISO 8601; ``Z`` allowed)."""
    stamp = when.replace("Z", "+00:00")
    return {
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": stamp,
    }  # fmt: skip


def commit_tree(
    repo: Path,
    files: dict[str, str],
    message: str,
    when: str,
    name: str = "Test Author",
    email: str = "author@example.com",
) -> str:
    """Commit exactly ``files`` as the whole tree; return the new commit's sha."""
    write_tree(Path(repo), files)
    run_git(repo, "add", "--all")
    run_git(repo, "commit", "--quiet", "--no-verify", "--no-gpg-sign", "--allow-empty",
            "-m", message, env=identity_env(name, email, when))  # fmt: skip
    return run_git(repo, "rev-parse", "HEAD").decode().strip()


@dataclass(frozen=True)
class CommitSpec:
    """One commit for :func:`fast_import`: the whole tree after it, who, when, why."""

    files: dict[str, str]
    message: str
    when: str  # ISO 8601
    name: str
    email: str


def _data(text: str) -> bytes:
    """A fast-import ``data`` block (byte count, raw bytes, the optional LF)."""
    raw = text.encode("utf-8")
    return b"data %d\n%s\n" % (len(raw), raw)


def _commit_stream(spec: CommitSpec, previous: dict[str, str], branch: str) -> bytes:
    stamp = int(datetime.fromisoformat(spec.when.replace("Z", "+00:00")).timestamp())
    who = f"{spec.name} <{spec.email}> {stamp} +0000"
    out = [f"commit refs/heads/{branch}\nauthor {who}\ncommitter {who}\n".encode()]
    out.append(_data(spec.message + "\n"))
    out += [f"D {path}\n".encode() for path in sorted(set(previous) - set(spec.files))]
    for path, text in sorted(spec.files.items()):
        if previous.get(path) != text:
            out.append(f"M 100644 inline {path}\n".encode() + _data(text))
    return b"".join(out) + b"\n"


def fast_import(repo: Path, commits: list[CommitSpec], branch: str = "main") -> None:
    """Write all ``commits`` on ``branch`` with one ``git fast-import`` and check it out.

    Produces exactly the commits ``commit_tree`` would (same trees, identities, dates and
    ``message + "\\n"``), in a fraction of the time."""
    stream: list[bytes] = []
    previous: dict[str, str] = {}
    for spec in commits:
        stream.append(_commit_stream(spec, previous, branch))
        previous = spec.files
    run_git(repo, "fast-import", "--quiet", "--done", stdin=b"".join(stream) + b"done\n")
    run_git(repo, "reset", "--quiet", "--hard", branch)
