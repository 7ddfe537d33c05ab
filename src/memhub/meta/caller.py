"""Who is asking: the holder of the gateway key, or a user identified by a user key."""

from __future__ import annotations

from dataclasses import dataclass

SYSTEM_ADMIN = "system_admin"


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated principal of one request, inside one tenant (service id)."""

    service_id: str
    user_id: str | None = None  # None: the gateway key, which acts as the service's administrator
    user_type: str = "normal"
    key_id: str | None = None
    request_id: str = ""
    # When the user key stops authenticating (epoch ms; None: never), so a check remembered for a moment ends then.
    key_expires_ms: int | None = None

    def key_expired(self, now_ms: int) -> bool:
        """True once the user key's expiry has come (never for the gateway key or a key without one)."""
        return self.key_expires_ms is not None and self.key_expires_ms <= now_ms

    @property
    def is_system_admin(self) -> bool:
        """A user of type system_admin (manages users of the instance)."""
        return self.user_id is not None and self.user_type == SYSTEM_ADMIN

    @property
    def is_service_key(self) -> bool:
        """True for the gateway key, which the original's data plane trusts like an administrator."""
        return self.user_id is None

    @property
    def is_instance_admin(self) -> bool:
        """The gateway key or a system admin: may see and manage everything of the tenant on the data plane."""
        return self.is_service_key or self.is_system_admin

    @property
    def actor(self) -> str:
        """How the audit log names this caller."""
        return self.user_id or "gateway-key"
