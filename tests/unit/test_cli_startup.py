"""The command line starts light: ``substrate ask`` talks to the gateway over HTTP and must
not pay for the database clients' imports (the Neo4j driver alone took ~0.9 s, pandas with
it), while a failure still names the part of the stack that could not be reached."""

from __future__ import annotations

import subprocess
import sys

import nats.errors
import psycopg
import redis.exceptions
from neo4j.exceptions import ServiceUnavailable

from substrate.cli_errors import EXIT_FAILURE, EXIT_UNREACHABLE, cli_failure

HEAVY = ("neo4j", "psycopg", "redis", "nats", "pandas", "substrate.security.apikeys")


def test_building_the_parser_and_the_ask_path_import_no_database_client() -> None:
    probe = ("import sys; from substrate.cli import build_parser; build_parser(); "
             "import substrate.retrieval.ask; "
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == ""


def test_an_unreachable_part_is_named_with_exit_3() -> None:
    cases = [(ServiceUnavailable("Couldn't connect to 127.0.0.1:7687"), "Neo4j"),
             (psycopg.OperationalError("connection refused"), "PostgreSQL"),
             (redis.exceptions.ConnectionError("Error 111"), "Redis"),
             (nats.errors.NoServersError(), "NATS")]
    for exc, part in cases:
        line, code = cli_failure(exc)
        assert code == EXIT_UNREACHABLE and line.startswith(f"{part} is unreachable"), line


def test_a_bug_names_its_type_with_exit_1() -> None:
    line, code = cli_failure(ValueError("bad thing"))
    assert (line, code) == ("ValueError: bad thing", EXIT_FAILURE)
