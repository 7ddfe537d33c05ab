"""Tenancy and isolation: who owns a record, and the key every query filters by.

The service id is the tenant; nothing of one service id is ever visible to another.
L0/L1 records belong to (team, user, agent, task) and span sessions; L2/L3 belong to
(team, agent, user): a user's scenes and persona are built from that user's own memories only, so
one member's facts and instructions never reach another member's prompt through a shared profile.
Missing ids fall into the `"default"` bucket (task: the empty bucket), except that a profile without
a team is filed under the user, as in the original (`team:{team||user||default}`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

DEFAULT_ID = "default"


def _key(*parts: str) -> str:
    # A short hex digest is one unicode61 token, so the same key filters SQL rows and FTS postings.
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=10).hexdigest()
    return "k" + digest


@dataclass(frozen=True, slots=True)
class Isolation:
    """The ids a request acts under, after body → header → default resolution."""

    service_id: str
    team_id: str = DEFAULT_ID
    user_id: str = DEFAULT_ID
    agent_id: str = DEFAULT_ID
    task_id: str = ""
    session_id: str | None = None
    profile_team_id: str | None = None  # team of the L2/L3 profile; None means team_id

    @property
    def memory(self) -> MemoryScope:
        """L0/L1 scope: (service, team, user, agent, task)."""
        return MemoryScope(self.service_id, self.team_id, self.user_id, self.agent_id, self.task_id)

    @property
    def profile(self) -> ProfileScope:
        """L2/L3 scope: (service, team, agent, user)."""
        return ProfileScope(self.service_id, self.profile_team_id or self.team_id, self.agent_id, self.user_id)


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """Owner of L0 messages and L1 memories."""

    service_id: str
    team_id: str
    user_id: str
    agent_id: str
    task_id: str

    @property
    def key(self) -> str:
        """Stable opaque key of this scope, used inside SQL and full-text indexes."""
        return _key("mem", self.service_id, self.team_id, self.user_id, self.agent_id, self.task_id)

    @property
    def profile(self) -> ProfileScope:
        """The profile this scope's memories feed: its user's, filed under the user when there is no team."""
        team = self.team_id if self.team_id != DEFAULT_ID else self.user_id
        return ProfileScope(self.service_id, team, self.agent_id, self.user_id)


@dataclass(frozen=True, slots=True)
class ProfileScope:
    """Owner of L2 scenes and the L3 persona: one user's profile with one agent in one team."""

    service_id: str
    team_id: str
    agent_id: str
    user_id: str

    @property
    def key(self) -> str:
        """Stable opaque key of this scope."""
        return _key("prof", self.service_id, self.team_id, self.agent_id, self.user_id)
