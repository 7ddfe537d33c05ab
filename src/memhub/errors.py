"""Typed domain errors; each carries the envelope code and the HTTP status it maps to."""

from __future__ import annotations

from typing import Any


class MemhubError(Exception):
    """Base for every error a client may see; the envelope is built from these fields."""

    code: int = 500
    default_message: str = "Internal server error"

    def __init__(self, message: str | None = None, *, data: Any = None) -> None:
        super().__init__(message or self.default_message)
        self.message = message or self.default_message
        self.data = data

    @property
    def http_status(self) -> int:
        """HTTP status = envelope code when it is 400–599, else 200, as the original gateway maps them."""
        return self.code if 400 <= self.code < 600 else 200


class HttpStatusError(MemhubError):
    """A routing-level failure (unknown path, wrong method) carrying the framework's status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.code = status


class BadRequest(MemhubError):
    code = 400
    default_message = "Bad request"


class Unauthorized(MemhubError):
    code = 401
    default_message = "Unauthorized"


class Forbidden(MemhubError):
    code = 403
    default_message = "Forbidden"


class NotFound(MemhubError):
    code = 404
    default_message = "Not found"


class RequestTimeout(MemhubError):
    code = 408
    default_message = "Request timeout"


class Conflict(MemhubError):
    code = 409
    default_message = "Conflict"


class PayloadTooLarge(MemhubError):
    code = 413
    default_message = "Request body too large"


class UnsupportedMediaType(MemhubError):
    code = 415
    default_message = "Unsupported Content-Encoding"


class Unprocessable(MemhubError):
    code = 422
    default_message = "Unprocessable request"


class TooManyRequests(MemhubError):
    code = 429
    default_message = "Too many requests"


class ServiceUnavailable(MemhubError):
    code = 503
    default_message = "Service unavailable"


class StorageBusy(ServiceUnavailable):
    """The database stayed locked by another writer past the busy timeout; safe to retry."""

    def __init__(self) -> None:
        super().__init__("Storage busy: another writer holds the database; retry", data={"retryable": True})


class FieldError(BadRequest):
    """A request field broke a rule; the message names the field and the rule."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}", data={"errors": [{"field": field, "rule": rule}]})
        self.field = field
        self.rule = rule
