"""Authentication of data-plane requests (spec §2.2), secure by default."""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.requests import Request

from memhub.errors import BadRequest, Unauthorized
from memhub.gateway_key import GatewayKey

MISSING_BEARER = "Unauthorized: missing Bearer token"
INVALID_TOKEN = "Unauthorized: invalid token"
MISSING_AUTH_HEADER = "Missing or invalid Authorization header. Expected: Bearer {api_key}"
MISSING_SERVICE_ID = "Missing x-tdai-service-id header"
MAX_SERVICE_ID_CHARS = 128
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer …` header, or None."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


@dataclass(frozen=True, slots=True)
class Authenticator:
    """Layer 1: the gateway key (unless explicitly disabled); layer 2: a tenant service id."""

    key: GatewayKey | None

    def check_gateway(self, request: Request) -> None:
        """Every route but /health and OPTIONS needs the gateway key when one is configured."""
        if self.key is None:
            return
        if not request.headers.get("authorization", "").strip():
            raise Unauthorized(MISSING_BEARER)
        token = bearer_token(request)
        if token is None:
            raise Unauthorized(MISSING_BEARER)
        if not self.key.matches(token):
            raise Unauthorized(INVALID_TOKEN)

    def tenant(self, request: Request) -> str:
        """The service id (tenant) of a data-plane request, after both layers pass."""
        self.check_gateway(request)
        if bearer_token(request) is None:
            raise Unauthorized(MISSING_AUTH_HEADER)
        service_id = request.headers.get("x-tdai-service-id", "").strip()
        if not service_id:
            raise Unauthorized(MISSING_SERVICE_ID)
        if len(service_id) > MAX_SERVICE_ID_CHARS or not _PRINTABLE.match(service_id):
            raise BadRequest(f"x-tdai-service-id: must be 1..{MAX_SERVICE_ID_CHARS} printable characters")
        return service_id
