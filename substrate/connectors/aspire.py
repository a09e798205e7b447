"""The services and resources a .NET Aspire app host declares, and how they are wired.

An app host (a ``.cs`` file in a folder named ``*AppHost``, holding
``DistributedApplication.CreateBuilder``) builds the application in C#:

    var cache = builder.AddRedis("cache");
    var db = builder.AddPostgres("pg").AddDatabase("ordersdb");
    var orders = builder.AddProject<Projects.Orders_Api>("orders-api")
        .WithReference(db).WaitFor(db);
    builder.AddNpmApp("web", "../web").WithReference(orders)
        .WithEnvironment("Cache__Host", cache);

It is read with the C# grammar of tree-sitter, top-level statements only (wiring inside an
``if`` or a method is conditional and left out):

* ``builder.Add<X>("name", ...)`` declares a resource named by its first argument (a string
  literal or a ``const string``): a **Service** for an application (``AddProject``,
  ``AddNpmApp``, ``AddPythonApp``, ``AddDockerfile``, ``AddExecutable``, ...; a container
  whose image is no datastore's), else **Infrastructure** of the kind its method or name
  states (``AddRedis``: cache, ``AddPostgres``, ``AddDatabase``: database, ``AddRabbitMQ``:
  queue; ``resource`` when neither says). ``AddParameter`` declares no resource.
* ``server.Add<X>("name")`` on a resource declares a child resource (a database of a server),
  which DEPENDS_ON its parent.
* ``.WithReference(x)`` on a resource: CALLS ``x`` (a Service) or DEPENDS_ON it; ``.WaitFor(x)``:
  DEPENDS_ON; ``.WithEnvironment("VAR", x)`` with ``x`` a resource or one's ``GetEndpoint``:
  CALLS/DEPENDS_ON with the variable (none for an address handed back to a resource that wires
  to the owner under a callback's name: an identity server given each client app's URL); a
  call of another verb given resources (the app
  host's own extension method, ``.ConfigureMobileBffRoutes(catalog, ordering)``): CALLS or
  DEPENDS_ON each (``With<X>``/``Wait<X>`` calls of other names wire nothing). Each edge
  cites the line of its call.
* A project's generated class (``Projects.Orders_Api``) is an alias (``Orders.Api``), so the
  service is linked to its project's folder; an app's, a project's or a Dockerfile's folder
  argument is its ``build_context``.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache

import tree_sitter_c_sharp
from tree_sitter import Language, Node, Parser

from substrate.connectors.aliases import Entity
from substrate.connectors.infra_kinds import infra_kind, name_kind
from substrate.connectors.manifests import Deployed, ManifestReader, add_props, union
from substrate.connectors.yamlnodes import Fact

DEPLOYED_BY = "aspire"
APPHOST_DIR = re.compile(r"(?:^|/)[^/]*apphost/[^/]+\.cs$", re.IGNORECASE)
MARKER = "DistributedApplication.CreateBuilder"
# methods that add an application (a Service); other Add<X> methods add Infrastructure
APPS = frozenset({
    "AddProject", "AddCSharpApp", "AddNpmApp", "AddNodeApp", "AddJavaScriptApp", "AddViteApp",
    "AddYarnApp", "AddPnpmApp", "AddBunApp", "AddDenoApp", "AddPythonApp", "AddPythonModule",
    "AddPythonScript", "AddUvicornApp", "AddGolangApp", "AddJavaApp", "AddSpringApp",
    "AddRustApp", "AddExecutable", "AddDockerfile", "AddAzureFunctionsProject",
    "AddYarp",  # a YARP reverse proxy (a gateway): its routes go to the resources given
})  # fmt: skip
# and any other Add<X>Project / Add<X>App (``AddDotnetProject("basket-api", "../Basket.API")``)
APP_METHOD = re.compile(r"Add\w*(?:Project|App)")
NOT_RESOURCES = frozenset({"AddParameter", "AddForwardedHeaders", "AddDeployment",
                           "AddDockerComposeEnvironment", "AddKubernetesEnvironment",
                           "AddAzureContainerAppEnvironment"})
# the kind an Add<X> method states when its word is no product infra_kind knows
METHOD_KINDS = (("database", ("Database", "SqlServer", "Sql", "CosmosDB", "Db")),
                ("storage", ("Storage", "Blobs", "Blob", "Tables")),
                ("queue", ("ServiceBus", "EventHubs", "Queues", "Queue", "EventGrid")),
                ("search", ("Search", "Qdrant", "Milvus")),
                ("cache", ("Garnet", "Cache")))
REFERENCES = {"WithReference": "reference", "WaitFor": "wait_for",
              "WaitForCompletion": "wait_for", "WithEnvironment": "env"}
# an environment variable naming where to send users back: a client app's URL, a callback
CALLBACK_VAR = re.compile(r"call_?back|redirect|return_?ur[il]|client(?:_?ur[il])?$", re.I)
# a chained call of another verb given resources (an app host's own extension method:
# ``.ConfigureMobileBffRoutes(catalogApi, orderingApi)``) wires the owner to each of them;
# With<X>/Wait<X> calls other than REFERENCES do not (``WithParentRelationship`` only groups
# resources in the dashboard)
NOT_WIRING = ("With", "Wait", "Get", "Publish", "As", "Run", "Exclude")


def is_apphost_path(path: str) -> bool:
    """A C# file of an Aspire app host project's folder (``src/Shop.AppHost/Program.cs``)."""
    return APPHOST_DIR.search(path) is not None


