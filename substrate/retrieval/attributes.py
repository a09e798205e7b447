"""Attribute questions answered from what the connectors recorded, with no model.

"What is the address of X?", "what Redis URL does X use?", "on which port does X listen?",
"which image does X run?", "what does X do?", "what language is X written in?": the
candidates are the addresses, hosts and ports on X's dependency edges in both directions
(outgoing: what X uses; incoming: how others reach X) and X's own image, ports, environment,
description and language (``attribute_refs`` give each one's line). Each
candidate is scored against the question (pure functions, no database):

* the kind of value asked (address/URL/endpoint, port, image, a name) must match (+3);
* two named entities: only the edges between them count (+3);
* the other end matches a word of the question (its name, kind, image or the address itself:
  "Redis URL", "DynamoDB endpoint", "database URL", "virus scan URL") (+2);
* the phrasing says who uses whom: "does X use / used by X" (X's outgoing edges) against
  "address of X / X listen / reach X" (how X is reached, X's own ports) (+1);
* "publish", "host port", "expose": X's own published ports (+2).

The best score wins; candidates within one point of it are stated too (at most ``SHOWN``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

from substrate.connectors.aspire import is_apphost_path
from substrate.connectors.backstage import is_catalog_path
from substrate.connectors.cloudfoundry import is_manifest_path
from substrate.connectors.compose import is_compose_file
from substrate.connectors.k8s import INSIDE
from substrate.connectors.terraform import ENGINE_KEYS, SIZE_KEYS, is_terraform_path
from substrate.retrieval.router import LANGUAGE_VERSION

SHOWN = 3
_WANT = {
    "port": re.compile(r"\bports?\b|\blisten\w*|\bpublish\w*", re.I),
    # how it is reached: the Kubernetes Services selecting it, its ports published on the host
    "exposure": re.compile(r"\bexpos\w+|\bexternal(?:ly)?\b|\boutside\b|\bload\s?balancers?\b"
                           r"|\bnode\s?ports?\b|\bpublic(?:ly)?\s+(?:reachable|accessible)\b",
                           re.I),
    "image": re.compile(r"\bimages?\b|\bruns?\b|\bversion\b|\btag\b", re.I),
    "address": re.compile(r"\baddress(?:es)?\b|\burls?\b|\buris?\b|\bendpoints?\b|\bdsn\b"
                          r"|\bconnection\s+strings?\b|\bjdbc\b|\bhost\s?names?\b", re.I),
    "name": re.compile(r"\b(?:database|db|schema|bucket|queue|topic)\s+names?\b", re.I),
    # what the service is, as its README says: "what does X do?"
    "description": re.compile(r"\bwhat\s+(?:does|do)\s+.+?\s+do\b", re.I),
    "language": re.compile(r"\b(?:programming\s+)?languages?\b|\b(?:written|implemented"
                           r"|coded)\s+in\b", re.I),
    # the application frameworks its build declares (connectors.data_clients)
    "framework": re.compile(r"\bframeworks?\b|\bbuilt\s+(?:with|on)\b|\bweb\s+server\b",
                            re.I),
    # the runtime's version (languages.infer_versions): "which Python version does tock use?"
    "language_version": re.compile(LANGUAGE_VERSION, re.I),
    # how it is deployed: the files that deploy it ("how is cart deployed?")
    "deployment": re.compile(r"\bdeploy(?:s|ed|ment|ments)?\b|\bmanifests?\b"
                             r"|\bhelm\s+charts?\b|\bprovision\w*|\bterraform\b", re.I),
    # what a piece of infrastructure is: its kind, engine and size (Terraform)
    "kind": re.compile(r"\bengines?\b|\b(?:kind|type|sort)\s+of\b|\b(?:instance|node)\s+"
                       r"(?:class|type|size)s?\b|\btier\b", re.I),
}
# what deploys a manifest, by the connector that reads it (any other: a Kubernetes manifest)
_DEPLOYERS: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda p: is_compose_file(posixpath.basename(p)), "Docker Compose"),
    (is_manifest_path, "Cloud Foundry"),
    (is_apphost_path, "the .NET Aspire app host"),
    (is_terraform_path, "Terraform"),
    (is_catalog_path, "the Backstage catalog"))
_HOST_SIDE = re.compile(r"\bpublish\w*|\bhost\s+port|\bexpos\w+|\bon\s+the\s+host\b", re.I)
# "which port does frontend listen on?": the port the subject itself listens on, before the
# one its callers use (a Kubernetes Service's port 80 in front of a container's 8080)
_LISTEN = re.compile(r"\blisten\w*|\bbinds?\b", re.I)
_KINDS = {"database": ("database", "datastore", "db", "sql", "postgres", "postgresql", "mysql",
                       "mariadb", "jdbc", "dynamodb", "mongodb", "mongo"),
          "cache": ("cache", "redis", "memcached", "valkey"),
          "queue": ("broker", "queue", "message", "messaging", "rabbitmq", "kafka", "amqp"),
          "search": ("search", "opensearch", "elasticsearch")}
_NAME_KEYS = re.compile(r"(?:^|_)(?:DB|DATABASE|DBNAME|SCHEMA|BUCKET|QUEUE|TOPIC)(?:_NAME)?$",
                        re.I)
_STOP = {"what", "which", "does", "did", "the", "use", "uses", "used", "for", "and", "with",
         "address", "url", "port", "image", "run", "runs", "listen", "reach", "host", "name",
         "endpoint", "from", "this", "that", "services", "service", "api", "its"}


_RUNTIME = re.compile(r"\bruntimes?\b", re.I)
_IMAGE_WORDS = re.compile(r"\bimages?\b|\btags?\b|\bcontainers?\b", re.I)


EACH = re.compile(r"\b(?:each|every|all(?:\s+the)?|our)\s+(?:\w+\s+)?services?\b"
                  r"|\bper\s+service\b|\bthe\s+services\b", re.I)
PER_SERVICE = ("language", "image", "port", "description")


def wanted(question: str) -> set[str]:
    """The kinds of value asked for (address when the question names none)."""
    found = {k for k, rx in _WANT.items() if rx.search(question)}
    if _RUNTIME.search(question):  # "what runtime does basket-api use?": .NET 9.0, C#
        found |= {"language_version", "language"}
    if "language_version" in found and not _IMAGE_WORDS.search(question):
        found.discard("image")  # "which Go version does X use?": the runtime's, not a tag
    if "language" in found:
        found.add("framework")  # "what language does payment use?": Python, with Flask
    return found or {"address"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def _terms(question: str, seeds: list[dict[str, Any]]) -> set[str]:
    named = set().union(*(_words(str(s.get("name") or "")) | _words(str(s.get("mention") or ""))
                          for s in seeds)) if seeds else set()
    return _words(question) - _STOP - named


def _about(words: set[str], kind: str | None) -> set[str]:
    """Words that describe an end: its own words plus the vocabulary of its kind."""
    out = set(words)
    for k, vocab in _KINDS.items():
        if kind == k or words & set(vocab):
            out |= set(vocab) | {k}
    return out


def _user_side(question: str, subject: dict[str, Any]) -> int:
    """+1: the subject uses something ("does X use", "used by X"); -1: the subject is reached
    ("address of X", "X's API", "does X listen", "reach X"); 0: unclear."""
    names = [re.escape(n) for n in {str(subject.get("name") or ""),
                                    str(subject.get("mention") or "")} if n]
    if not names:
        return 0
    x = rf"(?:the\s+)?(?:{'|'.join(names)})"
    if re.search(rf"\b(?:does|did|do)\s+{x}\s+(?:use|call|need|reach\s+\w|connect|talk|read|"
                 rf"write)|\bused\s+by\s+{x}|\b{x}\s+uses?\b", question, re.I):
        return 1
    if re.search(rf"\b(?:of|reach|to)\s+{x}\b|\b{x}'s\b|\b{x}\s+(?:listen|serve|publish|run)",
                 question, re.I):
        return -1
    return 0


def _edge_candidates(row: dict[str, Any]) -> list[dict[str, Any]]:
    props = row.get("props") or {}
    hop = row.get("hop") or {}
    out: list[dict[str, Any]] = []
    address = props.get("address") or props.get("url") or props.get("uri")
    if address:
        out.append({"attr": "address", "value": str(address)})
    if props.get("port") not in (None, ""):
        out.append({"attr": "port", "value": str(props["port"])})
    for c in out:
        c.update(edge=row, outgoing=bool(row.get("outgoing")),
                 refs=[str(hop.get("evidence_ref") or ""),
                       *[str(r) for r in props.get("evidence_refs") or []]])
    return out


def node_values(entity: dict[str, Any], props: dict[str, Any]) -> list[dict[str, Any]]:
    """The values an entity's own properties state (image, ports, language, description,
    names of its databases), each with the lines stating it."""
    lines: dict[tuple[str, str], str] = {}
    for item in props.get("attribute_refs") or []:
        kind, _, rest = str(item).partition("|")
        value, _, ref = rest.rpartition("|")
        lines[(kind, value)] = ref
    out: list[dict[str, Any]] = []
    images = [str(props["image"])] if props.get("image") else []
    # every other image a file deploys it with (Compose's tag, the Helm chart's "latest")
    images += sorted({v for k, v in lines if k == "image" and v and v not in images})
    for image in images:
        out.append({"attr": "image", "value": image, "refs": [lines.get(("image", image), "")]})
    for port in props.get("ports") or []:
        out.append({"attr": "port", "value": str(port), "refs": [lines.get(("port", port), "")],
                    "own": True})
        if ":" in str(port):  # Compose's "8888:8080": published on the host
            out.append({"attr": "exposure", "value": f"published on the host as {port}",
                        "refs": [lines.get(("port", port), "")], "own": True})
    for said in props.get("exposure") or []:
        out.append({"attr": "exposure", "value": str(said),
                    "refs": [lines.get(("exposure", str(said)), "")], "own": True})
    for attr in ("description", "language", "language_version"):  # README, build files
        if props.get(attr):
            value = str(props[attr])
            out.append({"attr": attr, "value": value, "refs": [lines.get((attr, value), "")]})
    for framework in props.get("frameworks") or []:  # its build's dependencies
        out.append({"attr": "framework", "value": str(framework),
                    "refs": [lines.get(("frameworks", str(framework)), "")]})
    out += _deployments(props)
    out += _kind(props, lines)
    for pair in props.get("env") or []:
        key, _, value = str(pair).partition("=")
        if _NAME_KEYS.search(key) and value and "***" not in value:
            out.append({"attr": "name", "value": value, "var": key,
                        "refs": [lines.get(("env", key), "")]})
    for c in out:
        c["node"] = entity
    return out


def _kind(props: dict[str, Any], lines: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """What a piece of infrastructure is, where a file states it: "a database
    (aurora-postgresql 15.10, db.t3.medium)", cited at the declaration and each detail."""
    kind = props.get("kind")
    refs = [lines.get(("kind", str(kind)), "") or lines.get(("image", str(props.get("image"))),
                                                             "")]
    if not kind or not refs[0]:
        return []
    engine = " ".join(str(props[k]) for k in ENGINE_KEYS if props.get(k))
    size = next((str(props[k]) for k in SIZE_KEYS if props.get(k)), "")
    details = ", ".join(d for d in (engine, size) if d)
    refs += [lines.get((k, str(props[k])), "") for k in (*ENGINE_KEYS, *SIZE_KEYS)
             if props.get(k)]
    article = "an" if str(kind)[:1] in "aeiou" else "a"
    value = f"{article} {kind}" + (f" ({details})" if details else "")
    return [{"attr": "kind", "value": value, "refs": refs}]


