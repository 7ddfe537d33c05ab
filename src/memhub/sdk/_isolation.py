"""The isolation context of a data-plane client and the client-side guards of its requests."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memhub.sdk._errors import ParamError


class Unset(enum.Enum):
    """Marks an argument that was not passed, where `None` has a meaning of its own (clear the value)."""

    UNSET = enum.auto()


UNSET: Final = Unset.UNSET


def strip_none(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body without its None values (the gateway's defaults apply to what is left out)."""
    return {k: v for k, v in body.items() if v is not None}


def delete_ids(field: str, raw: Sequence[str] | None, max_items: int) -> list[str] | None:
    """A destructive call's id list trimmed and de-duplicated (order kept), or ParamError; None stays None.

    Checked here rather than left to the gateway's 400 so an obviously wrong bulk delete never leaves
    the process.
    """
    if raw is None:
        return None
    if not isinstance(raw, list | tuple):
        raise ParamError(f"{field} must be a list of non-empty strings")
    if any(not isinstance(item, str) or not item.strip() for item in raw):
        raise ParamError(f"{field} must contain only non-empty strings")
    unique = list(dict.fromkeys(item.strip() for item in raw))
    if len(unique) > max_items:
        raise ParamError(f"{field} accepts at most {max_items} items, got {len(unique)}")
    return unique


@dataclass(frozen=True, slots=True)
class Isolation:
    """Whose memory a client reads and writes: team, agent and user (required), session and task (optional)."""

    team_id: str
    agent_id: str
    user_id: str
    session_id: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        # Checked at construction so a missing id is a ParamError now, not a 422 on the first call.
        named = (("team_id", self.team_id), ("agent_id", self.agent_id), ("user_id", self.user_id))
        missing = [name for name, value in named if not isinstance(value, str) or not value.strip()]
        if missing:
            raise ParamError(f"MemoryClient requires non-empty {', '.join(missing)} at construction time")

    def base_body(self) -> dict[str, Any]:
        """team + agent + user (+ task when bound); never the session, which each call decides on."""
        body: dict[str, Any] = {"team_id": self.team_id, "agent_id": self.agent_id, "user_id": self.user_id}
        if self.task_id:
            body["task_id"] = self.task_id
        return body

    def session(self, override: str | None) -> str | None:
        """The session a read narrows to: the call's, else the bound one, else None (across sessions)."""
        return override or self.session_id

    def write_session(self, override: str | None) -> str:
        """The session a write goes to; there must be one.

        Without it the gateway would file the messages under a default session shared with every
        other caller that forgot theirs.
        """
        session = override or self.session_id
        if not session:
            raise ParamError(
                "add_conversation requires session_id: pass it to the constructor or to the call "
                "(reads may omit it to aggregate across sessions)"
            )
        return session

    def replace(
        self,
        *,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | Unset | None = UNSET,
        task_id: str | Unset | None = UNSET,
    ) -> Isolation:
        """A copy with some ids overridden; an empty team/agent/user keeps the current one."""
        return Isolation(
            team_id or self.team_id,
            agent_id or self.agent_id,
            user_id or self.user_id,
            self.session_id if session_id is UNSET else session_id,
            self.task_id if task_id is UNSET else task_id,
        )