@cache
def _language() -> Language:
    return Language(tree_sitter_c_sharp.language())


_LOCAL = threading.local()  # a parser per thread: a history replay parses in several


def _parser() -> Parser:
    parser: Parser | None = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = Parser(_language())
    return parser


@dataclass
class Resource:
    name: Fact
    method: str
    parent: str | None = None  # the variable of the resource it was added to
    image: Fact | None = None
    folder: str | None = None  # an app's or Dockerfile's folder, from the repository root
    project: str | None = None  # a project's generated class name ("Orders_Api")


@dataclass
class Wire:
    """One call wiring a resource (its variable or key) to another (``target``)."""

    owner: str  # the variable (or ``#n`` for an unnamed resource) the call is made on
    target: str
    via: str
    line: int
    var: str | None = None


@dataclass
class AppHost:
    path: str
    resources: dict[str, Resource] = field(default_factory=dict)  # by variable or #n key
    wires: list[Wire] = field(default_factory=list)


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _string(node: Node, consts: dict[str, str]) -> str | None:
    """A string literal's value, or a ``const string``'s by its identifier."""
    if node.type == "string_literal":
        return "".join(_text(c) for c in node.named_children
                       if c.type == "string_literal_content")
    if node.type == "identifier":
        return consts.get(_text(node))
    return None


def _arguments(call: Node) -> list[tuple[str | None, Node]]:
    """(name or None, value) of each argument of an invocation."""
    args = call.child_by_field_name("arguments")
    out = []
    for arg in args.named_children if args is not None else []:
        if arg.type != "argument" or not arg.named_children:
            continue
        name = arg.child_by_field_name("name")
        out.append((_text(name) if name is not None else None, arg.named_children[-1]))
    return out


def _chain(expr: Node) -> tuple[Node | None, list[Node]]:
    """The receiver at the root of a fluent chain and its calls, innermost first."""
    calls: list[Node] = []
    while expr.type == "invocation_expression":
        function = expr.child_by_field_name("function")
        if function is None or function.type != "member_access_expression":
            return None, []
        calls.append(expr)
        receiver = function.child_by_field_name("expression")
        if receiver is None:
            return None, []
        expr = receiver
    return expr, calls[::-1]


def _method(call: Node) -> tuple[str, str | None]:
    """A call's method name and its one type argument (``AddProject<Projects.X>``: X)."""
    function = call.child_by_field_name("function")
    name = function.child_by_field_name("name") if function is not None else None
    if name is None:
        return "", None
    if name.type == "generic_name":
        ident = next((c for c in name.named_children if c.type == "identifier"), None)
        types = next((c for c in name.named_children if c.type == "type_argument_list"), None)
        type_arg = _text(types.named_children[0]) if types and types.named_children else None
        return _text(ident), type_arg.rsplit(".", 1)[-1] if type_arg else None
    return _text(name), None


