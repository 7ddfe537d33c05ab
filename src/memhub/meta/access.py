"""Authorization of the data plane: a user key acts only as its user, in its teams, through agents it may see.

The original trusts whatever team/agent/user ids a request carries. Here a
request authenticated by a user key is checked before anything is read or written; the gateway
key keeps the original's service-administrator behaviour unless MEMHUB_DATA_PLANE_AUTH=user_key.
L2/L3 follow L0/L1: a profile belongs to one user (Isolation.profile), so a user key that acts only
as its own user reads and writes only its own scenes and persona, never a teammate's.

An archived agent (any status but active) is not acted through by anyone, the gateway key included: its memory
is neither written nor read through the data plane until it is set active again. The management plane still
reads, lists and un-archives it (`agent/update` with `status: active`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memhub.errors import Forbidden
from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.guards import ACTIVE, membership
from memhub.model.meta import MetaKind, Row
from memhub.scope import DEFAULT_ID, Isolation
from memhub.store.meta import MetaReader, MetaStore


class AccessDenied(Forbidden):
    """403 naming the isolation field that the caller may not use."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}", data={"errors": [{"field": field, "rule": rule}]})


@dataclass(frozen=True, slots=True)
class DataPlaneAccess:
    """Checks the ids of one data-plane request against what its caller may act as."""

    store: MetaStore

    def authorize(self, caller: Caller, isolation: Isolation) -> Isolation:
        """The isolation to act under, or AccessDenied; the gateway key and a system admin pass unchanged unless
        the agent is archived."""
        if caller.is_instance_admin:
            if isolation.agent_id != DEFAULT_ID:
                with self.store.reading(caller.service_id) as r:
                    refuse_archived(r, isolation.agent_id)
            return isolation
        user_id = caller.user_id
        assert user_id is not None
        if isolation.user_id != user_id:
            raise AccessDenied("user_id", "a user key acts only as its own user")
        team_id, agent_id = isolation.team_id, isolation.agent_id
        with self.store.reading(caller.service_id) as r:
            if team_id == DEFAULT_ID:
                raise AccessDenied("team_id", "not a team this user is an active member of")
            check_user_ids(r, user_id, team_id, agent_id if agent_id != DEFAULT_ID else "", isolation.task_id)
        # The profile is the key's own user's (checked above) under the team it acts in.
        return replace(isolation, profile_team_id=team_id)


ARCHIVED = "the agent is archived; it is used again once its status is set back to active"


def check_active(agent: Row) -> None:
    """AccessDenied (`agent_id`) for an agent that is archived or otherwise not active."""
    if agent["status"] != ACTIVE:
        raise AccessDenied("agent_id", ARCHIVED)


def refuse_archived(r: MetaReader, agent_id: str) -> None:
    """AccessDenied (`agent_id`) when the id names a registered agent that is not active; an id no agent has passes
    (the gateway key may act under ids the management plane does not know, as in the original)."""
    agent = r.get(MetaKind.AGENT, agent_id) if agent_id else None
    if agent is not None:
        check_active(agent)


def check_user_ids(r: MetaReader, user_id: str, team_id: str, agent_id: str | None, task_id: str | None) -> None:
    """AccessDenied naming the first id a user key may not act under: a team it is not an active member of, an
    agent not of that team, not one it may use or archived (`agent_id` None: no agent asked for; "": a missing
    one), a task not of that team."""
    if membership(r, team_id, user_id) is None:
        raise AccessDenied("team_id", "not a team this user is an active member of")
    if agent_id is not None:
        agent = r.get(MetaKind.AGENT, agent_id) if agent_id else None
        if agent is None or agent["team_id"] != team_id:
            raise AccessDenied("agent_id", f"not an agent of team {team_id}")
        if not agent_visible(r, agent, user_id):
            raise AccessDenied("agent_id", "not an agent this user may use")
        check_active(agent)  # only once the user may see the agent: its status is not told to outsiders
    if task_id:
        task = r.get(MetaKind.TASK, task_id)
        if task is None or task["team_id"] != team_id:
            raise AccessDenied("task_id", f"not a task of team {team_id}")
