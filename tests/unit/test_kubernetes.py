"""deploy/kubernetes is a kustomize base with the settings of compose.yaml's gateway: every
manifest valid by the Kubernetes schemas (kubernetes-validate's bundled JSON schemas, strict:
unknown fields are errors), three gateway replicas behind a Service, credentials only by
reference, the GDS jobs and the watch consumer single-instance."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gds_jobs.__main__ import JOBS
from substrate.settings import ENV_DEFAULTS, PROJECT_ROOT, Settings

BASE = PROJECT_ROOT / "deploy" / "kubernetes"
KUSTOMIZATION = yaml.safe_load((BASE / "kustomization.yaml").read_text())
COMPOSE_ENV: dict[str, str] = yaml.safe_load(
    (PROJECT_ROOT / "compose.yaml").read_text())["services"]["gateway"]["environment"]
SECRET = "substrate-credentials"
REQUIRED_SECRETS = {"NEO4J_PASSWORD", "POSTGRES_DSN", "REDIS_URL", "NATS_URL"}
OPTIONAL_SECRETS = {"UPSTREAM_IDENTITY_SECRET", "METRICS_TOKEN"}
CLUSTER_VALUES = {"NEO4J_URI", "ALLOWED_HOSTS"}  # differ from compose's on purpose
OLDEST_K8S = "1.29"  # batch/v1 CronJob, policy/v1 PDB, Job TTL: all GA long before

Manifest = dict[str, Any]


def load(name: str) -> list[Manifest]:
    return [d for d in yaml.safe_load_all((BASE / name).read_text()) if d]


MANIFESTS = [m for name in KUSTOMIZATION["resources"] for m in load(name)]


def one(kind: str, name: str) -> Manifest:
    (found,) = [m for m in MANIFESTS if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def pod_spec(manifest: Manifest) -> Manifest:
    spec = manifest["spec"]
    if manifest["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    pod: Manifest = spec["template"]["spec"]
    return pod


def workloads() -> list[Manifest]:
    return [m for m in MANIFESTS if m["kind"] in ("Deployment", "CronJob", "Job")]


def compose_default(value: str) -> str:
    found = re.fullmatch(r"\$\{\w+:-(.*)\}", value)
    return found[1] if found else value


def test_the_base_lists_every_manifest_of_the_folder() -> None:
    assert KUSTOMIZATION["kind"] == "Kustomization"
    files = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(KUSTOMIZATION["resources"]) == sorted(files)


@pytest.mark.parametrize("version", [OLDEST_K8S, kubernetes_validate.latest_version()])
def test_every_manifest_is_valid_by_the_kubernetes_schemas(version: str) -> None:
    for manifest in MANIFESTS:
        kubernetes_validate.validate(manifest, version, strict=True)


def test_the_validator_rejects_a_broken_manifest() -> None:
    gateway = one("Deployment", "substrate-gateway")
    for broken in ({**gateway, "spec": {**gateway["spec"], "replicas": "three"}},
                   {**gateway, "spec": {**gateway["spec"], "replica": 3}}):  # unknown field
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, kubernetes_validate.latest_version(),
                                         strict=True)


def test_configmap_has_the_compose_gateway_settings() -> None:
    data = one("ConfigMap", "substrate-config")["data"]
    assert set(data) <= set(ENV_DEFAULTS), set(data) - set(ENV_DEFAULTS)
    assert set(data) | REQUIRED_SECRETS | OPTIONAL_SECRETS == set(COMPOSE_ENV)
    assert not set(data) & (REQUIRED_SECRETS | OPTIONAL_SECRETS)
    for name, value in data.items():
        if name not in CLUSTER_VALUES:
            assert value == compose_default(str(COMPOSE_ENV[name])), name


def test_configmap_reads_as_settings_with_a_routing_uri() -> None:
    data = one("ConfigMap", "substrate-config")["data"]
    settings = Settings.from_env({**data, "NEO4J_PASSWORD": "x",
                                  "POSTGRES_DSN": "postgresql://postgres:x@postgres/postgres",
                                  "REDIS_URL": "redis://substrate:x@redis:6379/0",
                                  "NATS_URL": "nats://a:4222,nats://b:4222"})
    assert settings.neo4j_uri.startswith("neo4j://")
    assert settings.gateway_port == 8080
    assert "substrate-gateway" in settings.allowed_hosts


def test_every_workload_reads_the_configmap_and_the_credentials_by_reference() -> None:
    assert not [m for m in MANIFESTS if m["kind"] == "Secret"]  # no secret values here
    for manifest in workloads():
        for container in pod_spec(manifest)["containers"]:
            assert container["envFrom"] == [{"configMapRef": {"name": "substrate-config"}}]
            refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
            assert all("value" not in e for e in container["env"])
            assert REQUIRED_SECRETS <= set(refs) <= REQUIRED_SECRETS | OPTIONAL_SECRETS
            for name, ref in refs.items():
                assert (ref["name"], ref["key"]) == (SECRET, name)
                assert ref.get("optional", False) == (name in OPTIONAL_SECRETS)
            assert container["image"] == "substrate"
    assert [i["name"] for i in KUSTOMIZATION["images"]] == ["substrate"]


def test_three_gateway_replicas_ready_on_readyz_behind_a_service() -> None:
    gateway = one("Deployment", "substrate-gateway")
    assert gateway["spec"]["replicas"] == 3
    (container,) = pod_spec(gateway)["containers"]
    assert container["command"] == ["substrate", "serve"]
    assert {e["name"] for e in container["env"]} == REQUIRED_SECRETS | OPTIONAL_SECRETS
    data = one("ConfigMap", "substrate-config")["data"]
    (port,) = container["ports"]
    assert port["containerPort"] == int(data["GATEWAY_PORT"])
    readiness = container["readinessProbe"]["httpGet"]
    assert readiness["path"] == "/readyz"
    assert readiness["port"] == port["name"]
    hosts = data["ALLOWED_HOSTS"].split(",")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        (header,) = container[probe]["httpGet"]["httpHeaders"]
        assert header["name"] == "Host" and header["value"] in hosts  # else 400
    service = one("Service", "substrate-gateway")
    assert service["spec"]["selector"] == gateway["spec"]["template"]["metadata"]["labels"]
    assert service["metadata"]["name"] in hosts
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert one("PodDisruptionBudget", "substrate-gateway")["spec"]["minAvailable"] < 3


def crontab_jobs() -> set[str]:
    text = (PROJECT_ROOT / "gds_jobs" / "crontab.example").read_text()
    return {m[1] for line in text.splitlines() if not line.startswith("#")
            if (m := re.search(r"-m gds_jobs (\w+)", line))}


def test_gds_jobs_are_cronjobs_one_run_at_a_time() -> None:
    cronjobs = [m for m in MANIFESTS if m["kind"] == "CronJob"]
    jobs = set()
    for cronjob in cronjobs:
        assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
        (container,) = pod_spec(cronjob)["containers"]
        command = " ".join(container["command"])
        jobs |= set(re.findall(r"-m gds_jobs (\w+)", command))
    assert jobs == crontab_jobs() and jobs <= set(JOBS)


def test_the_watch_consumer_and_the_migrations_run_once() -> None:
    watch = one("Deployment", "substrate-gds-watch")
    assert watch["spec"]["replicas"] == 1
    assert watch["spec"]["strategy"] == {"type": "Recreate"}  # never two, even in a rollout
    (container,) = pod_spec(watch)["containers"]
    assert container["command"] == ["python", "-m", "gds_jobs", "watch"]
    migrate = one("Job", "substrate-migrate")
    (container,) = pod_spec(migrate)["containers"]
    assert container["command"] == ["substrate", "migrate", "up"]
    assert pod_spec(migrate)["restartPolicy"] == "Never"


def test_readme_layout_names_the_deploy_folder() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "| `deploy/` |" in readme
    assert Path("deploy/kubernetes").as_posix() in readme
