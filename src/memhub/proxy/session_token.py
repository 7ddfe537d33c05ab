"""Session tokens: what the `<tdai_memory_tools>` recipes carry instead of a secret.

The model calls memhub's memory bridge with `x-memhub-session: <token>`; the token names the turn's tenant, user,
key, team, agent, task and session and is signed by this server, so the prompt holds no user key and the model
cannot change whose memory it reads. A token is read-only by construction (the bridge serves only search and read
operations) and stops working when it expires or when the user key it names is revoked or expires.

Tokens are deterministic: the same identity gets the same token for a whole validity window (the expiry is
rounded up to a window boundary), so a session's injected prompt stays byte-identical turn after turn and the
upstream's prompt cache keeps hitting.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memhub.knowledge.tools_block import SESSION_TOKEN_HEADER
from memhub.meta.caller import Caller
from memhub.meta.users import Users
from memhub.proxy.model import ProxyIdentity
from memhub.proxy.ports import ProxyDenied

# Where the memory tools send the token, and the route prefix they call (`{proxy_url}{BRIDGE_PATH}/<op>`); the
# bridge's routes (memhub.api.routes.memory_bridge) and the `<tdai_memory_tools>` recipes both read these.
SESSION_HEADER = SESSION_TOKEN_HEADER
BRIDGE_PATH = "/memory-bridge/v3"
TOKEN_PREFIX = "mhs1."
# The signing key is derived from the server secret under this label, so the secret itself never signs anything
# and a token's key can never be confused with the key hashes made from the same secret.
KEY_LABEL = b"memhub/proxy/session-token/v1"
MAX_TOKEN_CHARS = 4096
INVALID = "unauthorized: invalid session token"
EXPIRED = "unauthorized: session token expired"
KEY_INACTIVE = "unauthorized: the session's user key is no longer active"
_FIELDS = ("s", "u", "k", "t", "a", "x", "c", "src", "e")


@dataclass(frozen=True, slots=True)
class VerifiedSession:
    """A valid token: the identity it names and the caller its key stands for now."""

    identity: ProxyIdentity
    caller: Caller
    expires_at: int  # epoch seconds


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SessionTokens:
    """Mints and verifies session tokens under a key derived from the server secret.

    `secret` is the server's key-hashing secret (`Hub.key_hasher.secret`: the data dir's `key-secret` file or
    MEMHUB_KEY_SECRET), which never lives in the database, so a copy of the database alone cannot forge a token;
    gateways sharing a database already share it, so any of them verifies any token. `ttl_seconds` is the
    validity window: a token is valid for at least one window and at most two.
    """

    def __init__(
        self, secret: bytes, ttl_seconds: int, users: Users, *, clock: Callable[[], float] = time.time
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds: must be positive")
        if not secret:
            raise ValueError("secret: must not be empty")
        self._key = hmac.new(secret, KEY_LABEL, hashlib.sha256).digest()
        self.ttl_seconds = ttl_seconds
        self.users = users
        self.clock = clock

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())

    def expiry(self) -> int:
        """The expiry a token minted now gets: the end of the window after the current one."""
        window = int(self.clock()) // self.ttl_seconds
        return (window + 2) * self.ttl_seconds

    def mint(self, identity: ProxyIdentity) -> str:
        """The identity's token (url-safe, header-safe); the same for the same identity within one window."""
        if identity.key_id is None:
            raise ValueError("identity.key_id: a token must name the user key it stands for")
        claims = {
            "s": identity.service_id,
            "u": identity.user_id,
            "k": identity.key_id,
            "t": identity.team_id,
            "a": identity.agent_id,
            "x": identity.task_id,
            "c": identity.session_id,
            "src": identity.agent_source,
            "e": self.expiry(),
        }
        payload = _b64(json.dumps(claims, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
        return f"{TOKEN_PREFIX}{payload}.{self._sign(payload)}"

    def verify(self, token: str, request_id: str = "") -> VerifiedSession:
        """The session a token names; ProxyDenied(401) when it is malformed, tampered with or expired, or when
        its user key can no longer authenticate. Reads the key store (call it off the event loop)."""
        claims = self._claims(token)
        if claims["e"] <= self.clock():
            raise ProxyDenied(401, EXPIRED)
        caller = self.users.key_caller(claims["s"], claims["k"], request_id)
        if caller is None or caller.user_id != claims["u"]:
            raise ProxyDenied(401, KEY_INACTIVE)
        identity = ProxyIdentity(
            service_id=claims["s"],
            user_id=claims["u"],
            key_id=claims["k"],
            session_id=claims["c"],
            agent_source=claims["src"],
            team_id=claims["t"],
            agent_id=claims["a"],
            task_id=claims["x"],
            user_type=caller.user_type,
        )
        return VerifiedSession(identity, caller, claims["e"])

    def _claims(self, token: str) -> dict[str, Any]:
        token = token.strip()
        if len(token) > MAX_TOKEN_CHARS or not token.startswith(TOKEN_PREFIX):
            raise ProxyDenied(401, INVALID)
        payload, dot, signature = token[len(TOKEN_PREFIX) :].partition(".")
        if not dot or not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            raise ProxyDenied(401, INVALID)
        try:
            claims = json.loads(_unb64(payload))
        except (binascii.Error, ValueError):
            raise ProxyDenied(401, INVALID) from None
        # Signed by this server, so well-formed unless the format changed: checked anyway, a token is input.
        if not isinstance(claims, dict) or set(claims) != set(_FIELDS):
            raise ProxyDenied(401, INVALID)
        required = ("s", "u", "k", "c", "src")
        if any(not isinstance(claims[f], str) for f in required) or not isinstance(claims["e"], int):
            raise ProxyDenied(401, INVALID)
        if any(claims[f] is not None and not isinstance(claims[f], str) for f in ("t", "a", "x")):
            raise ProxyDenied(401, INVALID)
        return claims
