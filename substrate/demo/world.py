"""The state of the demo repository at one commit, and the files it renders to."""

from __future__ import annotations

from dataclasses import dataclass, field

from substrate.demo import content_adr as a
from substrate.demo import content_design as d
from substrate.demo import render
from substrate.demo.topology import INFRA, SERVICES, WAREHOUSE_DB, InfraSpec, ServiceSpec

ROOT_README = """\
# acme/shop

Monorepo of the acme online shop: one folder per service under `services/`, the local stack
in `docker-compose.yml`, the data platform in `k8s/`, decisions in `docs/adr`, post-mortems
in `docs/postmortems` and design documents in `docs/design`.
"""
SPECIAL_OWNERS = {
    "currency": "@jdoe",
    "feature-flags": "@mchen @acme/platform",
    "payment": "@acme/payments @rkumar",
    "tax": "priya@acme.example @acme/payments",
}
_HEAD_RULES = [
    ("# Code owners of acme/shop. The last matching pattern takes precedence.", ""),
    ("", ""),
    ("*", "@acme/platform"),
    ("*.md", "@acme/tech-writers"),
    ("/docs/", "@acme/platform @mchen"),
    ("/docs/postmortems/", "@acme/sre"),
    ("/k8s/", "@acme/platform @acme/data"),
    ("/.github/", "@acme/platform"),
    ("", ""),
    ("# services", ""),
]
_TAIL_RULES = [
    ("", ""),
    ("# every Dockerfile also needs a platform review", ""),
    ("/services/*/Dockerfile", "@acme/platform"),
]


def _is_service_rule(pattern: str) -> bool:
    return pattern.startswith("/services/") and pattern.endswith("/") and "*" not in pattern


def service_rule(svc: ServiceSpec) -> tuple[str, str]:
    return f"/services/{svc.name}/", SPECIAL_OWNERS.get(svc.name, f"@acme/{svc.team}")


@dataclass
class World:
    services: dict[str, ServiceSpec] = field(default_factory=dict)
    infra: list[InfraSpec] = field(default_factory=list)
    owners: list[tuple[str, str]] = field(default_factory=list)
    docs: dict[str, str] = field(default_factory=dict)
    dotenv_extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def initial(cls) -> World:
        services = {s.name: s for s in SERVICES}
        owners = _HEAD_RULES + [service_rule(s) for s in SERVICES] + _TAIL_RULES
        docs = {
            f"{a.ADR_DIR}/README.md": a.ADR_README,
            f"{a.ADR_DIR}/template.md": a.TEMPLATE,
            f"{a.ADR_DIR}/0001-record-architecture-decisions.md": a.ADR_0001,
            f"{a.ADR_DIR}/0002-one-database-per-service.md": a.ADR_0002,
            f"{d.DESIGN_DIR}/architecture-overview.md": d.OVERVIEW.replace("{extra}", ""),
        }
        return cls(services, [*INFRA, WAREHOUSE_DB], owners, docs)

    # --- changes ----------------------------------------------------------------------
    def set_env(self, name: str, **changes: str | None) -> None:
        self.services[name] = self.services[name].with_env(**changes)

    def add_service(self, svc: ServiceSpec) -> None:
        self.services[svc.name] = svc
        last = max(i for i, (p, _) in enumerate(self.owners) if _is_service_rule(p))
        self.owners.insert(last + 1, service_rule(svc))

    def remove_service(self, name: str) -> None:
        del self.services[name]
        self.owners = [r for r in self.owners if r[0] != f"/services/{name}/"]

    def set_owner(self, pattern: str, owners: str) -> None:
        self.owners = [(p, owners if p == pattern else o) for p, o in self.owners]

    # --- files ------------------------------------------------------------------------
    def files(self) -> dict[str, str]:
        services = list(self.services.values())
        out = {
            "README.md": ROOT_README,
            ".env": render.dotenv(self.dotenv_extra),
            "docker-compose.yml": render.compose_file(services, self.infra),
            "docker-compose.override.yml": render.OVERRIDE,
            ".github/CODEOWNERS": render.codeowners(self.owners),
        }
        out.update(render.k8s_files(services, self.infra))
        for svc in services:
            out[f"services/{svc.name}/README.md"] = render.readme(svc)
            out[f"services/{svc.name}/Dockerfile"] = render.dockerfile(svc)
        out.update(self.docs)
        return out
