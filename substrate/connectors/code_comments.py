"""Comments that say why: the reasons written beside code and configuration.

Much of a system's rationale is no ADR but a comment on the line it explains:

    // Sarama has an issue in a single broker kafka if the kafka broker is restarted.
    // This setting is to prevent that issue from manifesting itself, ...
    saramaConfig.Producer.RequiredAcks = sarama.NoResponse

    memory: 500M   # This is high to enable supporting the recommendationCache feature flag

    .WaitFor(orderingApi); // wait for ordering-api: it contains the EF migrations, because ...

A comment (a run of whole comment lines, or one after code on its line) counts when it gives
a reason (:data:`REASON`: "because", "to prevent", "so that", "in order to", "due to",
"otherwise", "this is high", "needed for", "workaround", ...; not a licence header nor an API
doc comment). Each file holding any becomes a
``Document`` (``kind`` ``comments``, ``doc:<slug of the path>``, named by its path) whose text
keeps, at their own line numbers (every other line blank), each such comment without its
markers, with the line of code it explains (the next one, in the same paragraph, or its own),
so that a "why"
question no ADR answers is answered by quoting it at its lines (``page_quotes``), and its
words are searchable. ``MENTIONS`` edges go to the services it names.

Read from source files (:func:`source_calls.is_source_path`) and configuration files (Compose,
YAML, TOML, properties, Dockerfiles, ``.env``), outside tests and vendored code; like prose
pages, at the last commit of a history replay only; at most ``MAX_FILES`` files, those with the
most reasons (each document's first line and the lines naming a service are blamed for
its evidence, one ranged ``git blame`` per file).
"""

from __future__ import annotations

import re
from functools import partial

from substrate.connectors.aliases import NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.markdown import parse_markdown
from substrate.connectors.mentions import find_mentions, mention_edges
from substrate.connectors.source_calls import is_source_path
from substrate.graph.records import GraphBatch, NodeRecord, ceid

KIND = "comments"
MAX_FILE_CHARS = 200_000
MAX_FILES = 60  # the files with the most reasons, past that (each is blamed for its first line)
REASON = re.compile(
    r"\b(?:because|so\s+that|in\s+order\s+to|due\s+to|otherwise|workaround|work\s+around"
    r"|the\s+reason|reason\s+(?:is|being|for)|to\s+(?:prevent|avoid|enable|support|allow"
    r"|ensure|make\s+sure|work\s+around|keep|reduce|speed\s+up)"
    r"|(?:this|that|it)\s+is\s+(?:needed|required|necessary|high|low|set|done|here)"
    r"|(?:needed|required|necessary)\s+(?:for|to|because|by|so)|we\s+(?:need|use|want|must)"
    r"|must\s+(?:be|not|run|wait|start|come))\b", re.I)
# a licence header or an API doc comment ("@return true if ..., false otherwise") gives none
_BOILERPLATE = re.compile(r"licen[cs]ed?\b|copyright|warrant|spdx|@param|@returns?\b|@throws",
                          re.I)
_CONFIG_NAMES = re.compile(r"(?:^|/)(?:Dockerfile[^/]*|\.env[^/]*|[^/]+\.(?:ya?ml|toml|properties"
                           r"|conf|cfg|ini|env|tf|hcl))$")
_SKIP_PARTS = frozenset({"node_modules", "vendor", "third_party", "tests", "test", "testdata",
                         "fixtures", ".github", "__pycache__"})
# a whole comment line, by syntax: "//", "#", "--", "*" (inside a block), "/*"
_LINE_COMMENT = re.compile(r"^\s*(?://+|#+(?!!)|--|\*(?!/)|/\*+)\s?(.*?)\s*(?:\*/)?\s*$")
# code, then a comment after it on the line (whitespace before its marker)
_TRAILING = re.compile(r"^(?P<code>\S.*?)\s+(?://|#)\s+(?P<text>\S.*)$")


def is_comment_path(path: str) -> bool:
    """A file whose comments are read."""
    if _SKIP_PARTS.intersection(path.split("/")[:-1]):
        return False
    return is_source_path(path) or _CONFIG_NAMES.search(path) is not None


