"""CODEOWNERS parsing, gitignore-style matching, last-match-wins, and the edges it yields."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.codeowners import (
    compile_pattern,
    parse_codeowners,
    parse_owner,
    winning_rules,
)
from substrate.connectors.gitrepo import batch_at
from substrate.demo.gitwriter import commit_tree, init_repo

GITHUB = """\
# Owners of the shop
*                          @acme/platform
*.md                       @acme/docs   # inline comment
/services/                 @acme/backend
services/checkout/**       @jdoe jane.roe@acme.example
/services/*/Dockerfile     @acme/platform
services/**/migrations/    @acme/data
/services/legacy/
"""


def test_owner_kinds() -> None:
    team, dev, mail = (parse_owner(t) for t in ("@acme/payments", "@jdoe", "jane@acme.example"))
    assert team is not None and (team.label, team.ceid, team.name) == (
        "Team", "team:payments", "payments",
    )  # fmt: skip
    assert dev is not None and (dev.label, dev.ceid) == ("Developer", "dev:jdoe")
    assert mail is not None and (mail.ceid, mail.node().props["email"]) == (
        "dev:jane", "jane@acme.example",
    )  # fmt: skip
    assert parse_owner("@@maintainer") is None and parse_owner("nobody") is None


def test_rules_keep_lines_and_owners() -> None:
    rules = parse_codeowners(GITHUB)
    assert [(r.line, r.pattern) for r in rules][:3] == [(2, "*"), (3, "*.md"), (4, "/services/")]
    assert [o.ceid for o in rules[1].owners] == ["team:docs"]  # inline comment dropped
    assert [o.ceid for o in rules[3].owners] == ["dev:jdoe", "dev:jane-roe"]
    assert rules[-1].owners == ()  # explicitly unowned


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("*", "services/checkout", True, True),
        ("*.md", "docs/a.md", False, True),
        ("*.md", "services/checkout", True, False),
        ("/services/", "services/checkout/main.go", False, True),
        ("/services/", "lib/services/x.go", False, False),
        ("services/", "lib/services/x.go", False, True),
        ("docs/", "docs", False, False),
        ("services/checkout/**", "services/checkout/a/b.go", False, True),
        ("services/**/migrations/", "services/orders/db/migrations/1.sql", False, True),
        ("/services/*/Dockerfile", "services/cart/Dockerfile", False, True),
        ("/services/*/Dockerfile", "services/cart/sub/Dockerfile", False, False),
        ("[Dd]ocs/", "Docs/x.md", False, True),
        ("a?c", "abc", False, True),
    ],
)
def test_gitignore_matching(pattern: str, path: str, is_dir: bool, expected: bool) -> None:
    rule = parse_codeowners(f"{pattern} @x")[0]
    assert rule.matches(path, is_dir) is expected
    assert compile_pattern(pattern)[1] is pattern.endswith("/")


def test_last_match_wins_per_service_directory() -> None:
    rules = parse_codeowners(GITHUB)
    assert [r.pattern for r in winning_rules(rules, "services/checkout")] == [
        "services/checkout/**"
    ]
    assert [r.pattern for r in winning_rules(rules, "services/cart")] == ["/services/"]
    assert [r.pattern for r in winning_rules(rules, "services/legacy")] == ["/services/legacy/"]
    assert [r.pattern for r in winning_rules(rules, "tools/x")] == ["*"]


def test_gitlab_sections_with_default_owners() -> None:
    text = "[Backend] @acme/backend\n/services/\n^[Payments][2] @acme/payments\n/services/pay/\n"
    rules = parse_codeowners(text)
    assert [(r.section, [o.ceid for o in r.owners]) for r in rules] == [
        ("Backend", ["team:backend"]),
        ("Payments", ["team:payments"]),
    ]
    won = winning_rules(rules, "services/pay")
    assert [r.section for r in won] == ["Backend", "Payments"]


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    files = {
        ".github/CODEOWNERS": GITHUB,
        "CODEOWNERS": "* @acme/ignored\n",  # .github/ takes precedence
        "services/checkout/README.md": "# checkout\n",
        "services/cart/README.md": "# cart\n",
        "services/legacy/README.md": "# legacy\n",
    }
    sha = commit_tree(repo, files, "init", "2026-08-03T09:00:00Z")
    return repo, sha[:7]


def test_owns_and_primary_owner_edges(tmp_path: Path) -> None:
    repo, short = _repo(tmp_path)
    batch = batch_at(repo)
    edges = sorted(
        (e.type, e.src, e.dst, e.evidence_ref)
        for e in batch.edges
        if e.type in ("OWNS", "PRIMARY_OWNER") and e.dst.startswith("service:")
    )
    ref = f".github/CODEOWNERS#L{{}}@{short}"
    # a path a rule names that is no service's folder is a Module owned by the same rules
    modules = sorted((e.type, e.src, e.dst) for e in batch.edges
                     if e.type in ("OWNS", "PRIMARY_OWNER") and e.dst.startswith("module:"))
    assert modules == [("OWNS", "team:backend", "module:services"),
                       ("PRIMARY_OWNER", "team:backend", "module:services")]
    assert edges == [
        ("OWNS", "dev:jane-roe", "service:checkout", ref.format(5)),
        ("OWNS", "dev:jdoe", "service:checkout", ref.format(5)),
        ("OWNS", "team:backend", "service:cart", ref.format(4)),
        ("PRIMARY_OWNER", "dev:jdoe", "service:checkout", ref.format(5)),
        ("PRIMARY_OWNER", "team:backend", "service:cart", ref.format(4)),
    ]
    owners = {n.ceid: n.label for n in batch.nodes if n.label in ("Team", "Developer")}
    assert owners == {
        "team:platform": "Team", "team:docs": "Team", "team:backend": "Team",
        "dev:jdoe": "Developer", "dev:jane-roe": "Developer", "team:data": "Team",
    }  # fmt: skip
