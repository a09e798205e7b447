"""What a service's build declares: the datastore and broker clients (``data_clients``), the
application frameworks (``frameworks``), and the registries it uses (Spring Cloud's service
registry and configuration server).

A service whose configuration names no datastore (a Spring service on an embedded HSQLDB by
default, its MySQL URL in a config repository elsewhere) still says what it can store data in
through the client libraries its build pulls in: ``mysql-connector-j`` in its ``pom.xml``,
``pg`` in its ``package.json``, ``psycopg2`` in its ``requirements.txt``. Each one found is
recorded on the service as ``data_clients`` ("MySQL", "HSQLDB (embedded)"), cited at the line
that declares it (``attribute_refs``: ``data_clients|<product>|<ref>``). These are
capabilities of the build, not edges: nothing says which instance the service reaches.

Read from the build files of the service's own folder: Maven (``<artifactId>`` of its
``<dependency>`` entries), Gradle (``implementation 'group:artifact'``), package.json
(``dependencies``), requirements.txt, pyproject.toml and Pipfile, go.mod (``require``),
Gemfile (``gem``) and composer.json (``require``).

A Spring Cloud service whose build holds the Eureka client starter registers with the
repository's Eureka server, and one holding the config client starter reads its configuration
from the config server: :func:`registry_batch` records those as ``DEPENDS_ON`` edges where no
other file names them (a Compose service commented out, a Kubernetes manifest without
``depends_on``).
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from substrate.connectors.aliases import Entity, NameIndex
from substrate.connectors.gitsource import GitSnapshot
from substrate.connectors.languages import BUILD_VERSIONS, matches_build_name
from substrate.graph.records import EdgeRecord, GraphBatch

EMBEDDED = " (embedded)"
# (a dependency's name, as its ecosystem spells it -> the product it is a client of); the
# names are matched whole (a Maven artifactId, an npm or PyPI package, a Go module path)
LIBRARIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"^(?:{names})$", re.I), product) for names, product in (
        (r"mysql-connector-j|mysql-connector-java|mysql|mysql2|mysqlclient|pymysql|aiomysql"
         r"|github\.com/go-sql-driver/mysql|mariadb-java-client|mariadb|ext-pdo_mysql"
         r"|ext-mysqli|MySqlConnector|MySql\.Data|Pomelo\.EntityFrameworkCore\.MySql", "MySQL"),
        (r"postgresql|r2dbc-postgresql|pg|pg-promise|postgres|psycopg2|psycopg2-binary|psycopg"
         r"|psycopg-binary|asyncpg|github\.com/lib/pq|github\.com/jackc/pgx(?:/v\d+)?"
         r"|ext-pdo_pgsql|ext-pgsql|npgsql|Npgsql\.EntityFrameworkCore\.PostgreSQL"
         r"|Aspire\.Npgsql(?:\.EntityFrameworkCore\.PostgreSQL)?", "PostgreSQL"),
        (r"spring-boot-starter-data-mongodb(?:-reactive)?|mongodb-driver(?:-sync|-reactivestreams)?"
         r"|mongodb|mongoose|pymongo|motor|mongoengine|go\.mongodb\.org/mongo-driver(?:/v\d+)?"
         r"|mongoid|mongo|mongodb/mongodb|(?:Aspire\.)?MongoDB\.Driver", "MongoDB"),
        (r"spring-boot-starter-data-redis(?:-reactive)?|jedis|lettuce-core|redisson|redis"
         r"|ioredis|github\.com/go-redis/redis(?:/v\d+)?|github\.com/redis/go-redis(?:/v\d+)?"
         r"|predis/predis|redis-py|(?:Aspire\.)?StackExchange\.Redis(?:\.[\w.]+)?"
         r"|Microsoft\.Extensions\.Caching\.StackExchangeRedis", "Redis"),
        (r"hsqldb", "HSQLDB" + EMBEDDED),
        (r"h2", "H2" + EMBEDDED),
        (r"mssql-jdbc|Microsoft\.Data\.SqlClient|System\.Data\.SqlClient"
         r"|Microsoft\.EntityFrameworkCore\.SqlServer|Aspire\.Microsoft\.Data\.SqlClient"
         r"|Aspire\.Microsoft\.EntityFrameworkCore\.SqlServer|pyodbc|tedious|mssql"
         r"|github\.com/microsoft/go-mssqldb|github\.com/denisenkom/go-mssqldb", "SQL Server"),
        (r"sqlite-jdbc|sqlite3|better-sqlite3|aiosqlite|github\.com/mattn/go-sqlite3"
         r"|Microsoft\.Data\.Sqlite|Microsoft\.EntityFrameworkCore\.Sqlite",
         "SQLite" + EMBEDDED),
        (r"spring-boot-starter-data-cassandra|cassandra-driver-core|java-driver-core"
         r"|cassandra-driver|github\.com/gocql/gocql", "Cassandra"),
        (r"spring-boot-starter-data-elasticsearch|elasticsearch|@elastic/elasticsearch"
         r"|elasticsearch-java|github\.com/elastic/go-elasticsearch(?:/v\d+)?"
         r"|Elastic\.Clients\.Elasticsearch|NEST", "Elasticsearch"),
        (r"opensearch-py|@opensearch-project/opensearch|opensearch-java", "OpenSearch"),
        (r"dynamodb|@aws-sdk/client-dynamodb|aws-sdk-dynamodb", "DynamoDB"),
        (r"spring-kafka|kafka-clients|kafkajs|confluent-kafka|kafka-python|aiokafka"
         r"|github\.com/(?:ibm|shopify)/sarama|github\.com/segmentio/kafka-go"
         r"|(?:Aspire\.)?Confluent\.Kafka", "Kafka"),
        (r"spring-boot-starter-amqp|spring-rabbit|amqp-client|amqplib|pika|aio-pika"
         r"|github\.com/streadway/amqp|github\.com/rabbitmq/amqp091-go|bunny"
         r"|php-amqplib/php-amqplib|(?:Aspire\.)?RabbitMQ\.Client", "RabbitMQ"),
        (r"(?:Aspire\.)?Microsoft\.Azure\.Cosmos|azure-cosmos|@azure/cosmos", "Azure Cosmos DB"),
        (r"(?:Aspire\.)?Azure\.Messaging\.ServiceBus|azure-servicebus|@azure/service-bus",
         "Azure Service Bus"),
        (r"memcached|pymemcache|python-memcached|spymemcached|dalli", "Memcached"),
    ))

# the application frameworks a dependency is, by the same whole-name match: what a service is
# built with ("what framework does payment use?", beside its language)
FRAMEWORKS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"^(?:{names})$", re.I), framework) for names, framework in (
        (r"flask", "Flask"), (r"django", "Django"), (r"fastapi", "FastAPI"),
        (r"starlette", "Starlette"), (r"aiohttp", "aiohttp"), (r"tornado", "Tornado"),
        (r"express", "Express"), (r"@nestjs/core", "NestJS"), (r"next", "Next.js"),
        (r"koa", "Koa"), (r"fastify", "Fastify"), (r"@hapi/hapi|hapi", "hapi"),
        (r"spring-boot-starter-web|spring-boot-starter-webflux", "Spring Boot"),
        (r"spring-cloud-starter-gateway(?:-mvc)?", "Spring Cloud Gateway"),
        (r"quarkus-resteasy(?:-reactive)?|quarkus-rest|quarkus-core", "Quarkus"),
        (r"micronaut-http-server-netty", "Micronaut"),
        (r"rails", "Ruby on Rails"), (r"sinatra", "Sinatra"),
        (r"laravel/framework", "Laravel"), (r"symfony/framework-bundle", "Symfony"),
        (r"slim/slim", "Slim"),
        (r"github\.com/gin-gonic/gin", "Gin"), (r"github\.com/labstack/echo(?:/v\d+)?", "Echo"),
        (r"github\.com/gofiber/fiber(?:/v\d+)?", "Fiber"),
        (r"github\.com/gorilla/mux", "gorilla/mux"), (r"github\.com/go-chi/chi(?:/v\d+)?", "chi"),
        # a .NET project's SDK (``<Project Sdk="Microsoft.NET.Sdk.Web">``) and packages
        (r"Microsoft\.NET\.Sdk\.Web", "ASP.NET Core"),
        (r"Microsoft\.NET\.Sdk\.BlazorWebAssembly", "Blazor WebAssembly"),
        (r"Microsoft\.NET\.Sdk\.Worker", ".NET Worker Service"),
        (r"Yarp\.ReverseProxy", "YARP"),
    ))

# Spring Cloud's service registry and configuration server: the server's starter names the
# service every client of it registers with (or reads its configuration from)
REGISTRIES: tuple[tuple[str, str, str], ...] = (
    # (server artifact, client artifact, what the clients use it for)
    ("spring-cloud-starter-netflix-eureka-server", "spring-cloud-starter-netflix-eureka-client",
     "service registry"),
    ("spring-cloud-config-server", "spring-cloud-starter-config", "configuration server"),
)
_REGISTRY_ARTIFACTS = frozenset(a for server, client, _ in REGISTRIES for a in (server, client))


_POM_DEPENDENCY = re.compile(r"<dependency>(?:(?!</dependency>).)*?<artifactId>\s*([\w.-]+)"
                             r"\s*</artifactId>", re.S)
_GRADLE = re.compile(r"^\s*(?:implementation|api|compile|runtimeOnly|runtime|compileOnly)"
                     r"""\s*\(?\s*['"][\w.-]+:([\w.-]+)""", re.M)
_JSON_BLOCK = r'"{key}"\s*:\s*\{{([^}}]*)\}}'
_JSON_KEY = re.compile(r'"([@\w./-]+)"\s*:')
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])?\s*(?:[<>=!~;@ ]|$)", re.M)
_PYPROJECT_DEP = re.compile(r"""^\s*['"]([A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])?\s*[<>=!~;'"]""",
                            re.M)
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]+/[\w./-]+)\s+v\d", re.M)
_GEM = re.compile(r"""^\s*gem\s+['"]([\w.-]+)['"]""", re.M)
# a .NET project file: its SDK, its packages and the projects it references (followed)
_PROJECT_SDK = re.compile(r"""<Project\s[^>]*?\bSdk\s*=\s*["']([\w.]+)""")
_PACKAGE_REFERENCE = re.compile(r"""<PackageReference\s[^>]*?\bInclude\s*=\s*["']([\w.-]+)""")
_PROJECT_REFERENCE = re.compile(r"""<ProjectReference\s[^>]*?\bInclude\s*=\s*["']([^"']+)""")
PROJECT_FILES = (".csproj", ".fsproj", ".vbproj")


