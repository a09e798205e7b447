"""The language a service (or a module) is written in when no README field states it: by the
build file its source folder holds, else by the image its Dockerfile builds from, else by a
sentence of its README.

``go.mod`` is Go, ``Cargo.toml`` Rust, ``pom.xml`` / ``build.gradle(.kts)`` Java (Kotlin when
the folder has ``src/main/kotlin``), ``package.json`` JavaScript (TypeScript beside a
``tsconfig.json``), ``pyproject.toml`` / ``setup.py`` Python, ``*.csproj`` C#, ``Gemfile`` Ruby,
``mix.exs`` Elixir, ``composer.json`` PHP, ``CMakeLists.txt`` C++, ``build.sbt`` Scala,
``Package.swift`` Swift, ``pubspec.yaml`` Dart, ``*.fsproj`` F#; else the Dockerfile's last
stage built ``FROM`` an image of a language (``golang:1.22`` Go, ``maven``/``eclipse-temurin``
/``tomcat`` Java, ``node`` JavaScript, ``python`` Python, ``php``/``composer`` PHP,
``mcr.microsoft.com/dotnet/sdk`` C#): a helper stage first
(``FROM mlocati/php-extension-installer``) or a bare runtime last
(``FROM gcr.io/distroless/static``, ``nginx``) does not hide it; else the README's own
sentence ("It is a C++ based service"), which comes last because a README left from an older
version may still say what the service was once written in. A Dockerfile a Compose service
names (``dockerfile: node.Dockerfile``) speaks for that service first: services built from
one folder differ by it. The build file is cited at its first line with text, a ``FROM`` at
its line.
Only the presence of build files (the language markers among them: ``is_language_marker``),
the Dockerfile and the README are read, as :mod:`layout` and :mod:`dockerfile_env` already do.
A README's ``Language:`` field (``describe``, ``readme_tables``) stays first: this only fills
in what none states.
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
from substrate.connectors.layout import BUILD_FILES
from substrate.connectors.markdown import parse_markdown
from substrate.connectors.readme_tables import prose_language, state_attribute
from substrate.graph.records import NodeRecord

# strongest first: a Django or Spring folder often holds a package.json for its assets too,
# so package.json counts only after the Dockerfile's base image
BUILD_LANGUAGES = (
    ("go.mod", "Go"), ("Cargo.toml", "Rust"), ("pom.xml", "Java"), ("build.gradle", "Java"),
    ("build.gradle.kts", "Java"), ("pyproject.toml", "Python"), ("setup.py", "Python"),
    ("Gemfile", "Ruby"), ("mix.exs", "Elixir"), ("composer.json", "PHP"),
    ("CMakeLists.txt", "C++"), ("build.sbt", "Scala"), ("Package.swift", "Swift"),
    ("pubspec.yaml", "Dart"),
)  # fmt: skip
# project files of .NET languages, found by extension in the folder
PROJECT_LANGUAGES = ((".csproj", "C#"), (".fsproj", "F#"), (".vbproj", "Visual Basic"))
# the first word of a base image's name (its last path part) -> the language built on it
IMAGE_LANGUAGES = {
    "golang": "Go", "rust": "Rust", "maven": "Java", "gradle": "Java", "openjdk": "Java",
    "eclipse-temurin": "Java", "amazoncorretto": "Java", "tomcat": "Java", "jetty": "Java",
    "ibmjava": "Java", "node": "JavaScript", "python": "Python", "ruby": "Ruby", "php": "PHP",
    "elixir": "Elixir", "swift": "Swift", "dart": "Dart", "haskell": "Haskell",
    "composer": "PHP", "erlang": "Erlang", "clojure": "Clojure", "perl": "Perl",
    "julia": "Julia", "bun": "JavaScript", "deno": "TypeScript", "scala-sbt": "Scala",
}  # fmt: skip
# the build files that name a language without making a folder a module (layout.BUILD_FILES)
_MARKER_NAMES = frozenset(n for n, _ in BUILD_LANGUAGES) - set(BUILD_FILES)
_DOTNET = re.compile(r"(?:^|/)dotnet/(?:sdk|aspnet|runtime)\b|(?:^|/)dotnet(?:-sdk)?:", re.I)


# the files that pin a runtime's version, each with the languages it is for and how its text
# states the version: pyenv's ``.python-version``, Heroku/Cloud Foundry's ``runtime.txt``
# (``python-3.10.4``), nvm's ``.nvmrc`` (``v18``), rbenv's ``.ruby-version``, jenv's
# ``.java-version``; asdf's ``.tool-versions`` names its tool on each line
_VERSION = r"v?(\d+(?:\.\d+){0,2})"
VERSION_FILES: dict[str, tuple[tuple[str, ...], re.Pattern[str]]] = {
    ".python-version": (("Python",), re.compile(r"^\s*" + _VERSION, re.M)),
    "runtime.txt": (("Python",), re.compile(r"^\s*python-" + _VERSION, re.M)),
    ".nvmrc": (("JavaScript", "TypeScript"), re.compile(r"^\s*(?:node/)?" + _VERSION, re.M)),
    ".node-version": (("JavaScript", "TypeScript"), re.compile(r"^\s*" + _VERSION, re.M)),
    ".ruby-version": (("Ruby",), re.compile(r"^\s*(?:ruby-)?" + _VERSION, re.M)),
    ".java-version": (("Java", "Kotlin"), re.compile(r"^\s*" + _VERSION, re.M)),
}
_TOOL_VERSIONS = {"python": ("Python",), "nodejs": ("JavaScript", "TypeScript"),
                  "ruby": ("Ruby",), "golang": ("Go",), "elixir": ("Elixir",),
                  "rust": ("Rust",), "php": ("PHP",)}
_TOOL_LINE = re.compile(r"^\s*([a-z]+)\s+" + _VERSION, re.M)
# the version a language image's tag starts with: python:3.10-slim, node:18-alpine, golang:1.22
_TAG_VERSION = re.compile(r"^v?(\d+(?:\.\d+){0,2})")


# the build files that state the language version a project is built for, each with the
# languages it is for and how it says so: Maven's ``<java.version>`` or compiler release,
# Gradle's ``sourceCompatibility``/toolchain, go.mod's ``go`` directive, package.json's
# ``engines.node``, pyproject's ``requires-python``, Pipfile's ``python_version``, Gemfile's
# ``ruby``, composer.json's ``php`` requirement, Cargo's ``rust-version``, a .NET project's
# ``<TargetFramework>``. Maven and Gradle modules inherit from the build above them, and .NET
# projects from a ``Directory.Build.props`` above them, so those are also looked for in parent
# folders.
# a .NET project's target framework (``net9.0``, ``netcoreapp3.1``; the first of several), in
# its project file or a ``Directory.Build.props`` above it; ``*.csproj``: any project file of
# the folder
_TARGET_FRAMEWORK = re.compile(r"<TargetFrameworks?>\s*net(?:coreapp)?(\d+\.\d+)")
_CONSTRAINT = r"([<>=~^!]*\s*v?\d+(?:\.(?:\d+|x|\*)){0,2}(?:\s*,?\s*[<>=!]+\s*\d+(?:\.\d+){0,2})?)"
BUILD_VERSIONS: tuple[tuple[str, tuple[str, ...], re.Pattern[str], bool], ...] = (
    ("pom.xml", ("Java", "Kotlin"), re.compile(
        r"<(?:java\.version|maven\.compiler\.(?:release|target|source)|release)>\s*"
        r"(?:1\.)?(\d+)\s*<", re.I), True),
    ("build.gradle", ("Java", "Kotlin"), re.compile(
        r"(?:sourceCompatibility\s*=\s*['\"]?(?:JavaVersion\.VERSION_)?(?:1[._])?|"
        r"JavaLanguageVersion\.of\(\s*|jvmToolchain\(\s*)(\d+)"), True),
    ("build.gradle.kts", ("Java", "Kotlin"), re.compile(
        r"(?:sourceCompatibility\s*=\s*(?:JavaVersion\.VERSION_)?(?:1_)?|"
        r"JavaLanguageVersion\.of\(\s*|jvmToolchain\(\s*)(\d+)"), True),
    ("go.mod", ("Go",), re.compile(r"^go\s+(\d+\.\d+(?:\.\d+)?)\s*$", re.M), False),
    ("package.json", ("JavaScript", "TypeScript"),
     re.compile(r'"engines"\s*:\s*\{[^}]*?"node"\s*:\s*"\s*' + _CONSTRAINT + r'\s*"'), False),
    ("pyproject.toml", ("Python",),
     re.compile(r"^\s*(?:requires-python|python)\s*=\s*['\"]\s*" + _CONSTRAINT, re.M), False),
    ("Pipfile", ("Python",),
     re.compile(r"^\s*python_(?:full_)?version\s*=\s*['\"](\d+(?:\.\d+){0,2})", re.M), False),
    ("Gemfile", ("Ruby",), re.compile(r"^\s*ruby\s+['\"]\s*" + _CONSTRAINT, re.M), False),
    ("composer.json", ("PHP",),
     re.compile(r'"require"\s*:\s*\{[^}]*?"php"\s*:\s*"\s*' + _CONSTRAINT + r'\s*"'), False),
    ("Cargo.toml", ("Rust",),
     re.compile(r"^\s*rust-version\s*=\s*['\"](\d+(?:\.\d+){0,2})", re.M), False),
    *((f"*{extension}", (language,), _TARGET_FRAMEWORK, False)
      for extension, language in PROJECT_LANGUAGES),
    ("Directory.Build.props", tuple(language for _, language in PROJECT_LANGUAGES),
     _TARGET_FRAMEWORK, True),
)


# what runs a language's code, when it is not named after the language
RUNTIMES = {"JavaScript": "Node.js", "TypeScript": "Node.js", "C#": ".NET", "F#": ".NET",
            "Kotlin": "Java", "Scala": "Java"}


def is_version_file(path: str) -> bool:
    """A file that pins a runtime's version (for the replay's path filter)."""
    name = posixpath.basename(path)
    return name in VERSION_FILES or name in (".tool-versions", "Pipfile")


def is_language_marker(path: str) -> bool:
    """A file whose presence, beside the build files, decides a service's language (for the
    replay's path filter)."""
    name = posixpath.basename(path)
    return name == "tsconfig.json" or name.endswith(tuple(e for e, _ in PROJECT_LANGUAGES)) \
        or name in _MARKER_NAMES or "/src/main/kotlin/" in path \
        or path.startswith("src/main/kotlin/")


