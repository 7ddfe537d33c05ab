"""Authorization of the data plane: a user key acts only as its user, in its teams, through agents it may see.

The original trusts whatever team/agent/user ids a request carries. Here a
request authenticated by a user key is checked before anything is read or written; the gateway
key keeps the original's service-administrator behaviour unless MEMHUB_DATA_PLANE_AUTH=user_key.
L2/L3 follow L0/L1: a profile belongs to one user (Isolation.profile), so a user key that acts only
as its own user reads and writes only its own scenes and persona, never a teammate's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memhub.errors import Forbidden
from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.guards import membership
from memhub.model.meta import MetaKind
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
        """The isolation to act under, or AccessDenied; the gateway key passes unchanged."""
        if caller.is_service_key:
            return isolation
        user_id = caller.user_id
        assert user_id is not None
        if isolation.user_id != user_id and not caller.is_system_admin:
            raise AccessDenied("user_id", "a user key acts only as its own user")
        if caller.is_system_admin:
            return isolation
        team_id, agent_id = isolation.team_id, isolation.agent_id
        with self.store.reading(caller.service_id) as r:
            if team_id == DEFAULT_ID:
                raise AccessDenied("team_id", "not a team this user is an active member of")
            check_user_ids(r, user_id, team_id, agent_id if agent_id != DEFAULT_ID else "", isolation.task_id)
        # The profile is the key's own user's (checked above) under the team it acts in.
        return replace(isolation, profile_team_id=team_id)


def check_user_ids(r: MetaReader, user_id: str, team_id: str, agent_id: str | None, task_id: str | None) -> None:
    """AccessDenied naming the first id a user key may not act under: a team it is not an active member of, an
    agent not of that team or not one it may use (`agent_id` None: no agent asked for; "": a missing one), a task
    not of that team."""
    if membership(r, team_id, user_id) is None:
        raise AccessDenied("team_id", "not a team this user is an active member of")
    if agent_id is not None:
        agent = r.get(MetaKind.AGENT, agent_id) if agent_id else None
        if agent is None or agent["team_id"] != team_id:
            raise AccessDenied("agent_id", f"not an agent of team {team_id}")
        if not agent_visible(r, agent, user_id):
            raise AccessDenied("agent_id", "not an agent this user may use")
    if task_id:
        task = r.get(MetaKind.TASK, task_id)
        if task is None or task["team_id"] != team_id:
            raise AccessDenied("task_id", f"not a task of team {team_id}")
