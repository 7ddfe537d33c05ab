"""The SDK's errors: one hierarchy for every client, sync or async.

    ParamError (ValueError)   refused before anything was sent
    TDAMError                 the gateway answered with an error, or with something that is not an envelope
    └── TransportError        no usable answer at all: unreachable, reset, TLS failure, timeout (code -1)

Catching `TDAMError` therefore covers everything that can go wrong once a request is on its way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class TDAMError(Exception):
    """An error envelope (`code` ≠ 0), an HTTP error status, or a response that is not a JSON envelope.

    `code` is the envelope's code, else the HTTP status, else -1 (malformed success, no response);
    `details` is the envelope's `data` when it is an object (e.g. a conflict's current version).
    """

    def __init__(self, code: int, message: str, request_id: str = "", details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = dict(details) if details else None

    @property
    def data(self) -> dict[str, Any]:
        """The envelope's `data` object (`{}` when there was none): `e.data["current_version"]` after a 40901."""
        return self.details if self.details is not None else {}

    def __str__(self) -> str:
        if self.request_id:
            return f"<TDAMError: (code={self.code}, message={self.message}, request_id={self.request_id})>"
        return f"<TDAMError: (code={self.code}, message={self.message})>"


class ParamError(ValueError):
    """Arguments the SDK refuses to send (missing isolation ids, bad endpoint, oversized delete lists …).

    A ValueError, so code written against the original SDK's `ValueError` for a write without a
    session id keeps catching it.
    """


class TransportError(TDAMError):
    """The request got no usable HTTP response: connection refused or reset, DNS or TLS failure, timeout.

    Always `code == -1`; `timeout` says whether the time limit was what ran out. The httpx exception
    is chained as `__cause__`.
    """

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(-1, message)
        self.timeout = timeout
