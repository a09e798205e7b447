"""Cloud Foundry manifests → a Service per application, Infrastructure per bound service
instance with DEPENDS_ON at the binding's line, processes and routes as attributes, ``((var))``
resolved from a vars file only when one value exists, and files that are no CF manifest
ignored; the replay's path filter keeps manifests and vars files."""

from __future__ import annotations

from pathlib import Path

import pytest

from substrate.connectors.cloudfoundry import instance_kind, is_cloudfoundry_path
from substrate.connectors.gitrepo import batch_at
from substrate.connectors.path_filter import READERS, is_relevant
from substrate.demo.gitwriter import commit_tree, init_repo
from substrate.graph.records import GraphBatch

MANIFEST = """\
---
applications:
- name: notify-api
  buildpacks:
    - python_buildpack
  memory: 1G
  instances: ((api_instances))
  routes:
    - route: notify-api.cloudapps.digital
    - route: notify-api.apps.internal
  processes:
    - type: web
      command: gunicorn application
    - type: worker
      command: celery worker
  env:
    SECRET_KEY: hunter2
    NOTIFY_ENVIRONMENT: ((env))
  services:
    - notify-db
    - name: ((redis_instance))
    - ((env))-queue
- name: notify-admin
  docker:
    image: ghcr.io/alphagov/notify-admin:1.0
  env:
    API_HOST_NAME: https://notify-api.apps.internal:8080
  services:
    - notify-db
- name: notify-((env))-worker
"""
VARS = "api_instances: 2\nredis_instance: notify-redis\n"
STAGING = "env: staging\napi_instances: 2\n"
PRODUCTION = "env: production\n"
# a WebExtension's manifest and a manifest whose applications are not mappings with names
EXTENSION = '{"manifest_version": 3, "name": "notify-helper", "services": ["ghost-db"]}\n'
NOT_CF = "applications:\n  - path: .\n    services: [orphan-db]\n"
BINDING = """\
applications:
- name: notify-template-preview
  path: app
  services:
    - notify-admin
    - csv-upload-bucket
"""
COMPOSE = "services:\n  notify-api:\n    image: notify/api:dev\n"


def line(text: str, needle: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), start=1) if needle in t)


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> tuple[GraphBatch, str]:
    repo = init_repo(tmp_path_factory.mktemp("cf") / "repo")
    sha = commit_tree(repo, {
        "manifest.yml": MANIFEST, "vars.yml": VARS, "docker-compose.yml": COMPOSE,
        "deploy-config/staging.yml": STAGING, "deploy-config/production.yml": PRODUCTION,
        "extension/manifest.yaml": EXTENSION, "tools/manifest.yml": NOT_CF,
        "preview/manifest-production.yml": BINDING, "preview/app/Dockerfile": "FROM python:3.12\n",
    }, "init", "2026-08-03T09:00:00Z")
    return batch_at(repo), sha[:7]


def _node(batch: GraphBatch, cid: str) -> dict[str, object]:
    return next(n.props for n in batch.nodes if n.ceid == cid)


def _edges(batch: GraphBatch) -> dict[tuple[str, str, str], str]:
    return {(e.type, e.src, e.dst): e.evidence_ref for e in batch.edges}


def test_bound_service_instances_are_infrastructure_the_app_depends_on(
    parsed: tuple[GraphBatch, str],
) -> None:
    batch, short = parsed
    edges = _edges(batch)
    at = f"manifest.yml#L{line(MANIFEST, '- notify-db')}@{short}"
    assert edges[("DEPENDS_ON", "service:notify-api", "infra:notify-db")] == at
    assert _node(batch, "infra:notify-db")["kind"] == "database"
    assert _node(batch, "infra:notify-db")["deployed_by"] == ["cloudfoundry"]
    # ((redis_instance)) has one value, in vars.yml: resolved, that line beside the binding's
    redis = next(e for e in batch.edges if e.dst == "infra:notify-redis")
    assert (redis.type, redis.src, redis.props["via"]) == (
        "DEPENDS_ON", "service:notify-api", "service_binding")
    assert redis.evidence_ref == f"manifest.yml#L{line(MANIFEST, 'redis_instance')}@{short}"
    assert redis.props["evidence_refs"] == [redis.evidence_ref, f"vars.yml#L2@{short}"]
    assert _node(batch, "infra:notify-redis")["kind"] == "cache"


