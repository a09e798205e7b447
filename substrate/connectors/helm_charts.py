"""Helm charts → the Kubernetes manifests they render, each fact cited at a line of the chart.

A chart is a folder with ``Chart.yaml`` (not a library chart, and not a subchart in another
chart's ``charts/`` folder: its parent renders it). Helm's own Go packages render it as
``helm template <release> <folder> --no-hooks`` would, with its default values, in the
long-lived renderer of ``plugins/helm-render`` (:mod:`substrate.stack.helm`). The documents
it renders are read by :mod:`substrate.connectors.k8s` like any manifest, and each fact read
from them is cited where a reader of the repository finds it:

- the template line that renders it, when the value is written there (``containerPort: 8080``)
  or the line's own words are a part of it (``{{ .Values.repo }}/rs-cart:{{ .Values.tag }}``);
- else the line of the ``values.yaml`` that a ``.Values.a.b`` on that template line reads, when
  it gives the value or a whole piece of it (an image's repository); a parent chart's values
  come before its subchart's own (:func:`_values_layers`);
- for a line no template line renders (a pod spec a helper writes), the helper line
  (``_helpers.tpl``) that writes the value, or the values line such a helper line reads;
- else the only values line holding the value;
- else the template line (a name a helper makes: ``name: {{ include "cart.fullname" . }}``),
  or the template's first line when no template line rendered it.

A rendered document is matched with the template document of its kind and name (Helm sorts
what it renders by kind, so a file's documents come out in another order), and its lines with
that document's lines in order: the same key and literal value, or the same key and an action
that can render the value (a value it reads, or its ``default``, is a piece of it), so a line
of a branch an ``if`` left out is passed over; lines ``toYaml`` expanded match none. The
release is named :data:`RELEASE`, then left out of the names it prefixes: the usual
``fullname`` helper makes ``<release>-<chart>``, so a chart's workload is named as the chart
names it (``carts``, not ``release-name-carts``), and a name that is the release alone is the
chart's name.

A chart whose dependencies are not in its ``charts/`` folder (or only as archives) renders
without them; a template that fails with the default values (a value it reads is not set, a
``required`` one is empty, or what it renders is not YAML) is left out and the rest rendered,
logged with the reason; a chart that fails otherwise is skipped, and every chart is when the
renderer is not built (``substrate up`` builds it when Go is there).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import posixpath
import re
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import orjson
from yaml.nodes import Node

from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.yamlnodes import Fact, compose_all, fact, get, path_get, scalar

RELEASE = "zzrelease"  # never part of a chart's own names, so it can be taken out again
_RELEASE_PREFIX = re.compile(rf"\b{RELEASE}-(?=[A-Za-z0-9])")
_RELEASE_ALONE = re.compile(rf"\b{RELEASE}\b")
ALIGN_WINDOW = 60  # template lines looked ahead for a rendered line's match
_CHART_FOLDER_NAMES = ("chart", "charts", "helm", "helm-chart", "helm-charts")
_VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_KEY = re.compile(r"^([A-Za-z0-9_.\-/\"']+):(?:\s|$)")
log = logging.getLogger(__name__)


_RENDERED_EXTENSIONS = (".yaml", ".yml", ".tpl")
# what ``.Files.Get`` in a chart folder mostly reads (configuration files, not source code)
_CHART_FILE_EXTENSIONS = (*_RENDERED_EXTENSIONS, ".json", ".conf", ".toml", ".ini", ".cfg",
                          ".properties", ".txt", ".sh", ".lua", ".xml")


def is_chart_path(path: str) -> bool:
    """May the file change what a chart renders? (For the replay's path filter: a chart's
    ``Chart.yaml``, values, templates and helpers, and configuration files in a folder named
    like a chart's, where ``.Files.Get`` may read them. Not a Django or Rails ``templates/``
    page, nor the source code of a ``charts/`` component folder.)"""
    name = posixpath.basename(path)
    parts = path.split("/")[:-1]
    return (name in ("Chart.yaml", "Chart.lock", "requirements.yaml", ".helmignore")
            or name.endswith(".tpl") or (name.startswith("values") and name.endswith(".yaml"))
            or ("templates" in parts and name.endswith(_RENDERED_EXTENSIONS))
            or (any(p in _CHART_FOLDER_NAMES for p in parts)
                and name.endswith(_CHART_FILE_EXTENSIONS)))


def chart_folders(files: Iterable[str]) -> list[str]:
    """Folders holding a ``Chart.yaml``, shallowest first, but for subcharts (a folder in
    another chart's ``charts/``: that chart renders it)."""
    found = sorted({posixpath.dirname(p) for p in files if posixpath.basename(p) == "Chart.yaml"},
                   key=lambda f: (f.count("/"), f))
    top: list[str] = []
    for folder in found:
        if not any(folder.startswith(posixpath.join(outer, "charts") + "/") for outer in top):
            top.append(folder)
    return top


@dataclass(frozen=True)
class RenderedDoc:
    """One rendered document: the repository path of its template and its text."""

    source: str
    text: str


def _release_name(chart_name: str) -> str:
    """A chart's name as a release name would be (lower case, letters, digits and dashes)."""
    return re.sub(r"[^a-z0-9-]+", "-", chart_name.lower()).strip("-")[:53] or "chart"


def strip_release(text: str, chart_name: str) -> str:
    """The rendered text with :data:`RELEASE` taken out of the names it prefixes and a bare
    release name read as the chart's (lines keep their numbers)."""
    return _RELEASE_ALONE.sub(_release_name(chart_name), _RELEASE_PREFIX.sub("", text))


def split_rendered(text: str, folder: str, exists: Callable[[str], bool]) -> list[RenderedDoc]:
    """``helm template``'s output as documents, each with the repository path of the template
    that rendered it (``# Source: <chart>/templates/x.yaml`` → ``<folder>/templates/x.yaml``;
    a packaged subchart's documents, whose templates are not in the repository, are left out)."""
    docs: list[RenderedDoc] = []
    source: str | None = None
    lines: list[str] = []
    started = False  # a line of this document was seen (its Source comment comes first)
    for line in [*text.splitlines(), "---"]:
        if line.rstrip() == "---":
            if source is not None and lines:
                docs.append(RenderedDoc(source, "\n".join(lines) + "\n"))
            source, lines, started = None, [], False
        elif line.startswith("# Source: ") and not started:
            rest = line[len("# Source: "):].strip().split("/", 1)
            path = posixpath.join(folder, rest[1]) if len(rest) == 2 else ""
            source = path if path and exists(path) else None
            started = True
        else:
            started = True
            lines.append(line)
    return docs


Could = Callable[[str, str], bool]  # (template value, rendered value): may it render that?


def _shape(line: str) -> tuple[str, str] | None:
    """A line as (key, value): ``("port:", "8080")``, ``("", text)`` for a line with no key;
    None for a line that renders nothing by itself (an action, a comment, a blank)."""
    text = line.strip()
    text = text[2:].lstrip() if text.startswith("- ") else text
    if not text or text.startswith(("#", "{{")):
        return None
    key = _KEY.match(text)
    if key is None:
        return ("", text)
    return (f"{key.group(1).strip(chr(34) + chr(39))}:", text[key.end():].strip())


def _unquoted(value: str) -> str:
    return value.strip().strip("\"'")


def _renders(template: tuple[str, str] | None, rendered: tuple[str, str],
             could: Could) -> bool:
    """May a template line render a line: the same key, and the same literal value, or an
    action that may give the rendered value."""
    if template is None or template[0] != rendered[0]:
        return False
    if "{{" in template[1]:
        return could(template[1], rendered[1])
    return _unquoted(template[1]) == _unquoted(rendered[1])


def _anything(_template: str, _rendered: str) -> bool:
    return True


def align(rendered: list[str], template: list[str], could: Could = _anything) -> dict[int, int]:
    """Rendered line index → template line index, matched in order: the same key and value
    (a literal line), or the same key and an action that may render the value (``could``)."""
    out: dict[int, int] = {}
    shapes = [_shape(t) for t in template]
    at = 0
    for i, line in enumerate(rendered):
        wanted = _shape(line)
        if wanted is None:
            continue
        for j in range(at, min(len(template), at + ALIGN_WINDOW)):
            if _renders(shapes[j], wanted, could):
                out[i] = j
                at = j + 1
                break
    return out


def template_parts(template: list[str]) -> list[tuple[int, int]]:
    """The (first, end) line indexes of each document of a template file."""
    cuts = [i for i, line in enumerate(template) if line.rstrip() == "---"]
    bounds = [-1, *cuts, len(template)]
    return [(a + 1, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a + 1]


def _kind(lines: Iterable[str]) -> str | None:
    return next((line.split(":", 1)[1].strip() for line in lines
                 if line.startswith("kind:")), None)


def _name(lines: Iterable[str]) -> str | None:
    """The ``metadata.name`` of a rendered document (its first ``name:`` two spaces in)."""
    return next((_unquoted(line.split(":", 1)[1]) for line in lines
                 if line.startswith("  name:")), None)


def template_part(rendered: list[str], template: list[str],
                  used: Iterable[int] = ()) -> tuple[int, tuple[int, int]]:
    """The template document that rendered a document, as (its index, its lines). Helm
    sorts what it renders by kind, so a file's documents come out in another order: the
    document of the same ``kind`` whose text names the rendered name, else the first of that
    kind not taken yet (``used``), else the first of that kind, else the first not taken."""
    parts = list(enumerate(template_parts(template))) or [(0, (0, len(template)))]
    taken = set(used)
    kind, name = _kind(rendered), _name(rendered)
    same = [p for p in parts if _kind(template[p[1][0]:p[1][1]]) == kind]
    named = [p for p in same if name and any(name in t for t in template[p[1][0]:p[1][1]])]
    free = [p for p in parts if p[0] not in taken]
    return next(iter([p for p in named if p[0] not in taken] + named
                     + [p for p in same if p[0] not in taken] + same + free + parts))


def _contains(value: str, part: str) -> bool:
    """Is ``part`` a whole piece of ``value`` (``example/app`` of ``example/app:1.0``, not
    ``80`` of ``8080``)?"""
    return value == part or re.search(rf"(?<![\w.]){re.escape(part)}(?![\w.])", value) is not None


_ACTION = re.compile(r"\{\{.*?\}\}")
_DEFAULT = re.compile(r"\bdefault\s+\"?([^\s\"|}]+)")


class Locator:
    """Where a fact read from a rendered document is written in the chart (module doc).

    ``part``: the (first, end) lines of the template document that rendered it; ``values``:
    the values it was rendered with, as (path, node) layers, the first that sets a value wins
    (a parent chart's values for its subchart, then the subchart's own); ``helpers``: the
    chart's helper files (``_helpers.tpl``: (path, lines)), where a pod spec may be written."""

    def __init__(self, doc: RenderedDoc, template: str, values: list[tuple[str, Node]],
                 part: tuple[int, int] | None = None,
                 helpers: list[tuple[str, list[str]]] | None = None) -> None:
        self.doc = doc
        self.rendered = doc.text.splitlines()
        self.template = template.splitlines()
        self.values = values
        self.helpers = helpers or []
        first, end = part or (0, len(self.template))
        self.part = (first, end)
        self._scalars: dict[str, list[Fact]] | None = None
        self.aligned = {i: first + j for i, j in
                        align(self.rendered, self.template[first:end], self.could).items()}

    def value_at(self, ref: str) -> Fact | None:
        """The scalar ``.Values<ref>`` gives, where the first layer that sets it writes it."""
        keys = ref.strip(".").split(".")
        for path, root in self.values:
            node = path_get(root, *keys)
            if node is not None:
                return fact(node, path)
        return None

    def could(self, template_value: str, rendered: str) -> bool:
        """May an action render ``rendered``: a value it reads, or a default it names, is a
        piece of it (unknown when a value it reads is not a scalar of the values)."""
        rendered = _unquoted(rendered)
        refs = _VALUES_REF.findall(template_value)
        if not refs:
            return True
        for ref in refs:
            found = self.value_at(ref)
            if found is None or found.value == "" or _contains(rendered, found.value):
                return True
        return any(_contains(rendered, d) for d in _DEFAULT.findall(template_value))

    def _values_lines(self) -> dict[str, list[Fact]]:
        """Every scalar of the values → where it is written."""
        if self._scalars is None:
            self._scalars = {}
            for path, root in self.values:
                stack = [root]
                while stack:
                    node = stack.pop()
                    if isinstance(node.value, list):  # a mapping's (key, value) pairs, or items
                        stack.extend(i[1] if isinstance(i, tuple) else i for i in node.value)
                    elif (found := fact(node, path)) is not None:
                        self._scalars.setdefault(found.value, []).append(found)
        return self._scalars

    def _named_value(self, line: str, value: str) -> Fact | None:
        """The ``.Values`` a template line reads that gives ``value`` (or a piece of it)."""
        for ref in _VALUES_REF.findall(line):
            found = self.value_at(ref)
            if found is not None and found.value and _contains(value, found.value):
                return found
        return None

    def _in_template(self, row: int, value: str) -> Fact | None:
        """The template line itself, when it writes the value or its own words of it (an
        image ``{{ .Values.repo }}/rs-cart:{{ .Values.tag }}``: "rs-cart" is written there)."""
        line = self.template[row]
        written = line.split("{{", 1)[0]
        own = [w for w in (_unquoted(p) for p in _ACTION.split(line.split(":", 1)[-1])) if w]
        if value in written or (len(re.sub(r"[^A-Za-z0-9]", "", "".join(own))) >= 3
                                and all(w in value for w in own)):
            return Fact(value, self.doc.source, row + 1)
        return None

    def _in_helpers(self, rendered: str, value: str) -> tuple[Fact | None, Fact | None]:
        """Where a helper renders the line: (a helper line writing its value, or the line of
        a value a helper line reads that gives it; else None), and (the only helper line that
        may render it, else None)."""
        wanted = _shape(rendered)
        maybe: list[Fact] = []
        for path, lines in self.helpers if wanted is not None else []:
            for i, line in enumerate(lines):
                if not _renders(_shape(line), wanted or ("", ""), self.could):
                    continue
                if "{{" not in line:
                    return Fact(value, path, i + 1), None
                if named := self._named_value(line, value):
                    return Fact(value, named.path, named.line), None
                maybe.append(Fact(value, path, i + 1))
        return None, (maybe[0] if len(maybe) == 1 else None)

    def locate(self, found: Fact) -> Fact:
        value = found.value
        row = self.aligned.get(found.line - 1)
        if row is not None:
            if cited := self._in_template(row, value):
                return cited
            if named := self._named_value(self.template[row], value):
                return Fact(value, named.path, named.line)
        rendered = self.rendered[found.line - 1] if 0 < found.line <= len(self.rendered) else ""
        helper, maybe = self._in_helpers(rendered, value) if row is None else (None, None)
        if helper is not None:
            return helper
        written = self._values_lines().get(value, [])
        if len(written) == 1:
            return Fact(value, written[0].path, written[0].line)
        if row is not None:
            return Fact(value, self.doc.source, row + 1)
        if maybe is not None:
            return maybe
        first, end = self.part
        literal = next((i for i in range(first, end) if value and value in self.template[i]),
                       first)
        return Fact(value, self.doc.source, literal + 1)


def relocate(value: Any, move: Callable[[Fact], Fact]) -> Any:
    """``value`` (the dataclasses a manifest reader made, their lists and dicts) with each
    :class:`Fact` in it replaced by ``move(fact)``."""
    if isinstance(value, Fact):
        return move(value)
    if isinstance(value, list):
        return [relocate(v, move) for v in value]
    if isinstance(value, dict):
        return {k: relocate(v, move) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: relocate(getattr(value, f.name), move)
                                             for f in dataclasses.fields(value) if f.init})
    return value


class Renderer:
    """The renderer process (``plugins/helm-render``), started at the first chart and kept
    for the next ones; one request at a time. A process that died is started again once."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        atexit.register(self.close)

    def _started(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([str(self.binary)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self.process

    def render(self, files: dict[str, str], folder: str = "") -> str | None:
        """The chart's manifests, None when it does not render (logged with ``folder``, as
        are the templates left out)."""
        request = orjson.dumps({"release": RELEASE, "namespace": "default", "files": files})
        with self.lock:
            for attempt in range(2):
                process = self._started()
                assert process.stdin is not None and process.stdout is not None
                try:
                    process.stdin.write(request + b"\n")
                    process.stdin.flush()
                    line = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    line = b""
                if line:
                    break
                self.close()
                if attempt:
                    log.warning("the Helm renderer %s stopped answering", self.binary)
                    return None
        answer = orjson.loads(line)
        where = folder or "."
        if answer.get("skipped"):
            log.info("helm chart %s rendered without %s", where, "; ".join(answer["skipped"]))
        if answer.get("error"):
            log.info("helm chart %s not rendered: %s", where, str(answer["error"])[:500])
            return None
        return str(answer.get("manifest") or "")

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


@lru_cache(maxsize=4)
def _renderer(binary: Path) -> Renderer:
    """The one renderer process of this interpreter for ``binary``."""
    return Renderer(binary)


@dataclass(frozen=True)
class Chart:
    """A chart of a snapshot: its folder, its name and its text files (paths relative to the
    folder), hashable so that what is read from it is memoised by its content."""

    folder: str
    name: str
    files: tuple[tuple[str, str], ...]

    def path(self, relative: str) -> str:
        return posixpath.join(self.folder, relative) if self.folder else relative

    @cached_property
    def _texts(self) -> dict[str, str]:
        return {self.path(p): t for p, t in self.files}

    def text(self, path: str) -> str | None:
        """The text of a repository path inside the chart."""
        return self._texts.get(path)


def charts(snap: GitSnapshot) -> list[Chart]:
    """The snapshot's charts (library charts render nothing and are left out)."""
    files = snap.files()
    out = []
    for folder in chart_folders(files):
        docs = compose_all(snap.read(posixpath.join(folder, "Chart.yaml")))
        doc = docs[0] if docs else None
        if scalar(get(doc, "type")) == "library":
            continue
        prefix = f"{folder}/" if folder else ""
        paths = [p for p in files if p.startswith(prefix)
                 and not p.endswith((".tgz", ".tar.gz"))]  # text files only
        snap.preload(paths)
        name = scalar(get(doc, "name")) or posixpath.basename(folder) or "chart"
        out.append(Chart(folder, name, tuple((p[len(prefix):], snap.read(p)) for p in paths)))
    return out