def _template_chart(path: str, renderers: list[str]) -> str | None:
    """The chart whose template ``path`` is, when a chart that rendered the entity holds it
    (a subchart's template names the subchart), else None: a plain manifest kept in a folder
    named ``templates/`` is no chart's."""
    for folder in renderers:
        inside = path if folder == "." else path.removeprefix(f"{folder}/")
        if (inside != path or folder == ".") and "/templates/" in f"/{inside}":
            return f"/{path}".rsplit("/templates/", 1)[0].lstrip("/") or "."
    return None


def _deployments(props: dict[str, Any]) -> list[dict[str, Any]]:
    """The files deploying the entity (its ``manifests``, its Helm ``charts``), each cited at
    the line that declares it (its provenance; a Terraform block's own line). One of each
    way first (Compose, Kubernetes, a Helm chart, Terraform...), the shallowest file of each:
    the main deployments before an extra's."""
    declared: dict[str, str] = {}
    for ref in props.get("provenance") or []:
        declared.setdefault(str(ref).split("#", 1)[0], str(ref))
    found: list[tuple[str, dict[str, Any]]] = []  # (the way, the deployment)
    rendered: set[str] = set()  # charts whose rendered manifests deploy it
    renderers = [str(c) for c in props.get("rendered_charts") or []]
    terraform: dict[str, list[tuple[str, str]]] = {}  # a file -> (what it deploys as, line)
    charts: dict[str, str] = {}  # a chart naming itself -> its line
    for item in props.get("attribute_refs") or []:
        kind, _, rest = str(item).partition("|")
        value, _, ref = rest.rpartition("|")
        if kind == "terraform":
            path, _, what = value.partition("|")
            terraform.setdefault(path, []).append((what, ref))
        elif kind == "chart":
            charts[value] = ref
    for path in sorted(props.get("manifests") or [], key=lambda p: (str(p).count("/"), p)):
        by = next((who for reads, who in _DEPLOYERS if reads(path)), "Kubernetes")
        ref = declared.get(path, "")
        chart = _template_chart(str(path), renderers)
        if chart is not None:  # a chart's template, as Helm rendered it
            rendered.add(chart)
            by = f"the Helm chart {chart}"
        elif by == "Terraform" and terraform.get(str(path)):  # "Terraform, an ECS service"
            by = f"Terraform, {' and '.join(w for w, _ in terraform[str(path)])}"
            ref = terraform[str(path)][0][1]
        found.append(("Helm" if chart is not None else by.split(",")[0],
                      {"attr": "deployment", "value": f"{by} ({path})", "refs": [ref]}))
    for chart in [c for c in props.get("charts") or [] if str(c) not in rendered]:
        found.append(("Helm", {"attr": "deployment", "value": f"the Helm chart {chart}",
                               "refs": [charts.get(str(chart), "")]}))
    firsts: dict[str, dict[str, Any]] = {}
    for way, item in found:
        firsts.setdefault(way, item)
    first = {id(item) for item in firsts.values()}
    return [*firsts.values(), *(item for _, item in found if id(item) not in first)]


