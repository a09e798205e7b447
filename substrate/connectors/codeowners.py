"""CODEOWNERS (GitHub and GitLab syntax) → OWNS and PRIMARY_OWNER edges.

* Locations, first found wins (GitHub's order): ``.github/CODEOWNERS``, ``CODEOWNERS``,
  ``docs/CODEOWNERS``, ``.gitlab/CODEOWNERS``.
* Comments (``#`` at line start, or after whitespace), blank lines, ``\\ `` and ``\\#`` escapes.
* GitLab sections ``[Name]``, ``^[Optional]``, ``[Name][2]``, with default owners
  (``[Name] @team``) inherited by entries of the section that list none.
* Owners: ``@org/team`` → Team ``team:<team>``; ``@user`` → Developer ``dev:<user>``;
  ``user@example.com`` → Developer ``dev:<local part>`` (with ``email``).
* Patterns are gitignore-style (``*``, ``**``, ``?``, ``[..]``, leading ``/`` anchors, a
  ``/`` inside anchors too, trailing ``/`` = directories only; a matched directory covers
  everything below it). Last match wins — per section for GitLab.

A rule *covers* a service when it matches the service's source folder itself or any file
directly in it (``*``, ``/services/``, ``src/checkout/**``; not ``*.md``); a service with no
source folder (see :mod:`layout`) is covered by the rules matching the file that deploys it.
For each service the owners of the winning rule (of every section) get ``OWNS``; the first
owner of the rule that wins overall gets ``PRIMARY_OWNER``. A winning rule with no owners
leaves the path unowned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from substrate.connectors.gitsource import GitSnapshot
from substrate.graph.records import EdgeRecord, GraphBatch, NodeRecord, ceid

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS")
_SECTION = re.compile(r"^\^?\[([^\]]+)\](?:\[\d+\])?(?:\s+(.*))?$")
_EMAIL = re.compile(r"^[^@\s/]+@[^@\s/]+\.[^@\s/]+$")
_PROBE = "\x01"  # a file name that only wildcards can match


@dataclass(frozen=True)
class Owner:
    label: str  # Team | Developer
    ceid: str
    name: str
    handle: str

    def node(self) -> NodeRecord:
        props = {"name": self.name, "handle": self.handle}
        if "@" in self.handle and not self.handle.startswith("@"):
            props["email"] = self.handle
        return NodeRecord(self.ceid, self.label, props)


@dataclass(frozen=True)
class Rule:
    pattern: str
    owners: tuple[Owner, ...]
    line: int
    section: str
    regex: re.Pattern[str]
    dir_only: bool

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether the rule applies to ``path`` (a directory when ``is_dir``)."""
        if self.regex.fullmatch(path) and (is_dir or not self.dir_only):
            return True
        return self._inside(path)

    def _inside(self, path: str) -> bool:
        parts = path.split("/")
        return any(self.regex.fullmatch("/".join(parts[:i])) for i in range(1, len(parts)))

    def covers(self, directory: str) -> bool:
        directory = directory.strip("/")
        return self.matches(directory, True) or self.matches(f"{directory}/{_PROBE}", False)


def parse_owner(token: str) -> Owner | None:
    """``@org/team``, ``@user`` or an e-mail address as an :class:`Owner`."""
    if token.startswith("@@"):
        return None  # GitLab role owners (@@maintainer) name no one
    if token.startswith("@") and "/" in token:
        team = token[1:].split("/")[-1]
        return Owner("Team", ceid("team", team), team, token)
    if token.startswith("@") and len(token) > 1:
        return Owner("Developer", ceid("dev", token[1:]), token[1:], token)
    if _EMAIL.match(token):
        local = token.split("@", 1)[0]
        return Owner("Developer", ceid("dev", local), local, token)
    return None


def _translate(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[" and "]" in body[i + 1 :]:
            end = body.index("]", i + 1)
            chars = body[i + 1 : end]
            out.append("[" + ("^" + chars[1:] if chars.startswith("!") else chars) + "]")
            i = end + 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    return "".join(out)


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], bool]:
    """Regex matching repository paths (no leading slash) and whether it is directory-only."""
    dir_only = pattern.endswith("/")
    body = pattern.strip("/")
    anchored = pattern.startswith("/") or "/" in body
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + _translate(body)), dir_only


def _strip_comment(line: str) -> str:
    if line.lstrip().startswith("#"):
        return ""
    cut = re.search(r"(?<!\\)\s#", line)
    return line[: cut.start()] if cut else line


def _tokens(line: str) -> list[str]:
    protected = line.replace("\\ ", "\0")
    return [t.replace("\0", " ").replace("\\#", "#") for t in protected.split()]


def _owners(tokens: list[str]) -> tuple[Owner, ...]:
    return tuple(o for o in (parse_owner(t) for t in tokens) if o is not None)


def parse_codeowners(text: str) -> list[Rule]:
    """Every rule of a CODEOWNERS text, in file order, with its 1-based line."""
    rules: list[Rule] = []
    section = ""
    defaults: tuple[Owner, ...] = ()
    for no, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        header = _SECTION.match(line)
        if header:
            section, defaults = header.group(1).strip(), _owners((header.group(2) or "").split())
            continue
        pattern, *rest = _tokens(line)
        owners = _owners(rest) if rest else defaults
        regex, dir_only = compile_pattern(pattern)
        rules.append(Rule(pattern, owners, no, section, regex, dir_only))
    return rules


def winning_rules(rules: list[Rule], path: str, is_dir: bool = True) -> list[Rule]:
    """The last rule covering ``path`` (a directory, or a file) in each section, in file order."""
    best: dict[str, Rule] = {}
    for rule in rules:
        if rule.covers(path) if is_dir else rule.matches(path, False):
            best[rule.section] = rule
    return sorted(best.values(), key=lambda r: r.line)


def find_codeowners(snap: GitSnapshot) -> str | None:
    """Path of the CODEOWNERS file in effect at the snapshot, if any."""
    return next((p for p in LOCATIONS if snap.exists(p)), None)


def _edge(kind: str, owner: Owner, service: str, rule: Rule, ref: str) -> EdgeRecord:
    props = {"pattern": rule.pattern, "handle": owner.handle, "via": "CODEOWNERS"}
    if rule.section:
        props["section"] = rule.section
    return EdgeRecord(kind, owner.ceid, service, ref, source="git", props=props)


def codeowners_batch(snap: GitSnapshot, service_paths: dict[str, str]) -> GraphBatch:
    """Owner nodes and OWNS / PRIMARY_OWNER edges for services (``ceid -> directory``, or
    ``ceid -> file`` for a service known only by the file deploying it)."""
    batch = GraphBatch()
    path = find_codeowners(snap)
    if path is None:
        return batch
    rules = parse_codeowners(snap.read(path))
    seen: set[str] = set()
    for rule in rules:
        for owner in rule.owners:
            if owner.ceid not in seen:
                seen.add(owner.ceid)
                node = owner.node()
                batch.nodes.append(
                    NodeRecord(node.ceid, node.label, node.props, (snap.ref(path, rule.line),))
                )
    for service, owned in sorted(service_paths.items()):
        won = winning_rules(rules, owned, is_dir=not snap.exists(owned))
        for rule in won:
            for owner in rule.owners:
                batch.edges.append(_edge("OWNS", owner, service, rule, snap.ref(path, rule.line)))
        last = max(won, key=lambda r: r.line, default=None)
        if last is not None and last.owners:
            ref = snap.ref(path, last.line)
            batch.edges.append(_edge("PRIMARY_OWNER", last.owners[0], service, last, ref))
    return batch
