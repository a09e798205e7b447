"""``substrate keys create|list|revoke``: API keys and their grants (local administration,
straight to PostgreSQL with the state directory's credentials)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from substrate.errors import BadRequest
from substrate.settings import Settings

# psycopg and substrate.security.apikeys are imported where a key is read or written: the
# parser is built for every command, and ``substrate ask`` needs neither (~0.2 s of imports)

ADMIN_KEY_FILE = "admin_api_key"


def cmd_keys(settings: Settings, args: argparse.Namespace) -> int:
    import psycopg

    from substrate.security import apikeys

    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        if args.action == "create":
            grant = apikeys.Grant(tuple(args.tenant or [settings.tenant]), args.clearance,
                                  tuple(args.role or ["reader"]), tuple(args.jurisdiction or ()))
            key_id, key = apikeys.create(conn, args.name, grant)
            print(json.dumps({"id": key_id, "key": key, "note": "shown once; store it now"}))
        elif args.action == "list":
            print(json.dumps(apikeys.list_keys(conn), indent=2))
        else:
            if not args.id:
                raise BadRequest("keys revoke needs the key id (see: substrate keys list)")
            apikeys.revoke(conn, args.id)
            print(json.dumps({"id": args.id, "revoked": True}))
    return 0


def ensure_admin_key(settings: Settings) -> tuple[str, str]:
    """The local admin key file (tenants *, clearance restricted, role admin), mode 0600;
    (path, standing): ``new`` when created now — at the first ``up``, or when the file names
    a key this database does not have (its data directory was reset) — else the key's
    standing (``valid``, or ``revoked``: an admin revoked it, and it is left so)."""
    import psycopg

    from substrate.security import apikeys

    path = settings.secrets_dir / ADMIN_KEY_FILE
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        if path.is_file() and (kept := path.read_text().strip()):
            standing = apikeys.standing(conn, kept)
            if standing != "unknown":
                return str(path), standing
        settings.secrets_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        _id, key = apikeys.create(conn, "local admin (substrate up)",
                                  apikeys.Grant(("*",), "restricted", ("admin",)))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return str(path), "new"


def add_key_commands(sub: Any) -> None:
    p = sub.add_parser("keys", help="API keys: create | list | revoke ID")
    p.add_argument("action", choices=["create", "list", "revoke"])
    p.add_argument("id", nargs="?", help="revoke: the key id")
    p.add_argument("--name", default="api key")
    p.add_argument("--tenant", action="append", help="a tenant it may read (repeat), or '*'")
    p.add_argument("--clearance", default="internal",
                   choices=["public", "internal", "confidential", "restricted"])
    p.add_argument("--role", action="append", choices=["reader", "reviewer", "admin"])
    p.add_argument("--jurisdiction", action="append", help="restrict to jurisdictions (repeat)")
    p.set_defaults(handler=cmd_keys)
