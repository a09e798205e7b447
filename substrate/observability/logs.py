"""JSON log lines (python-json-logger) that carry the request id, tenant and principal.

The gateway's outermost middleware puts the request's ASGI ``state`` dict into a context
variable (:func:`bind_request`); authentication fills that same dict later with the request
id and the principal, so a record logged anywhere below — a strategy, the cache, a model
call — carries them. ``LOG_FORMAT=text`` keeps plain lines; ``LOG_LEVEL`` sets the level.
"""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar, Token
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from substrate.settings import Settings

_REQUEST: ContextVar[dict[str, Any] | None] = ContextVar("substrate_request", default=None)
FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s"
RENAME = {"asctime": "time", "levelname": "level", "name": "logger"}


def bind_request(state: dict[str, Any], tenant_header: str | None) -> Token[Any]:
    """Log records in this context carry ``state``'s request id and principal."""
    return _REQUEST.set({"state": state, "tenant": tenant_header})


def unbind_request(token: Token[Any]) -> None:
    _REQUEST.reset(token)


def request_fields() -> dict[str, Any]:
    """request_id, tenant and principal of the request being served (empty outside one)."""
    bound = _REQUEST.get()
    if bound is None:
        return {}
    state = bound["state"]
    principal = state.get("principal")
    tenant = bound["tenant"] or getattr(principal, "default_tenant", None)
    if tenant is None and principal is not None and len(principal.tenants) == 1:
        tenant = next(iter(principal.tenants))
    return {"request_id": state.get("request_id"), "tenant": tenant,
            "principal": getattr(principal, "id", None)}


class RequestContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in request_fields().items():
            if value is not None and not hasattr(record, key):
                setattr(record, key, value)
        return True


def json_formatter() -> logging.Formatter:
    return JsonFormatter(FIELDS, rename_fields=RENAME, timestamp=False)


def lean_records() -> None:
    """Skip what log records would gather and no line shows (the logging HOWTO's
    "Optimization": caller frame, thread, process names): an access line per request."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def configure_logging(settings: Settings) -> None:
    """JSON (default) or text lines on stderr for the root logger and uvicorn's loggers."""
    lean_records()
    fmt = (settings.env.get("LOG_FORMAT") or "json").lower()
    level = (settings.env.get("LOG_LEVEL") or "INFO").upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_formatter() if fmt == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.addFilter(RequestContextFilter())
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not getattr(h, "_substrate", False)]
    handler._substrate = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if logger.handlers:  # --no-access-log leaves uvicorn.access without: keep it off
            logger.handlers = [handler]
            logger.propagate = False
