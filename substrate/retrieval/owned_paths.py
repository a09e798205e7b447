"""Which path an ownership question is about, and who path rules say owns it (no model).

"Who owns the production Terraform?", "who owns the CI workflows?", "who owned the registrar
app on 2023-01-15?": the subject is a path, not a service. The candidates are the tenant's
``Module`` nodes (paths ownership rules name, module folders no service claims; see
``connectors/ownership_paths.py``), each scored by the words of its path the question uses
(``terraform/production`` answers "production Terraform": two words; a plural, a file
extension and ``docs``/"documentation" do not matter). Ties go to the module live at the
question's time, then to the path with fewer words the question leaves unsaid (the folder
``.github/workflows`` over a workflow file in it), then to the shorter path.

A linked service stays the subject unless a module explains more of the question, or the
service is only a head noun after the module's name ("the registrar app" where a service is
named ``app``).

A path asked about at a time when no live node stands for it (its rule came later) is judged
by the path rules in effect then (``retrieval/ownership_rules``): the last matching rule per
section wins, as in CODEOWNERS; none matching means nobody was recorded.
"""

from __future__ import annotations

import re
from typing import Any

from substrate.connectors.codeowners import compile_pattern
from substrate.retrieval.mentions import strip_qualifiers

_EXTENSIONS = frozenset({"yml", "yaml", "json", "md", "py", "txt", "toml", "cfg", "ini", "sh",
                         "js", "ts", "tf", "j2"})
_SYNONYMS = {"documentation": "doc", "docs": "doc", "document": "doc", "documents": "doc",
             "configuration": "config", "infra": "infrastructure", "tf": "terraform",
             "wf": "workflow", "gh": "github", "ci": "ci"}
_STOP_WORDS = """a an the of in on at to for by from and or is are was were be who whom whose
what which does did do owns own owned owner owners owning maintains maintained maintainer
maintainers responsible charge code codeowners as how when now today currently"""
_STOP = frozenset(_STOP_WORDS.split())
HEAD_NOUNS = frozenset({"app", "apps", "application", "applications", "module", "modules",
                        "package", "packages", "library", "libraries", "folder", "folders",
                        "directory", "directories", "dir", "component", "components"})
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{4}\b")


def _stem(word: str) -> str:
    word = _SYNONYMS.get(word, word)
    if len(word) > 3 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return _SYNONYMS.get(word, word)


def question_words(question: str) -> list[str]:
    """The question's content words, in order, stemmed (dates and stop words dropped)."""
    text = _DATE.sub(" ", question.lower())
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text) if w not in _STOP]


def path_words(path: str) -> set[str]:
    """The words of a path: its segments split on ``/ - _ .``, extensions dropped."""
    words = re.findall(r"[a-z0-9]+", path.lower())
    return {_stem(w) for w in words if w not in _EXTENSIONS}


def score(question: str, path: str) -> tuple[int, int]:
    """(question words the path names, path words the question leaves unsaid)."""
    asked, have = set(question_words(question)), path_words(path)
    hit = asked & have
    return len(hit), len(have - hit)


def best_module(question: str, modules: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The module the question is about (see the module docstring), None when no module's
    path shares a word with it."""
    ranked = []
    for m in modules:
        hit, unsaid = score(question, str(m.get("path") or ""))
        if hit:
            ranked.append(((-hit, not m.get("live"), unsaid, len(str(m["path"])),
                            str(m["path"])), {**m, "words": hit}))
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


def prefer_module(question: str, module: dict[str, Any] | None,
                  service: dict[str, Any] | None) -> bool:
    """Whether the module, not the linked service, is what the question asks about."""
    if module is None:
        return False
    if service is None:
        return True
    named = path_words(" ".join(str(service.get(k) or "") for k in ("name", "mention")))
    said = question_words(question)
    explained = len(set(said) & named)
    if module["words"] > explained:
        return True
    have = path_words(str(module.get("path") or ""))
    return any(w in named and w in HEAD_NOUNS and i > 0 and said[i - 1] in have
               for i, w in enumerate(said))


def _line(ref: str) -> int:
    m = re.search(r"#L(\d+)", ref)
    return int(m.group(1)) if m else 0


def covering_rows(rows: list[dict[str, Any]], path: str, is_file: bool) -> list[dict[str, Any]]:
    """The rows (``retrieval/ownership_rules``) of the rules that win for ``path``: per
    section, the matching rule of the highest line."""
    best: dict[str, tuple[int, str]] = {}
    for row in rows:
        regex, dir_only = compile_pattern(str(row["pattern"]))
        parts = path.strip("/").split("/")
        inside = any(regex.fullmatch("/".join(parts[:i])) for i in range(1, len(parts)))
        whole = regex.fullmatch(path.strip("/")) and (not is_file or not dir_only)
        probe = not is_file and regex.fullmatch(f"{path.strip('/')}/\x01")
        if whole or inside or probe:
            ref = str(row["hop"]["evidence_ref"])
            line = _line(ref)
            if line >= best.get(row["section"], (-1, ""))[0]:
                best[row["section"]] = (line, ref)
    winners = {ref for _, ref in best.values()}
    return [r for r in rows if r["hop"]["evidence_ref"] in winners]


def rules_checked(rows: list[dict[str, Any]], most: int = 3) -> list[str]:
    """The evidence of the path rules in effect (what a "nobody recorded" answer checked)."""
    return list(dict.fromkeys(str(r["hop"]["evidence_ref"]) for r in rows))[:most]


# "who are the code owners?", "list the owners", "who owns what?", "which teams own code?":
# owners in general, not the owners of one thing (a name the graph lacks is no overview)
_OVERVIEW = re.compile(
    r"\bwho\s+(?:are|is)\s+(?:the\s+|our\s+|all\s+(?:the\s+)?)?(?:code\s*)?owners\b\s*\??$"
    r"|^\s*(?:list|show|name|give\s+me)\s+(?:all\s+)?(?:the\s+|our\s+)?(?:code\s*)?owners"
    r"\s*\??$"
    r"|\bwho\s+owns\s+what\b|\bownership\s+(?:overview|map|summary)\b"
    r"|\b(?:which|what)\s+(?:teams?|people|developers?|groups?)\s+own\s+(?:any\s*thing"
    r"|some\s*thing|code|what|the\s+code(?:base)?)\b", re.I)


def asks_overview(question: str) -> bool:
    """A question for the owners in general (no service or path named; "of this repository"
    names the whole tenant, not a subject)."""
    return _OVERVIEW.search(strip_qualifiers(question).strip()) is not None
