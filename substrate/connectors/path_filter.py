"""Skip, in a history replay, the commits that change nothing the connectors read.

Each connector declares the paths it reads (:data:`READERS`, built from the connectors' own
selection functions where they have one, so the filter and the parser cannot drift apart).
One ``git log --first-parent --name-status`` lists the paths every commit changes (against
its first parent; ``--no-renames`` so a rename shows both names) and how (added, deleted,
modified); a commit none of whose changes (nor of the commits skipped since the last one
replayed, when only every n-th is replayed) any connector reads yields exactly the batch of
the commit replayed before it, so parsing it would only produce an empty diff: it is not
parsed. A reader that uses only the *presence* of its files (build files, which place source
folders; see :mod:`layout`) reads additions and deletions, not modifications.

Why the batch is unchanged: ``batch_at`` depends on the list of files only through these
predicates (a file added or removed outside them is never selected), on the contents of the
files they select (except those only counted present), and on ``git blame`` of those files,
which a commit that leaves a file untouched does not change.

A reader of many files of which few matter (source code, which only names peers now and then:
:mod:`source_calls`) also says which *texts* it takes (``content``): a change of one of its
files counts only when the file's text before or after the commit passes that test (the
reader takes nothing from a text that does not, so such a change leaves its output as it
was). :func:`content_hits` reads those texts once for the whole history.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from substrate.connectors.adr import is_adr_path
from substrate.connectors.app_config import is_app_config_path
from substrate.connectors.aspire import is_apphost_path
from substrate.connectors.backstage import is_catalog_path
from substrate.connectors.cloudfoundry import is_cloudfoundry_path
from substrate.connectors.codeowners import LOCATIONS
from substrate.connectors.compose import is_compose_file
from substrate.connectors.data_clients import build_facts, is_fact_build_file
from substrate.connectors.designdocs import is_design_path
from substrate.connectors.dockerfile_env import is_dockerfile_path
from substrate.connectors.envfiles import is_env_file
from substrate.connectors.gitcmd import read_blobs, run_git
from substrate.connectors.gitrepo import SERVICE_ROOTS
from substrate.connectors.helm_charts import is_chart_path
from substrate.connectors.k8s import _SKIP_DIRS as K8S_SKIP_DIRS
from substrate.connectors.languages import is_language_marker, is_version_file
from substrate.connectors.layout import is_build_path, is_readme_path
from substrate.connectors.messages import may_name_messages
from substrate.connectors.mounts import may_be_mounted
from substrate.connectors.owners_files import is_owners_path
from substrate.connectors.ownership_paths import is_package_marker
from substrate.connectors.postmortem import is_postmortem_path
from substrate.connectors.readme_tables import TABLE_FILES, is_table_path
from substrate.connectors.source_calls import is_source_path, may_name_peers
from substrate.connectors.terraform import is_terraform_path
from substrate.connectors.tree_walk import raw_blob_changes

_RECORD = "\x1e"


@dataclass(frozen=True)
class Reader:
    """A connector and the predicate over repository paths of the files it reads."""

    name: str
    reads: Callable[[str], bool]
    patterns: str  # the same, for people
    presence_only: bool = False  # only additions and deletions of its files matter
    # a change counts only when the file's text before or after it passes this test (given
    # the blob's id and its text)
    content: Callable[[str, str], bool] | None = None
    # or: a change counts only when what the reader takes from the text (its digest: the
    # facts with their lines) differs before and after it (an added or deleted file: when
    # its text gives any); given the file's name and its text
    digest: Callable[[str, str], Hashable] | None = None

    @property
    def checks_text(self) -> bool:
        return self.content is not None or self.digest is not None


def _service_folder(path: str) -> bool:
    parts = path.split("/")
    return len(parts) >= 3 and parts[0] in SERVICE_ROOTS


def _compose(path: str) -> bool:
    return is_compose_file(posixpath.basename(path))


def _k8s(path: str) -> bool:
    return path.endswith((".yaml", ".yml")) and not path.startswith(K8S_SKIP_DIRS)


READERS: tuple[Reader, ...] = (
    Reader("services", _service_folder, "services/<name>/**, apps/<name>/**"),
    Reader("compose", _compose, "**/compose.y(a)ml, **/docker-compose*.y(a)ml"),
    Reader("envfiles", is_env_file, "**/.env*, **/*.env"),
    Reader("compose mounts", may_be_mounted,
           "**/*.y(a)ml, *.conf, *.toml, *.ini, *.properties, *.cfg, *.hcl outside .github/"),
    Reader("k8s", _k8s, "**/*.yaml, **/*.yml outside .github/ and docs/"),
    Reader("helm charts", is_chart_path, "**/Chart.yaml, **/values*.yaml, **/templates/*.y(a)ml,"
           " **/*.tpl, and configuration files under a folder named chart(s), helm or "
           "helm-chart(s)"),
    Reader("cloudfoundry", is_cloudfoundry_path, "**/manifest.y(a)ml, **/manifest-*.y(a)ml, "
           "**/*-manifest.y(a)ml and their vars files: **/*.y(a)ml outside .github/"),
    Reader("terraform", is_terraform_path, "**/*.tf"),
    Reader("aspire", is_apphost_path, "**/*AppHost/*.cs (a .NET Aspire app host)"),
    Reader("codeowners", lambda p: p in LOCATIONS, ", ".join(LOCATIONS)),
    Reader("owners", is_owners_path, "**/OWNERS, OWNERS_ALIASES, **/owners.y(a)ml, ..."),
    Reader("catalog", is_catalog_path, "**/catalog-info*.y(a)ml, **/*.backstage.y(a)ml"),
    Reader("build files", is_build_path, "**/Dockerfile*, pom.xml, package.json, go.mod, ...",
           presence_only=True),
    Reader("dockerfile env", is_dockerfile_path, "**/Dockerfile (its ENV defaults)"),
    Reader("languages", is_language_marker, "**/tsconfig.json, **/*.csproj, **/src/main/kotlin/"
           " (a service's language, connectors/languages.py)", presence_only=True),
    Reader("runtime versions", is_version_file, "**/.python-version, runtime.txt, .nvmrc, "
           ".node-version, .ruby-version, .java-version, .tool-versions"),
    Reader("build file contents", is_fact_build_file, "**/pom.xml, build.gradle(.kts), go.mod, "
           "package.json, pyproject.toml, Pipfile, requirements.txt, Gemfile, composer.json, "
           "Cargo.toml where the datastore clients or the language version it declares, or "
           "their lines, change", digest=build_facts),
    Reader("python packages", is_package_marker, "**/__init__.py"),
    Reader("readme", is_readme_path, "<folder>/**/README.md"),
    Reader("readme tables", is_table_path, ", ".join(TABLE_FILES) + ", [docs/]services.md, "
           "[docs/]service_table.md, ..."),
    Reader("app config", is_app_config_path,
           "**/src/main/resources/application*.y(a)ml|properties, bootstrap*"),
    Reader("adr", is_adr_path, "docs/adr/*.md and the other ADR folders"),
    Reader("postmortem", is_postmortem_path, "**/postmortems/*.md, **/incidents/*.md, ..."),
    Reader("designdocs", is_design_path, "docs/design/**, docs/rfcs/**, design/**, ..."),
    Reader("source code", is_source_path, "**/*.py, *.go, *.java, *.js, *.ts, *.cs, ... (not "
           "tests) whose text names a peer's address or a Feign client",
           content=may_name_peers),
    Reader("messages", is_source_path, "**/*.py, *.go, *.java, *.kt, *.cs, *.js, ... (not "
           "tests) whose text publishes or consumes a topic, queue or integration event, or "
           "defines a constant that may name one", content=may_name_messages),
)


Change = tuple[str, str]  # (git status letter A|D|M|T..., path)


def is_read(path: str, readers: Sequence[Reader] = READERS) -> bool:
    """Does any connector read ``path``?"""
    return any(r.reads(path) for r in readers)


def is_relevant(change: Change, readers: Sequence[Reader] = READERS,
                hits: frozenset[str] | None = None) -> bool:
    """Does a change (a status and a path) matter to some connector? ``hits``: the paths of
    the commit whose texts pass their reader's ``content`` test (None: not checked, each
    such change counts)."""
    status, path = change
    return any(r.reads(path) and (status in "AD" or not r.presence_only)
               and (not r.checks_text or hits is None or path in hits) for r in readers)


def content_hits(repo: Path | str, rev: str = "HEAD", readers: Sequence[Reader] = READERS,
                 raw: dict[str, tuple[tuple[str, str, str], ...]] | None = None,
                 ) -> dict[str, frozenset[str]]:
    """``sha -> the paths it changes`` whose text, before or after the commit, passes the
    ``content`` test of a reader that reads them (first-parent history of ``rev``; one
    ``git log`` unless ``raw`` gives :func:`raw_blob_changes` of it, and one ``git cat-file
    --batch`` for all those texts)."""
    checked = [r for r in readers if r.checks_text]
    if not checked:
        return {}
    wanted: dict[str, list[tuple[str, tuple[str, ...], list[Reader]]]] = {}
    for sha, found in (raw if raw is not None else raw_blob_changes(Path(repo), rev)).items():
        for path, before, after in found:
            mine = [r for r in checked if r.reads(path)]
            if mine:
                wanted.setdefault(sha, []).append((path, tuple(b for b in (before, after) if b),
                                                   mine))
    blobs = sorted({b for items in wanted.values() for _, ids, _ in items for b in ids})
    texts = read_blobs(Path(repo), blobs) if blobs else {}
    passes: dict[tuple[str, str], bool] = {}  # (blob, reader's name) -> its test's answer

    digests: dict[tuple[str, str, str], Hashable] = {}  # (blob, file name, reader) -> digest

    def passed(blob: str, reader: Reader) -> bool:
        key = (blob, reader.name)
        if key not in passes:
            content = reader.content
            passes[key] = content is not None and content(blob, texts.get(blob, ""))
        return passes[key]

    def digest(blob: str, path: str, reader: Reader) -> Hashable:
        key = (blob, posixpath.basename(path), reader.name)
        if key not in digests and reader.digest is not None:
            digests[key] = reader.digest(key[1], texts.get(blob, ""))
        return digests.get(key)

    def counts(path: str, ids: tuple[str, ...], reader: Reader) -> bool:
        if reader.digest is None:
            return any(passed(b, reader) for b in ids)
        if len(ids) == 2:  # modified: when what is taken from it changed
            return digest(ids[0], path, reader) != digest(ids[1], path, reader)
        return bool(ids) and bool(digest(ids[0], path, reader))  # added or deleted

    return {sha: frozenset(path for path, ids, mine in items
                           if any(counts(path, ids, r) for r in mine))
            for sha, items in wanted.items()}


def changed_paths(repo: Path | str, rev: str = "HEAD") -> dict[str, tuple[Change, ...]]:
    """``sha -> (status, path) it changes against its first parent`` for the first-parent
    history of ``rev`` (one git process; merges are diffed against their first parent)."""
    out = run_git(Path(repo), "log", "--first-parent", "--diff-merges=first-parent",
                  "--no-renames", "--name-status", f"--format={_RECORD}%H", rev)
    changes: dict[str, tuple[Change, ...]] = {}
    for block in out.decode("utf-8", "replace").split(_RECORD)[1:]:
        sha, _, lines = block.partition("\n")
        found = (line.split("\t", 1) for line in lines.splitlines() if "\t" in line)
        changes[sha.strip()] = tuple((status[:1], path) for status, path in found)
    return changes


def commits_to_parse(
    shas: Sequence[str], changes: dict[str, tuple[Change, ...]], order: Iterable[str],
    readers: Sequence[Reader] = READERS, hits: dict[str, frozenset[str]] | None = None,
) -> set[str]:
    """Which of ``shas`` (oldest first, a selection of the first-parent history ``order``,
    oldest first) must be parsed: the first one, and each one whose changes since the
    previous selected commit touch a path some reader reads (``hits``: :func:`content_hits`
    of the history; None counts every change of a content-checked reader's files)."""
    position = {sha: i for i, sha in enumerate(order)}
    history = list(position)
    keep: set[str] = set()
    previous: int | None = None
    for sha in shas:
        here = position.get(sha)
        if previous is None or here is None or here <= previous:
            keep.add(sha)  # the first, or one the walk does not know: parse it
        else:
            between = history[previous + 1 : here + 1]
            if any(is_relevant(ch, readers, None if hits is None else hits.get(c, frozenset()))
                   for c in between for ch in changes.get(c, ())):
                keep.add(sha)
        previous = here
    return keep


def needed_commits(repo: Path | str, shas: Sequence[str], rev: str = "HEAD") -> set[str]:
    """:func:`commits_to_parse` for the first-parent history of ``rev`` in ``repo``."""
    changes = changed_paths(repo, rev)
    return commits_to_parse(shas, changes, reversed(list(changes)),
                            hits=content_hits(repo, rev))
