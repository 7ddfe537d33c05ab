"""Management-plane errors: a reason code, its HTTP status, and the `"<reason>: <text>"` message."""

from __future__ import annotations

from typing import Any

from memhub.errors import MemhubError

_FORBIDDEN = {"permission_denied", "agent_team_mismatch", "task_agent_not_linked", "user_inactive", "team_mismatch"}
_CONFLICT = {
    "asset_not_bindable",
    "duplicate_entry",
    "duplicate_user_key",
    "key_limit_exceeded",
    "user_limit_exceeded",
    "team_limit_exceeded",
    "last_key_cannot_revoke",
    "already_initialized",
    "last_system_admin",
    "member_already_exists",
}
_UNAUTHORIZED = {"invalid_credentials", "invalid_password", "unauthorized"}


def status_for(reason: str) -> int:
    """The original's mapping of a reason code to the envelope code (= HTTP status)."""
    if reason.endswith("_not_found"):
        return 404
    if reason in _FORBIDDEN:
        return 403
    if reason in _CONFLICT:
        return 409
    if reason in _UNAUTHORIZED:
        return 401
    return 400


class MetaError(MemhubError):
    """A management-plane failure; clients read `reason` from the message prefix."""

    def __init__(self, reason: str, text: str, *, data: Any = None) -> None:
        super().__init__(f"{reason}: {text}", data=data)
        self.reason = reason
        self.code = status_for(reason)


def not_found(kind: str, entity_id: str) -> MetaError:
    """`<kind>_not_found: not found: <id>`, the original's wording."""
    return MetaError(f"{kind}_not_found", f"not found: {entity_id}")


def denied(text: str) -> MetaError:
    """`permission_denied: <text>`."""
    return MetaError("permission_denied", text)
