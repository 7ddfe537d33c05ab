"""Who may read, change and apply which custom memory prompts (/v3/memory-prompt/*).

The original lets any key of an instance list, rewrite, delete and apply every prompt, including the
instance-wide setting that reaches every team's extraction. Here a prompt belongs to one team, or to
the instance (no owner team), and what a caller may do follows the team roles of the management
plane:

- the gateway key and a system admin (instance administrators) manage everything: instance-level
  prompts and the instance-wide setting, and every team's prompts and settings;
- an active member of a team reads the team's prompts, settings and setting changes, and resolves
  the effective prompt of the team and of the team's agents they may use;
- a team admin (a team's owner is one) also creates, changes and deletes the team's prompts and
  applies or clears them on the team and on the team's agents they may use.

A prompt a caller may not read does not exist for them (404), so its id discloses nothing; a team or
agent they may not name is refused with 403 naming the field, as on the rest of the data plane.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memhub.meta.access import AccessDenied
from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.guards import ACTIVE
from memhub.model.meta import MetaKind
from memhub.store.meta import MetaReader, MetaStore

NOT_MEMBER = "not a team this user is an active member of"
NOT_USABLE = "not an agent this user may use"
INSTANCE_ONLY = "only a system admin or the gateway key may manage instance-level memory prompts"


def not_admin(team_id: str) -> str:
    """The rule a team member who is not one of its admins breaks by changing its prompts."""
    return f"only an admin of team {team_id} may change its memory prompts"


@dataclass(frozen=True, slots=True)
class PromptRights:
    """Whose prompts one caller may read and change: the teams it belongs to and administers, or everything."""

    everything: bool = False  # an instance administrator
    member_of: frozenset[str] = frozenset()
    admin_of: frozenset[str] = frozenset()

    @property
    def readable(self) -> frozenset[str] | None:
        """Teams whose prompts, settings and setting changes the caller reads; None: all, the instance's too."""
        return None if self.everything else self.member_of

    @property
    def writable(self) -> frozenset[str] | None:
        """Owner teams whose prompts the caller changes; None: all, the instance's too."""
        return None if self.everything else self.admin_of

    def may_read(self, owner_team_id: str) -> bool:
        """May the caller see a prompt of this owner ("" = the instance)?"""
        return self.everything or owner_team_id in self.member_of

    def require_write(self, owner_team_id: str, field: str) -> None:
        """403 naming `field` unless the caller may change what this owner ("" = the instance) owns."""
        if self.everything:
            return
        if not owner_team_id:
            raise AccessDenied(field, INSTANCE_ONLY)
        if owner_team_id not in self.admin_of:
            raise AccessDenied(field, not_admin(owner_team_id))


INSTANCE_ADMIN = PromptRights(everything=True)


@dataclass(frozen=True, slots=True)
class PromptAccess:
    """Works out a caller's PromptRights from the management plane, checking the team and agents it names."""

    store: MetaStore

    def rights(
        self,
        caller: Caller,
        team_id: str | None = None,
        agent_ids: Sequence[str] = (),
        *,
        write: bool = False,
        agent_field: str = "agent_id",
    ) -> PromptRights:
        """The caller's rights; 403 when it names a team (and agents of it) it may not read, or change when `write`.

        `agent_field` names the agents in errors: "agent_id", or "agent_ids" (then with the index).
        """
        if caller.is_instance_admin:
            return INSTANCE_ADMIN  # the ids are the request's to choose, as the original trusts them
        user_id = caller.user_id
        assert user_id is not None
        with self.store.reading(caller.service_id) as r:
            memberships = r.find(MetaKind.MEMBER, {"user_id": user_id, "status": ACTIVE})
            rights = PromptRights(
                member_of=frozenset(m["team_id"] for m in memberships),
                admin_of=frozenset(m["team_id"] for m in memberships if m["role"] == "admin"),
            )
            if team_id is not None:
                if team_id not in rights.member_of:
                    raise AccessDenied("team_id", NOT_MEMBER)
                if write:
                    rights.require_write(team_id, "team_id")
                for index, agent_id in enumerate(agent_ids):
                    field = f"{agent_field}[{index}]" if agent_field == "agent_ids" else agent_field
                    _check_agent(r, team_id, agent_id, user_id, field)
        return rights


def _check_agent(r: MetaReader, team_id: str, agent_id: str, user_id: str, field: str) -> None:
    agent = r.get(MetaKind.AGENT, agent_id)
    if agent is None or agent["team_id"] != team_id:
        raise AccessDenied(field, f"not an agent of team {team_id}")
    if not agent_visible(r, agent, user_id):
        raise AccessDenied(field, NOT_USABLE)