@lru_cache(maxsize=4096)
def _froms(text: str) -> tuple[tuple[str, int], ...]:
    """(image, 1-based line) of each of the Dockerfile's ``FROM`` lines, in order."""
    structure = DockerfileParser(fileobj=io.BytesIO(text.encode())).structure
    found = []
    for step in structure:
        if step["instruction"] == "FROM":
            words = [w for w in str(step["value"]).split() if not w.startswith("--")]
            if words:
                found.append((words[0], int(step["startline"]) + 1))
    return tuple(found)


def image_language(image: str) -> str | None:
    """The language a base image is for (``golang:1.22-alpine`` -> Go)."""
    if _DOTNET.search(image):
        return "C#"
    name = image.split("@")[0].rsplit("/", 1)[-1].split(":")[0].lower()
    return IMAGE_LANGUAGES.get(name)


def dockerfile_language(snap: GitSnapshot, path: str) -> tuple[str, str, int] | None:
    """(language, path, line) of the Dockerfile's last ``FROM`` an image of a language, None
    if none is (a Go build stage before a distroless runtime is Go; a Node assets stage before a
    Python runtime is Python)."""
    if not snap.exists(path):
        return None
    for image, line in reversed(_froms(snap.read(path))):
        built = image_language(image)
        if built is not None:
            return built, path, line
    return None


