"""Neo4j 5.26 LTS Community + APOC (core, extended) + open GDS, assembled from Maven Central.

Layout under ``SUBSTRATE_HOME``::

    neo4j/lib          server jars            (plugins/neo4j-server.pom.xml)
    neo4j/plugins      APOC + GDS jars        (plugins/neo4j-plugins.pom.xml, org.neo4j.* groups)
    neo4j/plugin-lib   their third-party deps (on the classpath, not scanned for procedures)
    neo4j/conf         neo4j.conf + apoc.conf, rewritten from Settings at every install
    data/neo4j         databases, transactions, import
    logs/neo4j.log     process output; logs/neo4j/ holds Neo4j's debug/query/http logs
    secrets/neo4j_password

Every jar is pinned by sha256 in ``plugins/artifacts.lock``; regenerate it with
``python -m substrate.stack.neo4j_server --write-lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError

from substrate.errors import StackError
from substrate.retrieval.cypher_grammar import ensure_grammar
from substrate.settings import PROJECT_ROOT, Settings, memory_bytes
from substrate.stack import maven
from substrate.stack.credentials import NEO4J_PASSWORD, ensure_secret
from substrate.stack.maven import Coord
from substrate.stack.part import Part, Progress, _print

POM_DIR = PROJECT_ROOT / "plugins"
SERVER_POM = POM_DIR / "neo4j-server.pom.xml"
PLUGINS_POM = POM_DIR / "neo4j-plugins.pom.xml"
LOCK_FILE = POM_DIR / "artifacts.lock"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
CHECK_QUERY = (
    "CALL dbms.components() YIELD name, versions WHERE name = 'Neo4j Kernel' "
    "RETURN versions[0] AS neo4j, apoc.version() AS apoc, gds.version() AS gds"
)
# Not in the classpath twice: these plugin dependencies would add a second SLF4J binding.
_PLUGIN_DROP = {("org.slf4j", "slf4j-jdk14"), ("org.slf4j", "slf4j-nop")}

# From the stock 5.26 conf/neo4j.conf (server.jvm.additional) and the bootloader's own flags.
JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+AlwaysPreTouch",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-XX:FlightRecorderOptions=stackdepth=256",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DebugNonSafepoints",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",  # not stock: reflective access by plugins
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j.layout.jsonTemplate.maxStringLength=32768",
    "-Dfile.encoding=UTF-8",
)


def java_binary() -> str:
    """The java executable (JAVA_HOME first); StackError unless it is Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    fix = "install it with `apt-get install -y openjdk-17-jre-headless` (or set JAVA_HOME)"
    if not java or not Path(java).exists():
        raise StackError(f"Java 17+ is needed to run Neo4j but `java` was not found; {fix}")
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.SubprocessError) as exc:
        raise StackError(f"`{java} -version` failed ({exc}); {fix}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise StackError(f"cannot read the Java version from `{java} -version`: {out!r}; {fix}")
    major = int(match.group(2)) if match.group(1) == "1" else int(match.group(1))
    if major < 17:
        raise StackError(f"Neo4j 5.26 needs Java 17 or 21 but {java} is Java {major}; {fix}")
    return java


def plan(server: list[Coord], plugins: list[Coord]) -> tuple[list[tuple[Coord, str]], list[str]]:
    """Place every resolved jar: server -> lib; plugin jars the server already has are dropped."""
    placed = [(c, "lib") for c in server]
    have = {c.key: c for c in server}
    superseded: list[str] = []
    for c in plugins:
        if c.key in have:
            superseded.append(f"{c.coords} -> {have[c.key].coords}")
        elif c.group == "org.neo4j" or (c.group, c.artifact) in _PLUGIN_DROP:
            superseded.append(f"{c.coords} -> dropped")
        else:
            placed.append((c, "plugins" if c.group.startswith("org.neo4j.") else "plugin-lib"))
    return placed, superseded


def resolve_plan(m2: Path, progress: Progress) -> tuple[list[tuple[Coord, str]], list[str]]:
    server = maven.resolve(SERVER_POM, m2, progress)
    plugins = maven.resolve(PLUGINS_POM, m2, progress)
    return plan(server, plugins)


def write_lock(settings: Settings, progress: Progress = _print) -> Path:
    m2 = settings.cache_dir / "m2"
    placed, superseded = resolve_plan(m2, progress)
    header = {
        "comment": "sha256 of every Neo4j jar; regenerate: python -m substrate.stack.neo4j_server"
        " --write-lock",
        "poms": [SERVER_POM.name, PLUGINS_POM.name],
        "superseded_by_server": sorted(superseded),
    }
    jars = maven.write_lock(LOCK_FILE, placed, m2, header)
    progress(f"[neo4j] wrote {LOCK_FILE} ({len(jars)} jars)")
    return LOCK_FILE


class Neo4jPart(Part):
    name = "neo4j"
    start_timeout = 120.0

    def __init__(self, settings: Settings, progress: Progress = _print) -> None:
        super().__init__(settings, progress)
        self._java: str | None = None

    # --- layout ---------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.settings.home / "neo4j"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def data(self) -> Path:
        return self.settings.data_dir("neo4j")

    @property
    def password_file(self) -> Path:
        return self.settings.secrets_dir / "neo4j_password"

    # --- Part hooks -----------------------------------------------------------------------
    def ports(self) -> list[int]:
        return [self.settings.neo4j_bolt_port, self.settings.neo4j_http_port]

    def address(self) -> str:
        return self.settings.neo4j_uri

    def install(self) -> None:
        self._java = java_binary()
        for value in (self.settings.neo4j_heap, self.settings.neo4j_pagecache,
                      self.settings.neo4j_tx_memory):
            try:
                memory_bytes(value)
            except ValueError:
                raise StackError(f"bad Neo4j memory size {value!r} "
                                 "(NEO4J_HEAP / NEO4J_PAGECACHE / NEO4J_TX_MEMORY)") from None
        self.install_jars()
        # /cypher parses with Neo4j's own grammar (the sources jar of the same version)
        ensure_grammar(self.settings.cache_dir / "m2")
        for d in (self.conf_dir, self.data / "import", self.settings.log_dir / "neo4j",
                  self.settings.run_dir / "neo4j"):
            d.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "neo4j.conf").write_text(self.neo4j_conf())
        (self.conf_dir / "apoc.conf").write_text(self.apoc_conf())
        self._ensure_password()

    def install_jars(self) -> None:
        m2 = self.settings.cache_dir / "m2"
        jars = maven.read_lock(LOCK_FILE)
        if maven.installed(jars, self.root, LOCK_FILE):
            return
        missing = maven.missing_in_cache(jars, m2)
        if missing:
            size = sum(j.size for j in missing) / 1e6
            self.progress(
                f"[neo4j] downloading {len(missing)} jars ({size:.0f} MB) from Maven Central "
                f"into {m2}"
            )
            placed, _ = resolve_plan(m2, self.progress)
            maven.check_plan(jars, placed, LOCK_FILE)
        self.progress(f"[neo4j] verifying {len(jars)} jars against {LOCK_FILE.name}")
        maven.install(jars, m2, self.root, LOCK_FILE, self.progress)

    def command(self) -> list[str]:
        java = self._java or java_binary()
        classpath = ":".join(str(self.root / d / "*") for d in ("lib", "plugins", "plugin-lib"))
        heap = self.settings.neo4j_heap
        return [
            java, f"-Xms{heap}", f"-Xmx{heap}", *JVM_FLAGS, "-cp", classpath, ENTRY_POINT,
            f"--home-dir={self.root}", f"--config-dir={self.conf_dir}", "--console-mode",
        ]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(NEO4J_HOME=str(self.root), NEO4J_CONF=str(self.conf_dir))
        return env

    def check(self) -> str:
        password = self.settings.neo4j_password
        if not password:
            raise RuntimeError("no Neo4j password yet (generated at first start)")
        auth = (self.settings.neo4j_user, password)
        driver = GraphDatabase.driver(self.settings.neo4j_uri, auth=auth, connection_timeout=3.0,
                                      connection_acquisition_timeout=5.0)
        # an auto-commit query: execute_query would retry for 30 s on a refused connection
        try:
            with driver, driver.session() as session:
                row = session.run(CHECK_QUERY).single(strict=True)
        except AuthError as exc:
            source = "NEO4J_PASSWORD" if self.settings.neo4j_password_env else self.password_file
            raise RuntimeError(
                f"Neo4j rejected the password of {self.settings.neo4j_user!r} from {source}: "
                f"the database in {self.data} was initialised with another one; set "
                f"NEO4J_PASSWORD to it, or delete {self.data} to start afresh ({exc})"
            ) from exc
        # Bolt comes up a moment before HTTP (Browser, query API): wait for both
        url = f"http://127.0.0.1:{self.settings.neo4j_http_port}/"
        with urllib.request.urlopen(url, timeout=3) as response:
            json.loads(response.read())
        return f"{row['neo4j']} (apoc {row['apoc']}, gds {row['gds']})"

    # --- configuration --------------------------------------------------------------------
    def neo4j_conf(self) -> str:
        s = self.settings
        heap, bolt, http = s.neo4j_heap, s.neo4j_bolt_port, s.neo4j_http_port
        lines = [
            "# Written by substrate/stack/neo4j_server.py at every start; edits are overwritten.",
            "server.default_listen_address=127.0.0.1",
            "server.default_advertised_address=127.0.0.1",
            "server.bolt.enabled=true",
            f"server.bolt.listen_address=127.0.0.1:{bolt}",
            f"server.bolt.advertised_address=127.0.0.1:{bolt}",
            # keep-alive NOOPs while results stream, but no connection.recv_timeout_seconds
            # hint: with it, the async driver (the gateway's) wraps every socket read in a
            # task and a timer (~75 us of CPU per query here); a gateway read is bounded by
            # the request deadline instead (gateway/shedding.py)
            "server.bolt.connection_keep_alive_for_requests=STREAMING",
            "server.http.enabled=true",
            f"server.http.listen_address=127.0.0.1:{http}",
            f"server.http.advertised_address=127.0.0.1:{http}",
            "server.https.enabled=false",
            "dbms.security.auth_enabled=true",
            "dbms.security.procedures.unrestricted=apoc.*,gds.*",
            "dbms.security.procedures.allowlist=apoc.*,gds.*",
            f"server.memory.heap.initial_size={heap}",
            f"server.memory.heap.max_size={heap}",
            f"server.memory.pagecache.size={s.neo4j_pagecache}",
            # bounded /cypher work: one transaction, and all of them together (half the heap)
            f"db.memory.transaction.max={s.neo4j_tx_memory}",
            f"dbms.memory.transaction.total.max={half_of(heap)}",
            "db.tx_log.rotation.retention_policy=2 files",
            "db.tx_log.rotation.size=64m",
            "dbms.usage_report.enabled=false",
            f"server.directories.data={self.data}",
            f"server.directories.transaction.logs.root={self.data / 'transactions'}",
            f"server.directories.import={self.data / 'import'}",
            f"server.directories.logs={s.log_dir / 'neo4j'}",
            f"server.directories.run={s.run_dir / 'neo4j'}",
            f"server.directories.lib={self.root / 'lib'}",
            f"server.directories.plugins={self.root / 'plugins'}",
            # only read by the stock `neo4j` launcher; the flags we pass are the same
            *(f"server.jvm.additional={flag}" for flag in JVM_FLAGS),
        ]
        return "\n".join(lines) + "\n"

    def apoc_conf(self) -> str:
        return (
            "# Written by substrate/stack/neo4j_server.py; edits are overwritten.\n"
            "apoc.import.file.enabled=false\n"
            "apoc.export.file.enabled=false\n"
            "# apoc.custom.* (APOC Extended): pick up procedures installed via the system db soon\n"
            "apoc.custom.procedures.refresh=2000\n"
        )

    # --- password ---------------------------------------------------------------------------
    def _ensure_password(self) -> None:
        password = self.settings.neo4j_password_env
        if not password:
            password, created = ensure_secret(self.settings.secrets_dir, NEO4J_PASSWORD)
            if created:
                self.progress(f"[neo4j] generated a password in {self.password_file}")
        if (self.data / "databases" / "system").exists():
            return  # already initialised; the password lives in the system database
        self.set_initial_password(password)
        self.progress(f"[neo4j] initial password set for user {self.settings.neo4j_user!r}")

    def set_initial_password(self, password: str) -> None:
        """Write the password the first start gives the admin user (``data/dbms/auth.ini``).

        ``--`` ends the options: a generated password may begin with ``-`` (URL-safe base64),
        and one beginning with ``-h`` was taken for ``--help``: the tool printed its usage,
        exited 0 and set nothing, so the database started with neo4j's default password."""
        result = subprocess.run(
            [self._java or java_binary(), "-cp", str(self.root / "lib" / "*"), ADMIN_TOOL,
             "dbms", "set-initial-password", "--", password],
            env=self.environment(), capture_output=True, text=True, timeout=120,
        )
        output = (result.stdout + result.stderr).strip()[-800:]
        if result.returncode != 0:
            raise StackError(
                "neo4j-admin dbms set-initial-password failed (the password needs at least 8 "
                f"characters): {output}"
            )
        if not self.auth_file.exists():
            raise StackError(f"neo4j-admin dbms set-initial-password wrote no {self.auth_file}: "
                             f"{output}")

    @property
    def auth_file(self) -> Path:
        """Where ``set-initial-password`` leaves the password for the first start."""
        return self.data / "dbms" / "auth.ini"


def half_of(size: str) -> str:
    """Half a Neo4j memory size (``1g`` -> ``512m``)."""
    return f"{max(memory_bytes(size) // 2 // 1024**2, 1)}m"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m substrate.stack.neo4j_server")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write-lock", action="store_true",
                       help="resolve the poms online and rewrite plugins/artifacts.lock")
    group.add_argument("--install", action="store_true",
                       help="download, verify and install the jars and config (no start)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    try:
        if args.write_lock:
            write_lock(settings)
        else:
            Neo4jPart(settings).install()
    except StackError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