def _trailing(line: str) -> tuple[str, str] | None:
    """(code, comment) of a line with a comment after its code; a marker inside a string
    (an odd number of quotes before it) is none."""
    found = _TRAILING.match(line.strip())
    if found is None or "://" in found.group("code")[-3:]:
        return None
    code = found.group("code")
    if code.count('"') % 2 or code.count("'") % 2 or code.count("`") % 2:
        return None
    return code, found.group("text")


def reasons(text: str) -> list[tuple[int, list[str], int | None]]:
    """``(first line, the comment's lines without their markers, line of the code it
    explains)`` of each comment that gives a reason (:data:`REASON`), in line order: the
    code on the line after a run of comment lines, or on the comment's own line. Only the
    lines around a match of :data:`REASON` are looked at (a file is read at C speed)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    out: dict[int, tuple[int, list[str], int | None]] = {}
    done: set[int] = set()
    for match in REASON.finditer(text):
        i = text.count("\n", 0, match.start())
        if i in done:
            continue
        if _comment(lines[i]) is None:
            trailing = _trailing(lines[i])
            done.add(i)
            if trailing is not None and REASON.search(trailing[1]) \
                    and not _BOILERPLATE.search(trailing[1]):
                out[i] = (i + 1, [trailing[1]], i + 1)
            continue
        first, last = i, i
        while first > 0 and _comment(lines[first - 1]) is not None:
            first -= 1
        while last + 1 < len(lines) and _comment(lines[last + 1]) is not None:
            last += 1
        done.update(range(first, last + 1))
        parts = [str(_comment(lines[k])) for k in range(first, last + 1)]
        said = " ".join(p for p in parts if p)
        code = last + 2 if last + 1 < len(lines) and lines[last + 1].strip() else None
        if not _BOILERPLATE.search(said):
            out[first] = (first + 1, parts, code)
    return [out[k] for k in sorted(out)]


def _comment(line: str) -> str | None:
    """The text of a whole comment line, without its marker; None for any other line."""
    if not line.strip():
        return None
    found = _LINE_COMMENT.match(line)
    return found.group(1) if found is not None else None


def rendered(text: str, found: list[tuple[int, list[str], int | None]]) -> str:
    """The document's text: each comment's lines without their markers at their own line
    numbers, then the code it explains (one paragraph: a quote of the reason carries the
    code), every other line blank. A comment after its code on one line reads "reason
    (code)"."""
    source = [line.rstrip("\r") for line in text.split("\n")]
    lines = [""] * len(source)
    for start, parts, code in found:
        after = _trailing(source[start - 1]) if code == start else None
        if after is not None:
            lines[start - 1] = f"{parts[0].rstrip('.')} ({after[0]})."
            continue
        for k, part in enumerate(parts):
            lines[start - 1 + k] = part
        if code is not None:
            lines[code - 1] = source[code - 1].strip()
    return "\n".join(lines) + "\n"


def comments_batch(snap: GitSnapshot, index: NameIndex) -> GraphBatch:
    """A ``Document`` for each file with comments that give reasons (see the module
    docstring), with MENTIONS edges to the services they name."""
    paths = [p for p in snap.files() if is_comment_path(p)]
    snap.preload(paths)
    found = []
    for path in paths:
        text = snap.read(path)
        if len(text) <= MAX_FILE_CHARS and REASON.search(text):
            said = reasons(text)
            if said:
                found.append((path, text, said))
    found.sort(key=lambda f: -len(f[2]))
    kept = []
    for path, text, said in sorted(found[:MAX_FILES]):
        body = rendered(text, said)
        kept.append((path, said, body, find_mentions(parse_markdown(body).body, index)))
    # the lines cited: one ranged blame per file (these files are read at one commit only)
    snap.prefetch_refs({path: [said[0][0], *(m.line for m in mentions)]
                        for path, said, _, mentions in kept})
    batch = GraphBatch()
    for path, said, body, mentions in kept:
        cid = ceid("doc", path)
        props = {"name": path, "path": path, "text": body, "kind": KIND}
        batch.nodes.append(NodeRecord(cid, "Document", props, (snap.ref(path, said[0][0]),)))
        batch.edges.extend(mention_edges("MENTIONS", cid, mentions, index,
                                         partial(snap.ref, path)))
    return batch