def first_line(snap: GitSnapshot, path: str) -> int:
    """The file's first line with text (a build file's blank first line says nothing)."""
    for no, line in enumerate(snap.read(path).splitlines()[:200], start=1):
        if line.strip():
            return no
    return 1


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
            return language, at(name), first_line(snap, at(name))
    for extension, language in PROJECT_LANGUAGES:
        projects = [p for p in snap.in_folder(base) if p.endswith(extension)]
        if projects:
            return language, projects[0], first_line(snap, projects[0])
    built = dockerfile_language(snap, dockerfile_path(base))
    if built is not None:
        return built
    if snap.exists(at("package.json")):
        return ("TypeScript" if snap.exists(at("tsconfig.json")) else "JavaScript",
                at("package.json"), first_line(snap, at("package.json")))
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
        found = (dockerfile_language(snap, own) if own else None) \
            or folder_language(snap, folder) or readme_language(snap, folder)
        if found is not None:
            language, path, line = found
            state_attribute(entity, "language", language, snap.ref(path, line))


def root_built(index: NameIndex, dirs: dict[str, str]) -> dict[str, str]:
    """``ceid -> ""`` for each service with no folder of its own that is built from the
    repository's root: a Compose ``build: .`` at the root, or a Cloud Foundry manifest at the
    root (``cf push`` sends the manifest's folder). Its language and version are the root's."""
    out: dict[str, str] = {}
    for entity in index.sorted_entities():
        if entity.label != "Service" or entity.ceid in dirs:
            continue
        manifests = [str(m) for m in entity.props.get("manifests") or []]
        ways = set(entity.props.get("deployed_by") or [])
        if entity.props.get("build_context") == "" or (
                ways == {"cloudfoundry"} and manifests and all("/" not in m for m in manifests)):
            out[entity.ceid] = ""
    return out