@lru_cache(maxsize=256)
def rendered_documents(chart: Chart, helm: Path) -> list[tuple[RenderedDoc, Locator]]:
    """Every document the chart renders, with the locator of its facts (memoised: a replay
    reads a chart again only when one of its files changed)."""
    text = _renderer(helm).render(dict(chart.files), chart.folder)
    if text is None:
        return []
    out: list[tuple[RenderedDoc, Locator]] = []
    used: dict[str, list[int]] = {}  # template -> its documents taken so far
    helpers = [(chart.path(p), t.splitlines()) for p, t in chart.files
               if p.endswith(".tpl") and "templates/" in p]
    for doc in split_rendered(strip_release(text, chart.name), chart.folder,
                              lambda p: chart.text(p) is not None):
        template = chart.text(doc.source) or ""
        index, part = template_part(doc.text.splitlines(), template.splitlines(),
                                    used.get(doc.source, []))
        used.setdefault(doc.source, []).append(index)
        out.append((doc, Locator(doc, template, _values_layers(chart, doc.source), part,
                                 helpers)))
    return out


def _values_layers(chart: Chart, source: str) -> list[tuple[str, Node]]:
    """The values a template of the chart (or of a subchart in its ``charts/``) is rendered
    with, as (path, node) layers, the outermost chart's first: a parent's ``values.yaml``
    sets its subchart's values under the subchart's name."""
    folder = source.rsplit("/templates/", 1)[0]
    top = chart.folder
    rest = folder[len(top):].strip("/") if folder.startswith(top) else ""
    names = rest.split("/")[1::2] if rest else []  # charts/<a>/charts/<b>
    layers: list[tuple[str, Node]] = []
    for depth in range(len(names) + 1):
        path = posixpath.join(top, *[f"charts/{n}" for n in names[:depth]], "values.yaml")
        documents = compose_all(chart.text(path) or "")
        node: Node | None = documents[0] if documents else None
        node = path_get(node, *names[depth:]) if names[depth:] else node
        if node is not None:
            layers.append((path, node))
    return layers
