"""Paths as ownership subjects (issue 8): which module a question names, module vs. linked
service, and the path rules in effect deciding who owned a path before its own rule existed."""

from __future__ import annotations

from typing import Any

from substrate.connectors.ownership_paths import package_roots, rule_path
from substrate.retrieval.owned_paths import (
    best_module,
    covering_rows,
    prefer_module,
    question_words,
    rules_checked,
)

MODULES = [
    {"ceid": "module:github-workflows", "name": "/.github/workflows/",
     "path": ".github/workflows", "live": True},
    {"ceid": "module:github-workflows-restore-yml", "name": "/.github/workflows/restore.yml",
     "path": ".github/workflows/restore.yml", "kind": "file", "live": False},
    {"ceid": "module:terraform-production", "name": "/terraform/production/",
     "path": "terraform/production", "live": True},
    {"ceid": "module:terraform-staging", "name": "/terraform/staging/",
     "path": "terraform/staging", "live": True},
    {"ceid": "module:backend-manifests", "name": "/backend/manifests/",
     "path": "backend/manifests", "live": False},
    {"ceid": "module:docs", "name": "docs/*", "path": "docs", "live": True},
    {"ceid": "module:src-registrar", "name": "registrar", "path": "src/registrar", "live": True},
]


def _best(question: str) -> str | None:
    found = best_module(question, MODULES)
    return None if found is None else str(found["path"])


def test_rule_paths() -> None:
    assert rule_path("/backend/manifests/") == "backend/manifests"
    assert rule_path("docs/*") == "docs"
    assert rule_path("src/checkout/**") == "src/checkout"
    assert rule_path("/.github/workflows/deploy.yml") == ".github/workflows/deploy.yml"
    for catch_all in ("*", "/**", "**", "/"):
        assert rule_path(catch_all) is None
    assert rule_path("*.md") is None
    assert rule_path("services/*/Dockerfile") is None


def test_package_roots_are_top_packages_outside_tests() -> None:
    files = ["src/registrar/__init__.py", "src/registrar/models/__init__.py",
             "src/epp/__init__.py", "src/registrar/tests/__init__.py", "tests/__init__.py",
             "setup.py", "__init__.py"]
    assert package_roots(files) == {"src/registrar", "src/epp"}


def test_question_words_drop_dates_and_stop_words() -> None:
    assert question_words("Who owned the CI workflows on 2024-09-01?") == ["ci", "workflow"]
    assert question_words("Who owns the documentation?") == ["doc"]


def test_best_module_by_the_words_of_its_path() -> None:
    assert _best("Who owns the production Terraform?") == "terraform/production"
    assert _best("Who owns the CI workflows?") == ".github/workflows"
    assert _best("Who owned the restore workflow on 2024-09-01?") == (
        ".github/workflows/restore.yml")
    assert _best("Who owns the Cloud Foundry manifests?") == "backend/manifests"
    assert _best("Who owns the documentation?") == "docs"
    assert _best("Who owns the registrar app?") == "src/registrar"
    assert _best("Who owns checkout?") is None


def test_module_or_service() -> None:
    registrar = best_module("Who owns the registrar app?", MODULES)
    app = {"ceid": "service:app", "name": "app", "label": "Service", "mention": "app"}
    assert prefer_module("Who owns the registrar app?", registrar, app)  # 'app' is a head noun
    assert prefer_module("Who owns the registrar app?", registrar, None)
    web = {"ceid": "service:web", "name": "web", "label": "Service", "mention": "web"}
    docs = best_module("Who owns the web docs service?", MODULES)
    assert not prefer_module("Who owns the web docs service?", docs, web)  # a tie: the service
    assert not prefer_module("Who owns the web service?", None, web)


def _rule(pattern: str, line: int, handle: str, section: str = "") -> dict[str, Any]:
    return {"pattern": pattern, "section": section, "primary": True,
            "owner": {"ceid": f"team:{handle}", "name": handle, "handle": f"@org/{handle}"},
            "hop": {"evidence_ref": f".github/CODEOWNERS#L{line}@abc1234", "type": "OWNS"}}


def test_rules_in_effect_decide_a_path_with_no_live_node() -> None:
    rules = [_rule("/.github/CODEOWNERS", 3, "admins"), _rule("/terraform/meta/", 7, "admins")]
    assert covering_rows(rules, "backend/manifests", is_file=False) == []  # nobody then
    assert rules_checked(rules) == [".github/CODEOWNERS#L3@abc1234",
                                    ".github/CODEOWNERS#L7@abc1234"]
    catch_all = [_rule("*", 4, "platform"), _rule("docs/*", 7, "docs"),
                 _rule("/src/", 2, "dev", section="Backend")]
    won = covering_rows(catch_all, "src/registrar", is_file=False)
    assert sorted(r["owner"]["ceid"] for r in won) == ["team:dev", "team:platform"]
    assert [r["owner"]["ceid"] for r in covering_rows(catch_all, "docs", False)] == ["team:docs"]
    assert covering_rows([_rule("/ci/", 1, "x")], "ci", is_file=True) == []  # dir-only rule
