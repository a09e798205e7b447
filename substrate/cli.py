"""The ``substrate`` command line. Exit codes: 0 ok, 1 failure, 2 usage, 3 not healthy."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from substrate.cli_errors import cli_failure
from substrate.errors import SubstrateError
from substrate.settings import Settings

Handler = Callable[[Settings, argparse.Namespace], int]


def cmd_up(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.stack.up import up

    up(settings, demo=not args.no_demo, gateway=not args.no_gateway)
    return 0


def cmd_down(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.stack.supervisor import down

    stopped = down(settings)
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.stack.supervisor import status

    parts = status(settings)
    if args.json:
        print(json.dumps([p.to_dict() for p in parts], indent=2))
    else:
        for p in parts:
            state = "healthy" if p.healthy else ("running, unhealthy" if p.running else "down")
            extra = p.version if p.healthy else (p.detail or "")
            print(f"{p.name:11} {state:19} pid={p.pid or '-':<8} {p.address}  {extra}")
    return 0 if all(p.healthy for p in parts) else 3


def cmd_logs(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.stack.part import tail
    from substrate.stack.supervisor import part_by_name

    print(tail(part_by_name(settings, args.part).log_file, args.lines))
    return 0


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.db import neo4j_driver
    from substrate.migrate import Migrator

    targets = ["postgres", "neo4j"] if args.target == "all" else [args.target]
    driver = neo4j_driver(settings)
    try:
        migrator = Migrator(settings, driver)
        out: dict[str, Any] = {}
        for target in targets:
            if args.action == "up":
                out[target] = {"applied": migrator.up(target)}  # type: ignore[arg-type]
            elif args.action == "verify":
                out[target] = migrator.verify(target).to_dict()  # type: ignore[arg-type]
            else:
                out[target] = migrator.state(target).to_dict()  # type: ignore[arg-type]
        print(json.dumps(out, indent=2, default=str))
    finally:
        driver.close()
    return 0


def cmd_doctor(settings: Settings, args: argparse.Namespace) -> int:
    from substrate.doctor.checks import run_doctor
    from substrate.doctor.report import render

    return render(run_doctor(settings), args.json)


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.app import create_app

    uvicorn.run(create_app(settings), host=settings.gateway_host, port=settings.gateway_port,
                ws_max_size=settings.max_body_bytes)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from substrate.cli_audit import add_audit_commands
    from substrate.cli_data import add_data_commands
    from substrate.cli_keys import add_key_commands

    parser = argparse.ArgumentParser(prog="substrate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("up", help="install, start, migrate, load the demo, serve (idempotent)")
    p.add_argument("--no-demo", action="store_true", help="do not load the demo organisation")
    p.add_argument("--no-gateway", action="store_true", help="do not start the HTTP gateway")
    p.set_defaults(handler=cmd_up)
    sub.add_parser("down", help="stop every part").set_defaults(handler=cmd_down)
    p = sub.add_parser("status", help="each part's pid, address, version, health")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_status)
    p = sub.add_parser("logs", help="the tail of a part's log")
    p.add_argument("part", choices=["neo4j", "postgres", "redis", "nats", "gateway"])
    p.add_argument("-n", "--lines", type=int, default=50)
    p.set_defaults(handler=cmd_logs)
    p = sub.add_parser("migrate", help="database migrations: status | up | verify")
    p.add_argument("action", choices=["status", "up", "verify"])
    p.add_argument("--target", choices=["all", "neo4j", "postgres"], default="all")
    p.set_defaults(handler=cmd_migrate)
    p = sub.add_parser("doctor", help="check ports, versions, credentials, migrations, indexes "
                                      "and the embedding model; say how to fix each problem")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_doctor)
    sub.add_parser("serve", help="run the gateway in the foreground (containers)").set_defaults(
        handler=cmd_serve
    )
    add_data_commands(sub)
    add_key_commands(sub)
    add_audit_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    handler: Handler = args.handler
    logging.getLogger("neo4j").setLevel(logging.ERROR)  # no retry chatter: one error line
    try:
        return handler(settings, args)
    except SubstrateError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.detail is not None:  # machine-readable, on the one line after the message
            print(json.dumps(exc.detail, default=str)[:4000], file=sys.stderr)
        return int(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`substrate ask ... | head`): as cat does
        _quiet_stdout()
        return 141
    except BaseException as exc:  # noqa: BLE001 - one line and an exit code, no traceback
        line, code = cli_failure(exc)
        print(f"error: {line}", file=sys.stderr)
        return code


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit raises no second
    BrokenPipeError."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