def _score(c: dict[str, Any], want: set[str], terms: set[str], side: int, pair: bool,
           host_side: bool, listen: bool = False) -> int:
    score = 3 if c["attr"] in want else 0
    edge = c.get("edge")
    # "what port does X use?" names nothing X uses: it asks for X's own port, not a peer's
    own_port = side > 0 and not terms and want == {"port"}
    if edge is not None:
        target = edge.get("target") or {}
        about = _about(_words(str(target.get("name") or "")) | _words(str(edge.get("image")
                       or "")) | _words(c["value"]), edge.get("kind"))
        named = bool(terms & about)  # the question names the peer or its kind
        score += 2 if named else 0
        score += 3 if pair else 0
        score += 1 if (side > 0 and c["outgoing"] and not own_port) \
            or (side < 0 and not c["outgoing"]) else 0
        # "which port does frontend listen on?": a port frontend calls is a peer's (unless
        # the question names that peer's kind: "the database URL of app" is app's setting)
        score -= 2 if side < 0 and c["outgoing"] and not pair and not named else 0
    else:
        score += 1 if side <= 0 or own_port else 0
        score += 2 if host_side and c.get("own") else 0
        score += 1 if listen and c["attr"] == "port" else 0
        # "how is frontend exposed?": a way in from outside before the in-cluster one
        score += 1 if c["attr"] == "exposure" and INSIDE not in str(c["value"]) else 0
    return score


