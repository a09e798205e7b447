"""The language a service is written in when no README states it: by the build file its
source folder holds, else by the image its Dockerfile builds from.

``go.mod`` is Go, ``Cargo.toml`` Rust, ``pom.xml`` / ``build.gradle(.kts)`` Java (Kotlin when
the folder has ``src/main/kotlin``), ``package.json`` JavaScript (TypeScript beside a
``tsconfig.json``), ``pyproject.toml`` / ``setup.py`` Python, ``*.csproj`` C#, ``Gemfile`` Ruby,
``mix.exs`` Elixir; a Dockerfile's first ``FROM golang:1.22`` is Go, ``maven``/``eclipse-temurin``
/``tomcat`` Java, ``node`` JavaScript, ``python`` Python, ``mcr.microsoft.com/dotnet/sdk`` C#.
A Dockerfile a Compose service names (``dockerfile: node.Dockerfile``) speaks for that service
first: services built from one folder differ by it. The build file is cited at its first
line, a ``FROM`` at its line. Only the presence of build
files and the Dockerfile are read, as :mod:`layout` and :mod:`dockerfile_env` already do, so
the replay's path filter needs nothing new. A README's statement (``describe``,
``readme_tables``) stays first: this only fills in what none states.
"""

from __future__ import annotations

import io
import posixpath
import re
from functools import lru_cache

from dockerfile_parse import DockerfileParser

from substrate.connectors.aliases import NameIndex
from substrate.connectors.dockerfile_env import dockerfile_path
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.readme_tables import state_attribute

# strongest first: a Django or Spring folder often holds a package.json for its assets too,
# so package.json counts only after the Dockerfile's base image
BUILD_LANGUAGES = (
    ("go.mod", "Go"), ("Cargo.toml", "Rust"), ("pom.xml", "Java"), ("build.gradle", "Java"),
    ("build.gradle.kts", "Java"), ("pyproject.toml", "Python"), ("setup.py", "Python"),
    ("Gemfile", "Ruby"), ("mix.exs", "Elixir"),
)  # fmt: skip
# the first word of a base image's name (its last path part) -> the language built on it
IMAGE_LANGUAGES = {
    "golang": "Go", "rust": "Rust", "maven": "Java", "gradle": "Java", "openjdk": "Java",
    "eclipse-temurin": "Java", "amazoncorretto": "Java", "tomcat": "Java", "jetty": "Java",
    "ibmjava": "Java", "node": "JavaScript", "python": "Python", "ruby": "Ruby", "php": "PHP",
    "elixir": "Elixir", "swift": "Swift", "dart": "Dart", "haskell": "Haskell",
}  # fmt: skip
_DOTNET = re.compile(r"(?:^|/)dotnet/(?:sdk|aspnet|runtime)\b|(?:^|/)dotnet(?:-sdk)?:", re.I)


def is_language_marker(path: str) -> bool:
    """A file whose presence, beside the build files, decides a service's language (for the
    replay's path filter)."""
    name = posixpath.basename(path)
    return name == "tsconfig.json" or name.endswith(".csproj") or "/src/main/kotlin/" in path \
        or path.startswith("src/main/kotlin/")


@lru_cache(maxsize=4096)
def _first_from(text: str) -> tuple[str, int] | None:
    """(image, 1-based line) of the Dockerfile's first ``FROM`` (the build stage)."""
    structure = DockerfileParser(fileobj=io.BytesIO(text.encode())).structure
    for step in structure:
        if step["instruction"] == "FROM":
            words = [w for w in str(step["value"]).split() if not w.startswith("--")]
            if words:
                return words[0], int(step["startline"]) + 1
    return None


def image_language(image: str) -> str | None:
    """The language a base image is for (``golang:1.22-alpine`` -> Go)."""
    if _DOTNET.search(image):
        return "C#"
    name = image.split("@")[0].rsplit("/", 1)[-1].split(":")[0].lower()
    return IMAGE_LANGUAGES.get(name)


def dockerfile_language(snap: GitSnapshot, path: str) -> tuple[str, str, int] | None:
    """(language, path, line) the Dockerfile's first ``FROM`` states, None if none."""
    if not snap.exists(path):
        return None
    found = _first_from(snap.read(path))
    built = image_language(found[0]) if found else None
    return (built, path, found[1]) if found and built else None


def folder_language(snap: GitSnapshot, folder: str) -> tuple[str, str, int] | None:
    """(language, file, line) the folder's build files or Dockerfile state, None if none."""
    base = folder.strip("/")

    def at(name: str) -> str:
        return posixpath.join(base, name) if base else name

    for name, language in BUILD_LANGUAGES:
        if snap.exists(at(name)):
            if language == "Java" and any(p.startswith(at("src/main/kotlin/"))
                                          for p in snap.files()):
                language = "Kotlin"
            return language, at(name), 1
    csproj = sorted(p for p in snap.files()
                    if posixpath.dirname(p) == base and p.endswith(".csproj"))
    if csproj:
        return "C#", csproj[0], 1
    built = dockerfile_language(snap, dockerfile_path(base))
    if built is not None:
        return built
    if snap.exists(at("package.json")):
        return ("TypeScript" if snap.exists(at("tsconfig.json")) else "JavaScript",
                at("package.json"), 1)
    return None


def infer_languages(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]) -> None:
    """Sets ``language`` on each service of ``dirs`` that no README described so."""
    for cid, folder in sorted(dirs.items()):
        if cid not in index:
            continue
        entity = index.get(cid)
        if entity.label != "Service" or entity.props.get("language"):
            continue
        own = str(entity.props.get("build_dockerfile") or "")  # Compose's dockerfile:
        found = (dockerfile_language(snap, own) if own else None) or folder_language(snap, folder)
        if found is not None:
            language, path, line = found
            state_attribute(entity, "language", language, snap.ref(path, line))