def declared(name: str, text: str) -> list[tuple[str, int]]:
    """(dependency name, line) of each dependency the build file ``name`` declares."""
    return list(_declared(name, text))


@lru_cache(maxsize=2048)  # a replay reads the same build files at every commit it parses
def _declared(name: str, text: str) -> tuple[tuple[str, int], ...]:
    found: list[tuple[str, int]] = []

    def add(match: re.Match[str], group: int = 1) -> None:
        found.append((match.group(group), text.count("\n", 0, match.start(group)) + 1))

    if name == "pom.xml":
        for m in _POM_DEPENDENCY.finditer(text):
            add(m)
    elif name in ("build.gradle", "build.gradle.kts"):
        for m in _GRADLE.finditer(text):
            add(m)
    elif name in ("package.json", "composer.json"):
        keys = ("dependencies",) if name == "package.json" else ("require",)
        for key in keys:
            block = re.search(_JSON_BLOCK.format(key=key), text)
            if block is not None:
                for m in _JSON_KEY.finditer(text, block.start(1), block.end(1)):
                    add(m)
    elif name == "requirements.txt":
        for m in _REQUIREMENT.finditer(text):
            add(m)
    elif name in ("pyproject.toml", "Pipfile"):
        for m in _PYPROJECT_DEP.finditer(text):
            add(m)
        for m in re.finditer(r"^\s*([A-Za-z0-9][\w.-]*)\s*=\s*(?:['\"{*])", text, re.M):
            add(m)  # Poetry's and Pipfile's tables: name = "^1.2"
    elif name == "go.mod":
        for m in _GO_REQUIRE.finditer(text):
            add(m)
    elif name == "Gemfile":
        for m in _GEM.finditer(text):
            add(m)
    elif name.endswith(PROJECT_FILES):
        for rx in (_PROJECT_SDK, _PACKAGE_REFERENCE):
            for m in rx.finditer(text):
                add(m)
    return tuple(found)