def rank(question: str, seeds: list[dict[str, Any]], rows: list[dict[str, Any]],
         nodes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates worth stating, best first (empty: nothing recorded answers it).

    ``seeds``: the named services/infrastructure, the subject first; ``rows``: the subject's
    edges (``retrieval/edge_attributes``); ``nodes``: ceid -> properties of the named entities.
    """
    if not seeds:
        return []
    subject, want = seeds[0], wanted(question)
    others = {s["ceid"] for s in seeds[1:]}
    pair = bool(others) and any((r.get("target") or {}).get("ceid") in others for r in rows)
    terms, side = _terms(question, seeds), _user_side(question, subject)
    host_side, listen = bool(_HOST_SIDE.search(question)), bool(_LISTEN.search(question))
    found = []
    for row in rows:
        if pair and (row.get("target") or {}).get("ceid") not in others:
            continue
        found += _edge_candidates(row)
    if not pair:
        found += node_values(subject, nodes.get(subject["ceid"]) or {})
    if listen and side < 0 and not pair:  # "which port does frontend listen on?": a peer
        # frontend calls has its own port and address, never frontend's, not even "also
        # recorded" ("the virus scan URL of web" is web's own setting: an outgoing edge's)
        found = [c for c in found if c.get("edge") is None or not c["outgoing"]]
    if "language_version" in want and not any(c["attr"] == "language_version" for c in found):
        want = want | {"image"}  # no runtime version recorded: the image's tag may say it
    for c in found:
        c["score"] = _score(c, want, terms, side, pair, host_side, listen)
    if want == {"description"} and not any(c["attr"] == "description" for c in found):
        # "what does flagd do?" with no README: what it runs, is written in and talks to
        # says what it is (each marked, so that the answer says no description is recorded)
        want = {"image", "language", "address"}
        for c in found:
            c["instead_of"] = "description"
            c["score"] = _score(c, want, terms, side, pair, host_side, listen)
    found = [c for c in found if c["attr"] in want]
    if not found:
        return []
    best = max(c["score"] for c in found)
    top = sorted((c for c in found if c["score"] >= best - 1), key=lambda c: -c["score"])
    unique: dict[str, dict[str, Any]] = {}
    for c in top:
        unique.setdefault(c["value"], c)
    return list(unique.values())[:SHOWN]
