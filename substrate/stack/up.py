"""``substrate up``: start the data parts, migrate, load the demo organisation, serve."""

from __future__ import annotations

import time
from typing import Any

from substrate.db import neo4j_driver
from substrate.errors import StackError
from substrate.migrate import Migrator
from substrate.settings import Settings
from substrate.stack import helm
from substrate.stack.communities_watch import CommunitiesWatchPart
from substrate.stack.gateway_server import GatewayPart
from substrate.stack.part import Progress, _print
from substrate.stack.supervisor import start_data_parts


def migrate_all(settings: Settings, progress: Progress = _print) -> list[str]:
    driver = neo4j_driver(settings)
    try:
        migrator = Migrator(settings, driver)
        applied = []
        for target in ("postgres", "neo4j"):
            for name in migrator.up(target):
                progress(f"[migrate] {target}: applied {name}")
                applied.append(f"{target}/{name}")
        return applied
    finally:
        driver.close()


def install_procedures(settings: Settings, progress: Progress = _print) -> list[str]:
    """The Neo4j Browser procedures ``custom.substrate_*`` (missing or changed ones only)."""
    from substrate.browser import install, procedures, wait_callable
    from substrate.cypher import CypherLibrary
    from substrate.stack.neo4j_server import Neo4jPart

    library = CypherLibrary.load()
    driver = neo4j_driver(settings)
    try:
        try:
            outcome = install(driver, library)
        except StackError as e:
            # APOC's refresh registers new procedures but not a changed signature of one
            # already registered (seen on an upgrade); a restart registers all of them.
            part = Neo4jPart(settings, progress)
            if part.pid() is None:
                raise
            progress(f"[browser] {e.args[0]}: restarting neo4j so that APOC registers them")
            part.stop()
            part.start()
            wait_callable(driver, library, {p.name: p.digest for p in procedures(library)})
            outcome = install(driver, library)
    finally:
        driver.close()
    if outcome["installed"] or outcome["dropped"]:
        progress(f"[browser] custom.substrate_* procedures: {len(outcome['installed'])} "
                 f"installed, {len(outcome['dropped'])} dropped, "
                 f"{len(outcome['skipped'])} template(s) skipped {outcome['skipped']}")
    return outcome["installed"]


def up(settings: Settings, demo: bool = True, gateway: bool = True,
       progress: Progress = _print) -> dict[str, Any]:
    started_at = time.monotonic()
    for d in (settings.home, settings.cache_dir, settings.run_dir, settings.log_dir):
        d.mkdir(parents=True, exist_ok=True)
    if not settings.embedding_url:
        from substrate import local_model

        local_model.install(settings)
    helm.ensure(settings, progress)
    started = start_data_parts(settings, progress)
    migrations = migrate_all(settings, progress)
    install_procedures(settings, progress)
    from substrate.cli_keys import ensure_admin_key

    key_file, standing = ensure_admin_key(settings)
    snapshots: list[int] = []
    if demo:
        from substrate.demo.load import load_demo

        snapshots = load_demo(settings, progress)
    if gateway and GatewayPart(settings, progress).start():
        started.append("gateway")
    if CommunitiesWatchPart(settings, progress).start():  # incremental communities (RSN-15)
        started.append("communities")
    report = {
        "started": started, "migrations_applied": migrations, "demo_snapshots": len(snapshots),
        "seconds": round(time.monotonic() - started_at, 1),
    }
    if not (started or migrations or snapshots):
        progress("substrate is already up: every part healthy, nothing to migrate or load")
    else:
        progress(f"substrate is up ({report['seconds']}s): {report}")
    progress(f"gateway: http://{settings.gateway_host}:{settings.gateway_port}  "
             f"neo4j browser: http://127.0.0.1:{settings.neo4j_http_port}/browser/")
    if standing == "revoked":
        progress(f"admin API key: {key_file} was revoked; make another with `substrate keys "
                 "create --name admin --tenant '*' --clearance restricted --role admin`, or "
                 "delete the file and run `substrate up` again")
        return report
    progress(f"admin API key{' (new)' if standing == 'new' else ''}: {key_file} (mode 0600). "
             "Try:\n"
             f"  curl -s -H \"Authorization: Bearer $(cat {key_file})\" "
             f"http://{settings.gateway_host}:{settings.gateway_port}/dependencies/checkout")
    return report