BUILD_FILES = ("pom.xml", "build.gradle", "build.gradle.kts", "package.json", "composer.json",
               "requirements.txt", "pyproject.toml", "Pipfile", "go.mod", "Gemfile")


@lru_cache(maxsize=8192)
def framework_of(dependency: str) -> str | None:
    """The application framework ``dependency`` is, if it is one."""
    return next((f for rx, f in FRAMEWORKS if rx.match(dependency)), None)


@lru_cache(maxsize=8192)
def product_of(dependency: str) -> str | None:
    """The datastore or broker ``dependency`` is a client of, if it is one."""
    return next((p for rx, p in LIBRARIES if rx.match(dependency)), None)


def is_fact_build_file(path: str) -> bool:
    """A build file whose text is read: its dependencies or its language version (for the
    replay's path filter, with :func:`build_facts`)."""
    name = posixpath.basename(path)
    return name in (*BUILD_FILES, "Cargo.toml", "Directory.Build.props") \
        or name.endswith(PROJECT_FILES)


Declarations = dict[str, list[tuple[str, str, int]]]


def service_declarations(snap: GitSnapshot, index: NameIndex, dirs: dict[str, str]
                         ) -> Declarations:
    """Per service of ``dirs`` (ceid -> its folder, "" for the root): (build file path,
    dependency, line) of every dependency its folder's build files declare. Read once, for
    :func:`infer_data_clients` and :func:`registry_batch`."""
    return {cid: _declarations(snap, folder) for cid, folder in sorted(dirs.items())
            if cid in index and index.get(cid).label == "Service"}


