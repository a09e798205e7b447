"""``.env`` files and Compose-style ``${VAR}`` interpolation."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from substrate.connectors.yamlnodes import Fact

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$")
_VAR = re.compile(
    r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|([A-Za-z_][A-Za-z0-9_]*))"
)


def is_env_file(path: str) -> bool:
    """``.env``, ``.env.local``, ``config.env``, ``app.env.example``: files of ``KEY=VALUE``."""
    name = posixpath.basename(path)
    return name.startswith(".env") or name.endswith(".env") or ".env." in name


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace('\\"', '"') if value[0] == '"' else inner
    cut = re.search(r"\s#", value)
    return (value[: cut.start()] if cut else value).strip()


def parse_env_file(text: str, path: str) -> dict[str, Fact]:
    """``KEY=VALUE`` lines (``export``, comments, quotes) as facts with their lines. As in
    Compose, an unquoted or double-quoted value is interpolated with the variables set above
    it (``CART_ADDR=cart:${CART_PORT}``); a single-quoted one is literal."""
    out: dict[str, Fact] = {}
    for no, raw in enumerate(text.splitlines(), start=1):
        if raw.lstrip().startswith("#"):
            continue
        match = _LINE.match(raw)
        if match:
            value = _unquote(match.group(2))
            if "$" in value and not match.group(2).strip().startswith("'"):
                value = interpolate(value, {k: f.value for k, f in out.items()})
            out[match.group(1)] = Fact(value, path, no)
    return out


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose interpolation: ``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``,
    ``${VAR:+alt}``, ``${VAR+alt}``, ``${VAR:?err}``, ``$$`` (a literal ``$``).

    Unset variables become the empty string (Compose warns and does the same)."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        op, arg = match.group(2), interpolate(match.group(3) or "", env)
        present = name in env
        filled = present and env[name] != ""
        if op in (":-", "-"):
            use_default = not filled if op == ":-" else not present
            return arg if use_default else env[name]
        if op in (":+", "+"):
            return arg if (filled if op == ":+" else present) else ""
        return env.get(name, "")

    return _VAR.sub(sub, value)
