"""Who is calling: the gateway key (layer 1), the tenant (layer 2) and, optionally, a user key.

Secure by default: the gateway key is required unless explicitly disabled. A user key
(`x-tdai-user-key`, or a user key sent as the Bearer token) identifies a user; on the data plane
it narrows what the request may touch (memhub.meta.access), on the management plane it is required.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memhub.errors import BadRequest, Unauthorized
from memhub.gateway_key import GatewayKey
from memhub.ids import MAX_SERVICE_ID_CHARS, valid_service_id
from memhub.meta.caller import Caller
from memhub.meta.errors import MetaError
from memhub.meta.keys import KEY_PREFIX
from memhub.meta.users import Users

MISSING_BEARER = "Unauthorized: missing Bearer token"
INVALID_TOKEN = "Unauthorized: invalid token"
MISSING_AUTH_HEADER = "Missing or invalid Authorization header. Expected: Bearer {api_key}"
MISSING_SERVICE_ID = "Missing x-tdai-service-id header"
MISSING_USER_KEY = "unauthorized: missing_user_key"
INVALID_USER_KEY = "unauthorized: invalid_user_key"
USER_KEY_HEADER = "x-tdai-user-key"


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer …` header, or None."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request presented: whether the gateway key passed, and any user key."""

    gateway: bool
    user_key: str | None


@dataclass(frozen=True, slots=True)
class Authenticator:
    """Layer 1 (gateway key), layer 2 (service id) and user keys."""

    key: GatewayKey | None
    users: Users
    require_user_key: bool = False  # MEMHUB_DATA_PLANE_AUTH=user_key
    open_tools: bool = False  # MEMHUB_KNOWLEDGE_TOOLS_AUTH=open: the reference's unauthenticated tools routes

    def credentials(self, request: Request) -> Credentials:
        """Layer 1: the gateway key, or a user key in its place; 401 for anything else."""
        token = bearer_token(request)
        header_key = request.headers.get(USER_KEY_HEADER, "").strip() or None
        if self.key is None:
            # --insecure-no-auth: any Bearer passes layer 1; a user key still identifies a user.
            bearer_user = token if token and token.startswith(KEY_PREFIX) else None
            return Credentials(True, header_key or bearer_user)
        if not request.headers.get("authorization", "").strip() or token is None:
            raise Unauthorized(MISSING_BEARER)
        if self.key.matches(token):
            return Credentials(True, header_key)
        if token.startswith(KEY_PREFIX):
            if header_key is not None and header_key != token:
                raise Unauthorized(INVALID_USER_KEY)
            return Credentials(False, token)
        raise Unauthorized(INVALID_TOKEN)

    def check_gateway(self, request: Request) -> None:
        """Routes that only the gateway key opens (internal, instance administration)."""
        if not self.credentials(request).gateway:
            raise Unauthorized(INVALID_TOKEN)

    @staticmethod
    def service_id(request: Request, *, missing: str = MISSING_SERVICE_ID) -> str:
        """Layer 2: the tenant's service id."""
        service_id = request.headers.get("x-tdai-service-id", "").strip()
        if not service_id:
            raise Unauthorized(missing)
        if not valid_service_id(service_id):
            raise BadRequest(f"x-tdai-service-id: must be 1..{MAX_SERVICE_ID_CHARS} printable characters")
        return service_id

    async def _user(self, service_id: str, user_key: str, request_id: str) -> Caller:
        # A database read (and now and then a last-used write): off the event loop.
        caller = await run_in_threadpool(self.users.authenticate, service_id, user_key, request_id)
        if caller is None:
            raise Unauthorized(INVALID_USER_KEY)
        return caller

    async def data_caller(self, request: Request, request_id: str) -> Caller:
        """The caller of a data-plane request: a user when a user key came, else the gateway key."""
        creds = self.credentials(request)
        if bearer_token(request) is None:
            raise Unauthorized(MISSING_AUTH_HEADER)
        service_id = self.service_id(request)
        if creds.user_key is not None:
            return await self._user(service_id, creds.user_key, request_id)
        if self.require_user_key:
            raise Unauthorized(MISSING_USER_KEY)
        return Caller(service_id, request_id=request_id)

    async def tools_caller(self, request: Request, request_id: str) -> Caller:
        """The caller of `/v3/tools/*`: as the data plane; with open tools, a request with no credentials
        at all is read-only access to its tenant (the reference's trust model, opted into explicitly)."""
        presented = request.headers.get("authorization", "").strip() or request.headers.get(USER_KEY_HEADER, "")
        if self.open_tools and not presented.strip():
            return Caller(self.service_id(request), request_id=request_id)
        return await self.data_caller(request, request_id)

    async def meta_caller(self, request: Request, request_id: str, *, needs_user: bool = True) -> Caller:
        """The caller of a management-plane request: always a user, except on auth/verify."""
        creds = self.credentials(request)
        service_id = request.headers.get("x-tdai-service-id", "").strip()
        if not service_id:
            raise MetaError("missing_instance_id", "x-tdai-service-id header is required")
        if not valid_service_id(service_id):
            raise MetaError(
                "invalid_instance_id", f"x-tdai-service-id must be 1..{MAX_SERVICE_ID_CHARS} printable characters"
            )
        if not needs_user:
            return Caller(service_id, request_id=request_id)
        if creds.user_key is None:
            raise Unauthorized(MISSING_USER_KEY)
        return await self._user(service_id, creds.user_key, request_id)