def infer_versions(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]) -> None:
    """Sets ``language_version`` ("Python 3.10", "Node.js 20") on each service of ``dirs`` with
    a language: from a version file in its folder (``dirs`` gives "" for a service built from
    the root), else from the tag of its Dockerfile's ``FROM`` an image of that language."""
    for cid, folder in sorted(dirs.items()):
        if cid not in index:
            continue
        entity = index.get(cid)
        language = str(entity.props.get("language") or "")
        if entity.label != "Service" or not language or entity.props.get("language_version"):
            continue
        own = str(entity.props.get("build_dockerfile") or "")
        found = file_version(snap, folder, language) \
            or dockerfile_version(snap, own or dockerfile_path(folder.strip("/")), language) \
            or build_version(snap, folder, language)
        if found is not None:
            version, path, line = found
            runtime = RUNTIMES.get(language, language)
            state_attribute(entity, "language_version", f"{runtime} {version}",
                            snap.ref(path, line))


def file_version(snap: GitSnapshot, folder: str, language: str) -> tuple[str, str, int] | None:
    """(version, file, line) of the first version file in ``folder`` stating ``language``'s."""
    base = folder.strip("/")
    files = [*VERSION_FILES.items(), (".tool-versions", ((), _TOOL_LINE))]
    for name, (languages, pattern) in files:
        path = posixpath.join(base, name) if base else name
        if (languages and language not in languages) or not snap.exists(path):
            continue
        text = snap.read(path)
        for match in pattern.finditer(text):
            if name == ".tool-versions" \
                    and language not in _TOOL_VERSIONS.get(match.group(1), ()):
                continue
            return match.group(match.lastindex or 1), path, text.count("\n", 0, match.start()) + 1
    return None


def build_version(snap: GitSnapshot, folder: str, language: str
                  ) -> tuple[str, str, int] | None:
    """(version, file, line) from the first build file of ``folder`` that states the version
    of ``language`` it is built for (:data:`BUILD_VERSIONS`); a Maven or Gradle module's (a
    .NET project's ``Directory.Build.props``) from the nearest parent folder's build when its
    own says none."""
    base = folder.strip("/")
    for name, languages, pattern, inherited in BUILD_VERSIONS:
        if language not in languages:
            continue
        parts = base.split("/") if base else []
        folders = [base] + (["/".join(parts[:i]) for i in range(len(parts) - 1, -1, -1)]
                            if inherited else [])
        for where in folders:
            for path in _build_paths(snap, where, name):
                text = snap.read(path)
                match = pattern.search(text)
                if match is not None:
                    version = " ".join(match.group(1).split())
                    return version, path, text.count("\n", 0, match.start(1)) + 1
    return None


def _build_paths(snap: GitSnapshot, folder: str, name: str) -> list[str]:
    """The build files ``name`` of ``folder`` that exist: ``*.csproj`` is every file of the
    folder with that extension."""
    if name.startswith("*"):
        return [p for p in snap.in_folder(folder) if p.endswith(name[1:])]
    path = posixpath.join(folder, name) if folder else name
    return [path] if snap.exists(path) else []


def matches_build_name(pattern: str, name: str) -> bool:
    """A file called ``name`` is the build file ``pattern`` of :data:`BUILD_VERSIONS`."""
    return name.endswith(pattern[1:]) if pattern.startswith("*") else name == pattern


def dockerfile_version(snap: GitSnapshot, path: str, language: str
                       ) -> tuple[str, str, int] | None:
    """(version, path, line) from the tag of the Dockerfile's last ``FROM`` an image of
    ``language`` (``FROM python:3.10-slim`` -> 3.10); None without a numbered tag."""
    if not path or not snap.exists(path):
        return None
    for image, line in reversed(_froms(snap.read(path))):
        built = image_language(image)
        if built is None or (built != language and {built, language} != {"JavaScript",
                                                                          "TypeScript"}):
            continue
        name = image.split("@")[0].rsplit("/", 1)[-1]
        tag = name.split(":", 1)[1] if ":" in name else ""
        found = _TAG_VERSION.match(tag)
        return (found.group(1), path, line) if found else None
    return None


def readme_language(snap: GitSnapshot, folder: str) -> tuple[str, str, int] | None:
    """(language, README, line) of the folder README's sentence saying what it is written in
    ("It is a C++ based service"), when no build file or Dockerfile says it."""
    path = posixpath.join(folder.strip("/"), "README.md") if folder.strip("/") else "README.md"
    if not snap.exists(path):
        return None
    stated = prose_language(parse_markdown(snap.read(path)).body)
    return (stated[0], path, stated[1]) if stated is not None else None


def describe_module_languages(snap: GitSnapshot, modules: list[NodeRecord]) -> None:
    """Sets ``language`` on each module (a folder with a build file that no service claims,
    :mod:`ownership_paths`) from its build files, Dockerfile or README, as for a service."""
    for node in modules:
        folder = str(node.props.get("path") or "").strip("/")
        if node.label != "Module" or not folder or node.props.get("language"):
            continue
        found = folder_language(snap, folder) or readme_language(snap, folder)
        if found is not None:
            language, path, line = found
            state_attribute(node, "language", language, snap.ref(path, line))