def _statements(root: Node) -> Iterator[tuple[str | None, Node]]:
    """(declared variable or None, expression) of each top-level statement."""
    for statement in root.named_children:
        if statement.type != "global_statement" or not statement.named_children:
            continue
        inner = statement.named_children[0]
        if inner.type == "expression_statement" and inner.named_children:
            yield None, inner.named_children[0]
        elif inner.type == "local_declaration_statement":
            declaration = next((c for c in inner.named_children
                                if c.type == "variable_declaration"), None)
            for declarator in declaration.named_children if declaration else []:
                if declarator.type == "variable_declarator" and len(declarator.named_children) > 1:
                    name = declarator.child_by_field_name("name")
                    yield _text(name), declarator.named_children[-1]


def read_apphost(path: str, text: str) -> AppHost | None:
    """The resources and wires of one app host file (None: not an app host)."""
    if MARKER not in text:
        return None
    root = _parser().parse(text.encode("utf-8")).root_node
    host = AppHost(path)
    consts: dict[str, str] = {}
    endpoints: dict[str, str] = {}  # variable of a GetEndpoint -> its resource's variable
    builder: str | None = None
    for n, (var, expr) in enumerate(_statements(root)):
        value = _string(expr, {})
        if var and value is not None:  # const string name = "...";
            consts[var] = value
            continue
        receiver, calls = _chain(expr)
        if receiver is None or not calls:
            continue
        head = _text(receiver)
        method, _ = _method(calls[0])
        if method == "CreateBuilder":
            builder = var
            continue
        key = var or f"#{n}"
        if head == builder or head in host.resources:
            if method.startswith("Add") and method not in NOT_RESOURCES:
                resource = _resource(path, calls[0], method, consts)
                if resource is not None:
                    resource.parent = head if head in host.resources else None
                    host.resources[key] = resource
                    calls = calls[1:]
            elif head in host.resources:  # storefront.WithReference(cache);
                key = head
            if method == "GetEndpoint" and var and head in host.resources:
                endpoints[var] = head
                continue
        if key not in host.resources:
            continue
        for call in calls:
            host.wires.extend(_wire(key, call, consts, endpoints, host.resources))
    host.wires = [w for w in host.wires if not _callback(w, host.wires)]
    return host


def _callback(wire: Wire, wires: list[Wire]) -> bool:
    """An address handed back to a resource that wires to the owner, under a name that says it
    is where to send users back (an identity server given each client app's URL:
    ``identityApi.WithEnvironment("WebAppClient", webApp.GetEndpoint("https"))``): the owner
    redirects to it, it does not call it."""
    return wire.via == "env" and wire.var is not None \
        and CALLBACK_VAR.search(wire.var) is not None \
        and any(w.owner == wire.target and w.target == wire.owner for w in wires)


def _resource(path: str, call: Node, method: str, consts: dict[str, str]) -> Resource | None:
    args = _arguments(call)
    named = {name: value for name, value in args if name}
    positional = [value for name, value in args if name is None]
    node = named.get("name") or (positional[0] if positional else None)
    name = _string(node, consts) if node is not None else None
    if not name or node is None:
        return None
    _, project = _method(call)
    resource = Resource(Fact(name, path, node.start_point[0] + 1), method, project=project)
    second = named.get("image") or named.get("workingDirectory") or named.get("contextPath") \
        or named.get("appDirectory") or (positional[1] if len(positional) > 1 else None)
    value = _string(second, consts) if second is not None else None
    if second is None or not value:
        return resource
    if method == "AddContainer":
        resource.image = Fact(value, path, second.start_point[0] + 1)
    elif method.endswith("Project") or method == "AddCSharpApp":
        if value.endswith(".csproj"):  # else its folder, or its launch profile's name
            resource.folder = _folder(path, posixpath.dirname(value))
        elif "/" in value or "\\" in value:
            resource.folder = _folder(path, value.replace("\\", "/"))
    elif is_app(method) and method != "AddExecutable":
        resource.folder = _folder(path, value)
    return resource