def test_processes_routes_and_sizes_are_attributes_with_lines(
    parsed: tuple[GraphBatch, str],
) -> None:
    batch, short = parsed
    api = _node(batch, "service:notify-api")
    assert api["processes"] == ["web", "worker"] and api["buildpacks"] == ["python_buildpack"]
    assert api["routes"] == ["notify-api.apps.internal", "notify-api.cloudapps.digital"]
    assert (api["memory"], api["instances"]) == ("1G", "2")  # identical in two vars files
    refs = set(api["attribute_refs"])  # type: ignore[call-overload]
    for kind, value, needle in [("process", "worker", "type: worker"),
                                ("address", "notify-api.apps.internal", "route: notify-api.apps"),
                                ("instances", "2", "instances:"), ("memory", "1G", "memory:")]:
        assert f"{kind}|{value}|manifest.yml#L{line(MANIFEST, needle)}@{short}" in refs
    assert "SECRET_KEY=***" in api["env"]  # type: ignore[operator]
    assert not any(r.startswith("env|SECRET_KEY") for r in refs)
    # ((env)) has two values (staging, production): its text is kept
    assert "NOTIFY_ENVIRONMENT=((env))" in api["env"]  # type: ignore[operator]
    # the same application in a Compose file is the same Service
    assert api["deployed_by"] == ["cloudfoundry", "compose"]


def test_a_name_whose_placeholder_varies_by_environment_drops_it(
        parsed: tuple[GraphBatch, str]) -> None:
    """``notify-((env))-worker`` with env staging or production is the notify-worker every
    environment deploys; ``((env))-queue`` the queue; no name keeps a placeholder."""
    batch, _ = parsed
    names = {n.ceid for n in batch.nodes} | {e.dst for e in batch.edges}
    assert not [c for c in names if "((" in c or c.endswith(("env-queue", "env-worker"))]
    assert "service:notify-worker" in names and "infra:queue" in names
    assert len([n for n in batch.nodes if n.label == "Service"]) == 4


def test_a_name_that_is_only_a_placeholder_makes_no_entity() -> None:
    from substrate.connectors.cloudfoundry import Resolved
    from substrate.connectors.yamlnodes import Fact
    only = Resolved(Fact("((app_name))", "manifest.yml", 3))
    assert only.as_name() is only and only.as_name().unresolved


def test_files_that_are_no_cf_manifest_are_ignored(parsed: tuple[GraphBatch, str]) -> None:
    batch, _ = parsed
    names = {n.ceid for n in batch.nodes} | {e.dst for e in batch.edges}
    assert not names & {"infra:ghost-db", "infra:orphan-db", "service:notify-helper"}


def test_an_env_value_naming_another_apps_route_is_a_call(parsed: tuple[GraphBatch, str]) -> None:
    batch, short = parsed
    key = ("CALLS", "service:notify-admin", "service:notify-api")
    call = next(e for e in batch.edges if (e.type, e.src, e.dst) == key)
    assert call.evidence_ref == f"manifest.yml#L{line(MANIFEST, 'API_HOST_NAME')}@{short}"
    assert (call.props["via"], call.props["var"], call.props["port"]) == (
        "env", "API_HOST_NAME", 8080)
    assert _node(batch, "service:notify-admin")["image"] == "ghcr.io/alphagov/notify-admin:1.0"


def test_a_binding_to_another_application_is_a_call(parsed: tuple[GraphBatch, str]) -> None:
    batch, short = parsed
    edges = _edges(batch)
    path = "preview/manifest-production.yml"
    assert edges[("CALLS", "service:notify-template-preview", "service:notify-admin")] \
        == f"{path}#L{line(BINDING, '- notify-admin')}@{short}"
    assert ("DEPENDS_ON", "service:notify-template-preview", "infra:csv-upload-bucket") in edges
    assert "infra:notify-admin" not in {n.ceid for n in batch.nodes}
    # ``path:`` (relative to the manifest) is the application's source folder
    preview = _node(batch, "service:notify-template-preview")
    assert (preview["build_context"], preview["path"]) == ("preview/app", "preview/app/")


@pytest.mark.parametrize(("name", "kind"), [
    ("notify-rds-postgres", "database"), ("app-redis-service", "cache"), ("csv-bucket", "storage"),
    ("notify-sqs", "queue"), ("notify-ses", "email"), ("logit-ssl-drain", None)])
