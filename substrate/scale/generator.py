"""A seeded generator of organisations: pure functions, no I/O, the same output per seed.

Shape (per ``n`` services; the ontology's labels and relationship types only):

* ``Team`` (n/12), ``Developer`` (n/2, ``MEMBER_OF`` a team), ``Repository`` (n/4; a service
  is ``PART_OF`` one), ``Infrastructure`` (n/20, databases, queues, caches);
* ownership: every team ``OWNS`` and is ``PRIMARY_OWNER`` of at least one service (the first
  services are dealt round-robin, the rest by a skewed draw); 30 % of services are also
  ``OWNS``-ed by a developer of that team;
* dependencies: ``CALLS``/``DEPENDS_ON`` between services and ``DEPENDS_ON`` infrastructure,
  targets drawn from a Zipf law (exponent ``ZIPF_S``) over a random ranking, so a few hubs
  carry most of the fan-in; their number makes the edge total exactly the target;
* ``DecisionNode`` ADRs in supersession chains (newer ``SUPERSEDES`` older, so chains are
  acyclic), ``WHY``/``MENTIONS`` services; ``FailurePattern`` incidents ``AFFECTED`` services
  and ``CAUSED_BY`` a pull request; ``PullRequest`` (``AUTHORED`` by a developer, ``CHANGES``
  services, ``LINKS_TO`` an issue); ``ProjectItem`` epics and issues (``PART_OF``), an
  ``IntentAssertion`` per epic (``LINKS_TO``, ``ASSERTS`` services); ``MemoryNode`` review notes;
  ``Document`` with ``Chunk`` nodes (``HAS_CHUNK``, ``SEQUENCE``, ``MENTIONS``);
* history: epoch 0 is the organisation as it stood; epochs 1.. (weekly) add pull requests,
  ADRs, incidents, documents and the dependencies those pull requests introduced.

Every edge carries an ``evidence_ref`` in the style of the connectors (``path#L<n>@<sha>``,
``github:<org>/<repo>#pr-<n>``, ``jira:<KEY>``, ``hr:<org>/teams``).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

SIZES = {"S": 10_000, "M": 200_000, "L": 2_000_000}
ZIPF_S = 0.9
EPOCHS = 12
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ORG = "acme"
EDGES_PER_SERVICE = 20  # all kinds together, to size the organisation
DEPS_PER_SERVICE_MIN = 3
LATE_DEPENDENCIES = 0.1  # share of dependencies introduced by pull requests during history

DOMAINS = (
    "billing", "payments", "checkout", "catalog", "search", "identity", "ledger", "orders",
    "shipping", "pricing", "fraud", "loyalty", "reviews", "inventory", "returns", "tax",
    "invoicing", "notification", "email", "analytics", "reporting", "media", "profile",
    "session", "wishlist", "promotions", "recommendation", "currency", "audit", "gateway",
    "routing", "scheduler", "storage", "messaging", "compliance", "onboarding", "support",
    "partner", "warehouse", "forecast",
)  # fmt: skip
ROLES = (
    "api", "worker", "service", "bff", "sync", "store", "engine", "proxy", "adapter", "indexer",
    "router", "hub", "feed", "cache", "ingest", "export", "planner", "monitor", "registry",
    "broker",
)  # fmt: skip
INFRA_KINDS = ("database", "queue", "cache", "database", "search", "queue", "storage")
TOPICS = (
    "synchronous calls", "event sourcing", "retries and timeouts", "schema ownership",
    "caching policy", "idempotency keys", "authentication tokens", "data retention",
    "rate limiting", "observability", "deployment strategy", "API versioning",
)  # fmt: skip


@dataclass(frozen=True)
class Node:
    label: str
    ceid: str
    props: dict[str, Any]
    provenance: str


@dataclass(frozen=True)
class Edge:
    type: str
    src: str
    dst: str
    evidence_ref: str
    confidence: float = 1.0


@dataclass
class Epoch:
    valid_at: datetime
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


@dataclass
class Org:
    """A generated organisation; ``landmarks`` names entities to ask about in benchmarks."""

    target_edges: int
    seed: int
    services: list[str]
    teams: list[str]
    epochs: list[Epoch]
    landmarks: dict[str, Any] = field(default_factory=dict)

    def nodes(self) -> list[Node]:
        return [n for e in self.epochs for n in e.nodes]

    def edges(self) -> list[Edge]:
        return [x for e in self.epochs for x in e.edges]

    def records(self, epoch: Epoch, source: str = "scale") -> list[dict[str, Any]]:
        """One epoch as JSONL records (``substrate.connectors.jsonl_format``), nodes first."""
        out: list[dict[str, Any]] = [
            {"kind": "node", "label": n.label, "ceid": n.ceid, "props": n.props,
             "provenance": [n.provenance]}
            for n in epoch.nodes
        ]  # fmt: skip
        out += [
            {"kind": "edge", "type": e.type, "src": e.src, "dst": e.dst,
             "evidence_ref": e.evidence_ref, "confidence": e.confidence, "source": source}
            for e in epoch.edges
        ]  # fmt: skip
        return out


class ZipfDraw:
    """Draws indexes ``0..n-1`` with probability ∝ 1/(rank+1)^s over a random ranking."""

    def __init__(self, rng: random.Random, n: int, s: float = ZIPF_S) -> None:
        self.rng = rng
        order = list(range(n))
        rng.shuffle(order)
        self.order = order
        self.cum = list(itertools.accumulate(1.0 / (k + 1) ** s for k in range(n)))

    def __call__(self) -> int:
        x = self.rng.random() * self.cum[-1]
        return self.order[min(bisect_left(self.cum, x), len(self.order) - 1)]


def sha(seed: int, *parts: object) -> str:
    """A stable 7-hex commit id for evidence refs."""
    return hashlib.sha1(":".join(map(str, (seed, *parts))).encode()).hexdigest()[:7]


def service_names(n: int) -> list[str]:
    """``n`` unique, readable service names (``billing-api``, ..., ``billing-api-2``)."""
    base = [f"{d}-{r}" for r in ROLES for d in DOMAINS]
    return [base[i % len(base)] + (f"-{i // len(base) + 1}" if i >= len(base) else "")
            for i in range(n)]  # fmt: skip


def size_of(name_or_edges: str | int) -> int:
    if isinstance(name_or_edges, int):
        return name_or_edges
    if name_or_edges.upper() in SIZES:
        return SIZES[name_or_edges.upper()]
    return int(name_or_edges)


class _Builder:
    def __init__(self, target: int, seed: int) -> None:
        self.target, self.seed = target, seed
        self.rng = random.Random(seed)
        self.n = max(20, target // EDGES_PER_SERVICE)
        self.epochs = [Epoch(START + timedelta(days=7 * k)) for k in range(EPOCHS)]
        self.edge_keys: set[tuple[str, str, str]] = set()
        self.landmarks: dict[str, Any] = {}

    # --- helpers --------------------------------------------------------------------------
    def node(self, epoch: int, label: str, ceid: str, prov: str, **props: Any) -> str:
        self.epochs[epoch].nodes.append(Node(label, ceid, props, prov))
        return ceid

    def edge(self, epoch: int, type_: str, src: str, dst: str, ref: str) -> bool:
        key = (type_, src, dst)
        if src == dst or key in self.edge_keys:
            return False
        self.edge_keys.add(key)
        self.epochs[epoch].edges.append(Edge(type_, src, dst, ref))
        return True

    def ref(self, epoch: int, path: str, line: int) -> str:
        return f"{path}#L{line}@{sha(self.seed, epoch, path)}"

    def later_epoch(self) -> int:
        return self.rng.randrange(1, EPOCHS)

    # --- the organisation -------------------------------------------------------------------
    def people(self) -> None:
        rng, n = self.rng, self.n
        self.teams = [self.node(0, "Team", f"team:t{i:04d}-{DOMAINS[i % len(DOMAINS)]}",
                                "hr:acme/teams", name=f"t{i:04d}-{DOMAINS[i % len(DOMAINS)]}",
                                handle=f"@{ORG}/t{i:04d}")
                      for i in range(max(3, n // 12))]  # fmt: skip
        self.devs = [self.node(0, "Developer", f"dev:d{i:05d}", "hr:acme/people",
                               name=f"d{i:05d}", email=f"d{i:05d}@{ORG}.example")
                     for i in range(max(6, n // 2))]  # fmt: skip
        self.team_devs: dict[str, list[str]] = {t: [] for t in self.teams}
        for i, dev in enumerate(self.devs):
            team = self.teams[i % len(self.teams)] if i < len(self.teams) else rng.choice(
                self.teams)
            self.team_devs[team].append(dev)
            self.edge(0, "MEMBER_OF", dev, team, f"hr:{ORG}/teams#{team.split(':')[1]}")

    def services_and_owners(self) -> None:
        rng, n = self.rng, self.n
        names = service_names(n)
        repos = [self.node(0, "Repository", f"repo:{ORG}-r{i:04d}", f"git:{ORG}/r{i:04d}",
                           name=f"{ORG}/r{i:04d}") for i in range(max(1, n // 4))]
        kinds = [INFRA_KINDS[i % len(INFRA_KINDS)] for i in range(max(5, n // 20))]
        self.infra = [self.node(0, "Infrastructure", f"infra:{k}-{i:04d}", f"git:{ORG}/infra",
                                name=f"{k}-{i:04d}", kind=k) for i, k in enumerate(kinds)]
        team_draw = ZipfDraw(rng, len(self.teams), 0.8)
        self.services, self.owner = [], {}
        for i, name in enumerate(names):
            repo = repos[i % len(repos)]
            cid = self.node(0, "Service", f"service:{name}", f"git:{repo[5:]}", name=name,
                            summary=f"The {name.replace('-', ' ')} of {ORG}.",
                            language=rng.choice(("go", "java", "python", "kotlin", "node")))
            self.services.append(cid)
            self.edge(0, "PART_OF", cid, repo, self.ref(0, f"services/{name}/README.md", 1))
            team = self.teams[i] if i < len(self.teams) else self.teams[team_draw()]
            self.owner[cid] = team
            line = i % 400 + 1
            self.edge(0, "OWNS", team, cid, self.ref(0, ".github/CODEOWNERS", line))
            self.edge(0, "PRIMARY_OWNER", team, cid, self.ref(0, ".github/CODEOWNERS", line))
            if rng.random() < 0.3 and self.team_devs[team]:
                dev = rng.choice(self.team_devs[team])
                self.edge(0, "OWNS", dev, cid, self.ref(0, ".github/CODEOWNERS", line))

    def planning(self) -> None:
        rng, n = self.rng, self.n
        self.epics, self.issues = [], []
        draw = ZipfDraw(rng, n)
        for i in range(max(2, n // 20)):
            key = f"PLAT-{i + 1}"
            epic = self.node(0, "ProjectItem", f"item:plat-{i + 1}", f"jira:{key}",
                             name=key, kind="epic", title=f"Epic {key}",
                             description=f"Improve {rng.choice(TOPICS)} across services.")
            self.epics.append(epic)
            intent = self.node(0, "IntentAssertion", f"intent:i{i:05d}", f"jira:{key}",
                               name=f"intent of {key}")
            self.edge(0, "LINKS_TO", epic, intent, f"jira:{key}")
            for _ in range(rng.randint(3, 5)):
                self.edge(0, "ASSERTS", intent, self.services[draw()], f"jira:{key}#intent")
        for i in range(max(4, n // 2)):
            epic = rng.choice(self.epics)
            key = f"SHOP-{i + 1}"
            issue = self.node(0, "ProjectItem", f"item:shop-{i + 1}", f"jira:{key}",
                              name=key, kind="issue", title=f"Issue {key}",
                              description=f"Change {rng.choice(TOPICS)} in a service.")
            self.issues.append(issue)
            self.edge(0, "PART_OF", issue, epic, f"jira:{key}")

    def pull_requests(self) -> None:
        rng = self.rng
        self.prs: list[tuple[int, str]] = []
        by_team: dict[str, list[str]] = {t: [] for t in self.teams}
        for svc, team in self.owner.items():
            by_team[team].append(svc)
        for i in range(self.n * 2):
            epoch = self.later_epoch()
            number = 1000 + i
            dev = rng.choice(self.devs)
            team = rng.choice(self.teams)
            pr = self.node(epoch, "PullRequest", f"pr:{number}", f"github:{ORG}/r#pr-{number}",
                           name=f"PR #{number}", number=number, title=f"Change {number}",
                           summary=f"Adjust {rng.choice(TOPICS)}.")
            ref = f"github:{ORG}/r#pr-{number}"
            self.edge(epoch, "AUTHORED", dev, pr, ref)
            for svc in rng.sample(by_team[team], min(len(by_team[team]), rng.randint(1, 2))):
                self.edge(epoch, "CHANGES", pr, svc, ref)
            self.edge(epoch, "LINKS_TO", pr, rng.choice(self.issues), ref)
            self.prs.append((epoch, pr))

    def decisions(self) -> None:
        rng, draw = self.rng, ZipfDraw(self.rng, self.n)
        number, self.chains = 0, []
        for _ in range(max(2, self.n // 12)):
            topic = rng.choice(TOPICS)
            chain: list[str] = []
            epoch = 0
            for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
                number += 1
                epoch = min(EPOCHS - 1, epoch + rng.randint(0, 3))
                path = f"docs/adr/{number:04d}-{topic.replace(' ', '-')}.md"
                adr = self.node(epoch, "DecisionNode", f"adr:{number:04d}",
                                self.ref(epoch, path, 1), name=f"ADR-{number:04d}: {topic}",
                                number=number, status="accepted", path=path,
                                summary=f"We decide on {topic}.")
                for k, svc in enumerate(dict.fromkeys(self.services[draw()] for _ in range(2))):
                    self.edge(epoch, "WHY", adr, svc, self.ref(epoch, path, 6 + k))
                self.edge(epoch, "MENTIONS", adr, self.services[draw()],
                          self.ref(epoch, path, 12))
                if chain:
                    self.edge(epoch, "SUPERSEDES", adr, chain[-1], self.ref(epoch, path, 3))
                chain.append(adr)
            self.chains.append(chain)
        superseded = {c for chain in self.chains for c in chain[:-1]}
        for stage in self.epochs:
            for i, node in enumerate(stage.nodes):
                if node.ceid in superseded:
                    stage.nodes[i] = Node(node.label, node.ceid,
                                          {**node.props, "status": "superseded"}, node.provenance)

    def incidents(self) -> None:
        rng, draw = self.rng, ZipfDraw(self.rng, self.n)
        for i in range(max(2, self.n // 12)):
            epoch, pr = rng.choice(self.prs)
            when = self.epochs[epoch].valid_at + timedelta(days=rng.randint(1, 6))
            svc = self.services[draw()]
            name = f"{when:%Y-%m-%d}-{svc.split(':')[1]}-i{i}"
            path = f"docs/postmortems/{name}.md"
            inc = self.node(epoch, "FailurePattern", f"incident:{name}",
                            self.ref(epoch, path, 1), name=f"{svc.split(':')[1]} outage {i}",
                            date=when.isoformat(), severity=rng.choice(("SEV1", "SEV2", "SEV3")),
                            summary=f"{svc.split(':')[1]} degraded after a change.", path=path)
            self.edge(epoch, "AFFECTED", inc, svc, self.ref(epoch, path, 9))
            for k in range(rng.randint(0, 2)):
                self.edge(epoch, "AFFECTED", inc, self.services[draw()],
                          self.ref(epoch, path, 10 + k))
            self.edge(epoch, "CAUSED_BY", inc, pr, self.ref(epoch, path, 20))

    def documents(self) -> None:
        rng, draw = self.rng, ZipfDraw(self.rng, self.n)
        for i in range(max(2, self.n // 10)):
            epoch = rng.randrange(EPOCHS)
            path = f"docs/design/d{i:05d}.md"
            doc = self.node(epoch, "Document", f"doc:d{i:05d}", self.ref(epoch, path, 1),
                            name=f"Design d{i:05d}", path=path)
            chunks = [self.node(epoch, "Chunk", f"chunk:d{i:05d}:{k}", self.ref(epoch, path, 1),
                                name=f"d{i:05d} part {k}",
                                text=f"Section {k} on {rng.choice(TOPICS)}.")
                      for k in range(3)]  # fmt: skip
            for k, chunk in enumerate(chunks):
                self.edge(epoch, "HAS_CHUNK", doc, chunk, self.ref(epoch, path, 1 + 10 * k))
                if k:
                    self.edge(epoch, "SEQUENCE", chunks[k - 1], chunk,
                              self.ref(epoch, path, 1 + 10 * k))
            self.edge(epoch, "MENTIONS", doc, self.services[draw()], self.ref(epoch, path, 4))
        for i in range(max(2, self.n // 10)):
            epoch, pr = rng.choice(self.prs)
            mem = self.node(epoch, "MemoryNode", f"memory:m{i:05d}", f"{pr}#review",
                            name=f"review note {i}", text=f"Watch {rng.choice(TOPICS)}.")
            self.edge(epoch, "PART_OF", mem, pr, f"github:{ORG}/r#{pr}-review")
            self.edge(epoch, rng.choice(("WHY", "MENTIONS")), mem, self.services[draw()],
                      f"github:{ORG}/r#{pr}-review")

    def dependencies(self) -> None:
        """As many CALLS/DEPENDS_ON edges as make the total exactly the target."""
        rng = self.rng
        missing = self.target - len(self.edge_keys)
        if missing < DEPS_PER_SERVICE_MIN * self.n // 2:
            raise ValueError(f"target {self.target} too small for {self.n} services")
        to_service, to_infra = ZipfDraw(rng, self.n), ZipfDraw(rng, len(self.infra))
        added = 0
        while added < missing:
            src_i = rng.randrange(self.n)
            src = self.services[src_i]
            if rng.random() < 0.2:
                type_, dst = "DEPENDS_ON", self.infra[to_infra()]
            else:
                type_, dst = rng.choice(("CALLS", "CALLS", "DEPENDS_ON")), self.services[
                    to_service()]
            if rng.random() < LATE_DEPENDENCIES:
                epoch, pr = rng.choice(self.prs)
                ref = f"github:{ORG}/r#pr-{pr.split(':')[1]}"
            else:
                epoch = 0
                ref = self.ref(0, f"deploy/{src.split(':')[1]}.yaml", 10 + added % 90)
            added += self.edge(epoch, type_, src, dst, ref)

    def build(self) -> Org:
        self.people()
        self.services_and_owners()
        self.planning()
        self.pull_requests()
        self.decisions()
        self.incidents()
        self.documents()
        self.dependencies()
        org = Org(self.target, self.seed, self.services, self.teams, self.epochs)
        org.landmarks = landmarks(org, self.chains)
        return org


def inbound_counts(org: Org, types: tuple[str, ...] = ("CALLS", "DEPENDS_ON")) -> dict[str, int]:
    """Inbound dependency edges per service (every service present, zeros included)."""
    counts = dict.fromkeys(org.services, 0)
    for e in org.edges():
        if e.type in types and e.dst in counts:
            counts[e.dst] += 1
    return counts


def gini(values: list[int]) -> float:
    ordered = sorted(values)
    n, total = len(ordered), sum(ordered)
    if n == 0 or total == 0:
        return 0.0
    weighted = sum((i + 1) * v for i, v in enumerate(ordered))
    return (2 * weighted) / (n * total) - (n + 1) / n


def landmarks(org: Org, chains: list[list[str]]) -> dict[str, Any]:
    """Entities to ask about: the biggest hub, a chained ADR's service, an incident, ..."""
    fan_in = inbound_counts(org)
    hub = max(fan_in, key=lambda s: (fan_in[s], s))
    nodes = {n.ceid: n for n in org.nodes()}
    edges = org.edges()
    longest = max(chains, key=len)
    why = next(e.dst for e in edges if e.type == "WHY" and e.src == longest[-1])
    incident = next(e for e in edges if e.type == "AFFECTED")
    linked = next(e for e in edges if e.type == "LINKS_TO" and e.src.startswith("pr:"))
    epic = next(e.src for e in edges if e.type == "LINKS_TO" and e.src.startswith("item:"))
    owned = next(e.dst for e in edges if e.type == "OWNS" and e.src.startswith("dev:"))
    return {
        "hub": hub, "hub_fan_in": fan_in[hub], "owned_service": owned, "why_service": why,
        "adr_chain": longest, "adr_topic": nodes[longest[-1]].props["name"].split(": ", 1)[1],
        "incident": incident.src, "incident_service": incident.dst,
        "incident_date": nodes[incident.src].props["date"], "pr": linked.src,
        "pr_item": linked.dst, "epic": epic, "epic_key": nodes[epic].props["name"],
    }


def generate(size: str | int, seed: int = 7) -> Org:
    """The organisation of ``size`` edges (``"S"``, ``"M"``, ``"L"`` or a number)."""
    return _Builder(size_of(size), seed).build()
