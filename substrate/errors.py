"""One root error with narrow subclasses; each knows its HTTP status and machine code."""

from __future__ import annotations

from typing import Any


class SubstrateError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "detail": self.detail}}


class BadRequest(SubstrateError):
    status = 400
    code = "bad_request"


class NotFound(SubstrateError):
    status = 404
    code = "not_found"


class Unauthorized(SubstrateError):
    """No or bad credentials (the gateway adds ``WWW-Authenticate``)."""

    status = 401
    code = "unauthorized"


class UnsupportedMediaType(SubstrateError):
    status = 415
    code = "unsupported_media_type"


class Forbidden(SubstrateError):
    status = 403
    code = "forbidden"


class NotImplementedYet(SubstrateError):
    status = 501
    code = "not_implemented"


class Unavailable(SubstrateError):
    status = 503
    code = "unavailable"


class ValidationFailed(SubstrateError):
    """A write batch was rejected; ``detail`` lists every offending record with its reason."""

    status = 422
    code = "validation_failed"


class BatchTooLarge(SubstrateError):
    """A write batch would not fit one Neo4j transaction (``db.memory.transaction.max``);
    nothing was written. ``detail``: the estimate and the budget, in bytes."""

    status = 413
    code = "batch_too_large"


class StackError(SubstrateError):
    """A part of the local stack could not be installed, started or checked."""

    code = "stack_error"


class MigrationError(SubstrateError):
    code = "migration_error"


class TemplateError(SubstrateError):
    code = "template_error"


class Conflict(SubstrateError):
    """The request collides with work in progress (e.g. a replay of the same source)."""

    status = 409
    code = "conflict"
    exit_code = 4  # the CLI's exit code: busy, try again later