def infer_data_clients(snap: GitSnapshot, index: NameIndex, declarations: Declarations) -> None:
    """Sets ``data_clients`` and ``frameworks`` on each service of ``declarations`` (see
    :func:`service_declarations`), each cited at its first line."""
    for cid, declared_here in declarations.items():
        found: dict[str, dict[str, str]] = {"data_clients": {}, "frameworks": {}}
        for path, dependency, line in declared_here:
            for key, what in (("data_clients", product_of(dependency)),
                              ("frameworks", framework_of(dependency))):
                if what is not None and what not in found[key]:
                    found[key][what] = snap.ref(path, line)
        for key, values in found.items():
            if values:
                state_values(index.get(cid), key, values)


def state_values(entity: Entity, key: str, values: dict[str, str]) -> None:
    """``entity``'s ``key`` is the list of ``values`` (value -> the ref stating it), each
    cited in ``attribute_refs`` (``key|value|ref``)."""
    entity.props[key] = sorted(values)
    refs = [r for r in entity.props.get("attribute_refs") or []
            if not str(r).startswith(f"{key}|")]
    entity.props["attribute_refs"] = sorted(
        {*refs, *(f"{key}|{value}|{ref}" for value, ref in values.items())})


def _declarations(snap: GitSnapshot, folder: str) -> list[tuple[str, str, int]]:
    """(build file path, dependency, line) of every dependency the folder's builds declare; a
    .NET project's also those of the projects it references, and theirs."""
    base = folder.strip("/")
    found = []
    for name in BUILD_FILES:
        path = posixpath.join(base, name) if base else name
        if snap.exists(path):
            found += [(path, d, line) for d, line in declared(name, snap.read(path))]
    projects = [p for p in snap.in_folder(base) if p.endswith(PROJECT_FILES)]
    seen = set(projects)
    while projects:
        path = projects.pop(0)
        text = snap.read(path)
        found += [(path, d, line) for d, line in declared(posixpath.basename(path), text)]
        for m in _PROJECT_REFERENCE.finditer(text):
            referenced = posixpath.normpath(
                posixpath.join(posixpath.dirname(path), m.group(1).replace("\\", "/")))
            if referenced not in seen and snap.exists(referenced):
                seen.add(referenced)
                projects.append(referenced)
    return found


def registry_batch(snap: GitSnapshot, declarations: Declarations,
                   known: frozenset[str]) -> GraphBatch:
    """``DEPENDS_ON`` the one service whose build holds a registry's server starter (Spring
    Cloud's Eureka server, its config server), from every service whose build holds that
    registry's client starter, cited at the client's dependency line; none where the
    repository holds no such server or more than one, and none already in ``known`` (edge
    ids found by the other readers: Compose's ``depends_on``, an ``application.yml`` URL).
    ``declarations``: see :func:`service_declarations`."""
    batch = GraphBatch()
    declares = {cid: [d for d in found if d[1] in _REGISTRY_ARTIFACTS]
                for cid, found in declarations.items()}
    for server, client, used_for in REGISTRIES:
        servers = [cid for cid, found in declares.items() if any(d[1] == server for d in found)]
        if len(servers) != 1:
            continue
        for cid, found in declares.items():
            line = next(((path, n) for path, d, n in found if d == client), None)
            edge = EdgeRecord("DEPENDS_ON", cid, servers[0], snap.ref(*line) if line else "",
                              source="git", props={"via": "build", "uses": used_for})
            if line is not None and cid != servers[0] and edge.eid not in known:
                batch.edges.append(edge)
    return batch


def build_facts(name: str, text: str) -> tuple[tuple[str, int, str], ...]:
    """What the connectors take from the build file ``name``'s text: each datastore client and
    registry starter it declares (:func:`infer_data_clients`, :func:`registry_batch`) and the
    language version it states (``languages.build_version``), each with its line's number and
    text (the evidence cites the commit that last changed that line). The replay's digest of
    build files: a change that keeps it (another dependency's bump) changes nothing in the
    graph."""
    lines = text.splitlines()

    def at(line: int) -> str:
        return lines[line - 1] if 0 < line <= len(lines) else ""

    facts = [(dependency, line, at(line)) for dependency, line in declared(name, text)
             if product_of(dependency) is not None or framework_of(dependency) is not None
             or dependency in _REGISTRY_ARTIFACTS]
    for file, _, pattern, _ in BUILD_VERSIONS:
        match = pattern.search(text) if matches_build_name(file, name) else None
        if match is not None:
            line = text.count("\n", 0, match.start(1)) + 1
            facts.append((match.group(1), line, at(line)))
    return tuple(facts)