def test_an_instance_kind_is_read_from_its_name(name: str, kind: str | None) -> None:
    assert instance_kind(name) == kind


def test_the_replay_filter_keeps_manifests_and_vars_files() -> None:
    cf = [r for r in READERS if r.name == "cloudfoundry"]
    for path in ("manifest.yml", "backend/manifest.yaml", "manifests/manifest-staging.yml",
                 "deploy/notify-manifest.yml", "deploy-config/staging.yml", "vars.yml"):
        assert is_relevant(("M", path), cf) and is_cloudfoundry_path(path)
    assert not is_cloudfoundry_path("app/main.py")
    assert not is_cloudfoundry_path(".github/workflows/deploy.yml")


def test_one_app_in_a_manifest_per_environment_is_one_service(tmp_path: Path) -> None:
    """manage.get.gov has ops/manifests/manifest-<env>.yaml for each of ~25 environments, each
    naming getgov-<env> bound to getgov-<env>-database: one application, one database; a
    template's getgov-ENVIRONMENT too."""
    repo = init_repo(tmp_path / "repo")
    app = ("applications:\n- name: getgov-{e}\n  services:\n    - getgov-credentials\n"
           "    - getgov-{e}-database\n")
    commit_tree(repo, {f"ops/manifests/manifest-{e}.yaml": app.format(e=e)
                       for e in ("staging", "stable", "aa")}
                | {"ops/scripts/manifest-sandbox-template.yaml": app.format(e="ENVIRONMENT")},
                "envs", "2026-08-03T09:00:00Z")
    batch = batch_at(repo)
    services = sorted(n.ceid for n in batch.nodes if n.label == "Service")
    assert services == ["service:getgov"]
    bound = sorted({e.dst for e in batch.edges if e.type == "DEPENDS_ON"})
    assert bound == ["infra:getgov-credentials", "infra:getgov-database"]


def test_a_lone_manifest_named_for_its_app_names_no_environment() -> None:
    from substrate.connectors.cloudfoundry import manifest_envs
    assert manifest_envs(["backend/manifests/manifest-fac.yml"]) == {}  # GSA-TTS/FAC
    assert manifest_envs(["deploy/manifest-staging.yml"]) == {
        "deploy/manifest-staging.yml": "staging"}
    assert manifest_envs(["ops/manifest-aa.yaml", "ops/manifest-cw.yaml", "manifest.yml"]) == {
        "ops/manifest-aa.yaml": "aa", "ops/manifest-cw.yaml": "cw"}


def test_a_new_environments_manifest_changes_nothing(tmp_path: Path) -> None:
    """A developer's sandbox manifest added to manage.get.gov's ops/manifests declares the
    same application again: the repository's batch is the same before and after it (no
    snapshot in a replay), read from the first manifest of the family."""
    app = ("applications:\n- name: getgov-{e}\n  routes:\n    - route: getgov-{e}.app.cloud.gov\n"
           "  services:\n    - getgov-{e}-database\n")
    repo = init_repo(tmp_path / "repo")
    files = {f"ops/manifests/manifest-{e}.yaml": app.format(e=e) for e in ("aa", "stable")}
    commit_tree(repo, files, "two", "2026-08-03T09:00:00Z")
    before = batch_at(repo)
    commit_tree(repo, {**files, "ops/manifests/manifest-zz.yaml": app.format(e="zz")}, "three",
                "2026-08-04T09:00:00Z")
    after = batch_at(repo)

    def cf(b: GraphBatch) -> list[tuple[str, str]]:
        return sorted((n.ceid, repr(sorted(n.props.items()))) for n in b.nodes
                      if "cloudfoundry" in (n.props.get("deployed_by") or ()))
    assert [c for c, _ in cf(after)] == ["infra:getgov-database", "service:getgov"]
    assert cf(before) == cf(after)  # evidence by blame: the first manifest's lines, unchanged


def test_a_buildpack_states_the_language() -> None:
    from substrate.connectors.cloudfoundry import BUILDPACK_LANGUAGES

    def language(pack: str) -> str | None:
        return next((lang for word, lang in BUILDPACK_LANGUAGES if word in pack), None)
    assert language("python_buildpack") == "Python"
    assert language("https://github.com/cloudfoundry/nodejs-buildpack") == "JavaScript"
    assert language("https://github.com/cloudfoundry/apt-buildpack") is None
    assert language("go_buildpack") == "Go" and language("java_buildpack") == "Java"