def _folder(path: str, folder: str) -> str | None:
    """``folder`` (relative to the app host project's folder) from the repository root."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), folder))
    return None if joined.startswith("..") else joined


def _wire(owner: str, call: Node, consts: dict[str, str], endpoints: dict[str, str],
          resources: dict[str, Resource]) -> Iterator[Wire]:
    method, _ = _method(call)
    via = REFERENCES.get(method)
    args = [value for _, value in _arguments(call)]
    if via is None:
        if not method.startswith(NOT_WIRING):
            for arg in args:
                target = _text(arg)
                if target in resources and target != owner:
                    yield Wire(owner, target, "argument", _line(call), None)
        return
    var = _string(args[0], consts) if via == "env" and args else None
    target_node = args[1] if via == "env" and len(args) > 1 else (args[0] if args else None)
    if target_node is None:
        return
    target = _text(target_node)
    if target_node.type == "invocation_expression":  # x.GetEndpoint("http") inline
        receiver, calls = _chain(target_node)
        if receiver is not None and calls and _method(calls[-1])[0] == "GetEndpoint":
            target = _text(receiver)
    target = endpoints.get(target, target)
    if target in resources and target != owner:
        yield Wire(owner, target, via, _line(call), var)


def _line(call: Node) -> int:
    """The line of a chained call's method name (the chain starts lines above)."""
    function = call.child_by_field_name("function")
    name = function.child_by_field_name("name") if function is not None else None
    return (name or call).start_point[0] + 1


def _kind(resource: Resource) -> str:
    word = resource.method.removeprefix("Add").removeprefix("Azure")
    found = infra_kind(word.lower()) or infra_kind(resource.name.value) \
        or name_kind(resource.name.value)
    if found:
        return found
    for kind, words in METHOD_KINDS:
        if any(w in word for w in words):
            return kind
    return "resource"


def _label(resource: Resource) -> str:
    if resource.method == "AddContainer":
        image = resource.image.value if resource.image else None
        return "Infrastructure" if infra_kind(image) or name_kind(resource.name.value) \
            else "Service"
    return "Service" if is_app(resource.method) else "Infrastructure"


def is_app(method: str) -> bool:
    """An Add<X> method adding an application (a Service)."""
    return method in APPS or APP_METHOD.fullmatch(method) is not None


def add_aspire(reader: ManifestReader) -> None:
    """Declare the resources of the snapshot's app hosts in ``reader``, with their edges."""
    snap = reader.snap
    for path in sorted(p for p in snap.files() if is_apphost_path(p)):
        host = read_apphost(path, snap.read(path))
        if host is not None and host.resources:
            _add_host(reader, host)


def _add_host(reader: ManifestReader, host: AppHost) -> None:
    entities: dict[str, Entity] = {}
    for key, resource in host.resources.items():
        label = _label(resource)
        entity = reader.declare((DEPLOYED_BY, host.path), label, resource.name.value,
                                reader.ref(resource.name))
        add_props(entity, resource.image, {}, DEPLOYED_BY, [], reader.ref)
        if label == "Infrastructure":
            entity.props.setdefault("kind", _kind(resource))
        union(entity.props, "manifests", [host.path])
        if resource.project:
            reader.index.alias(entity.ceid, resource.project.replace("_", "."),
                               reader.ref(resource.name))
        if resource.folder:
            entity.props.setdefault("build_context", resource.folder)
        reader.deployed.append(Deployed(entity, {}, None, {}))
        entities[key] = entity
    seen: set[tuple[str, str, str]] = set()
    for key, resource in host.resources.items():
        if resource.parent in entities:
            _edge(reader, entities[key], entities[resource.parent], "DEPENDS_ON",
                  resource.name, {"via": "parent"}, seen)
    for wire in host.wires:
        src, dst = entities[wire.owner], entities[wire.target]
        kind = "CALLS" if dst.label == "Service" and wire.via != "wait_for" else "DEPENDS_ON"
        props: dict[str, object] = {"via": f"aspire_{wire.via}"}
        if wire.var:
            props["var"] = wire.var
        _edge(reader, src, dst, kind, Fact(wire.target, host.path, wire.line), props, seen)


def _edge(reader: ManifestReader, src: Entity, dst: Entity, kind: str, fact: Fact,
          props: dict[str, object], seen: set[tuple[str, str, str]]) -> None:
    if src.ceid == dst.ceid or (kind, src.ceid, dst.ceid) in seen:
        return
    seen.add((kind, src.ceid, dst.ceid))
    reader.edge(kind, src.ceid, dst.ceid, fact, 1.0, props)
