"""Who may read and write which skill.

The gateway key (and a system admin) acts for the tenant, as in the original: the body's ids narrow what it
touches (a `team_id` makes a skill of another team not found; an `agent_id` on a write must be the skill's
owner agent, else SKILL_NOT_OWNER).

A user key acts only as its own user, inside a team it is an active member of (`team_id` is required), and
through an agent of that team it may use. It reads the skills whose asset it may read (the asset permission
algorithm with ACLs; the asset's owner always) and the ones whose current version it wrote itself, and writes
through the skill's owner agent only. Refusals of the key's ids are 403 naming the field, as on the data plane;
a skill the key may not read is not found.

Who reviews: a skill's reviewers are its owner agent's owner and the team's owner and admins (and the tenant's
administrators: the gateway key, a system admin). A version written by anyone else is a draft (`candidate`) until
a reviewer publishes it; until then only its author and its reviewers can read it, and no prompt but its author's
lists it. A gateway-key write that names a `user_id` is that user's write (the skill miner writes so, for the
user whose work it mined); one that names none is the tenant's own.

Nobody acts through an archived agent, as on the data plane: a request naming one (to read through it, to write as
a skill's owner agent, or to bind a new skill to it) is refused 403 naming `agent_id`, whoever sends it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memhub.knowledge.skill.errors import SkillNotFound, SkillNotOwner, SkillTeamMismatch
from memhub.meta.access import AccessDenied, check_user_ids, refuse_archived
from memhub.meta.assets import may_read_asset, readable_asset_ids
from memhub.meta.caller import SYSTEM_ADMIN, Caller
from memhub.meta.guards import is_team_admin
from memhub.model.meta import MetaKind, Row
from memhub.model.skills import SkillReader, SkillVersion
from memhub.store.meta import MetaReader, MetaStore

SKILL_ASSET = "skill"


@dataclass(frozen=True, slots=True)
class SkillIds:
    """The ids a skill request carries in its body (the skill routes read no isolation headers)."""

    team_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class Actor:
    """A caller and the ids it acts under, after authorization."""

    caller: Caller
    ids: SkillIds

    @property
    def limited(self) -> bool:
        """True for a user key that is no system admin: it sees only skills it may read."""
        return not self.caller.is_instance_admin


def _readable(r: MetaReader, asset: Row | None, user_id: str, agent_id: str | None) -> bool:
    return asset is not None and asset["asset_type"] == SKILL_ASSET and may_read_asset(r, asset, user_id, agent_id)


def _administers(r: MetaReader, team_id: str, user_id: str) -> bool:
    """The user owns or administers the team (and may review every skill of it)."""
    team = r.get(MetaKind.TEAM, team_id) if team_id else None
    return team is not None and (team["owner_user_id"] == user_id or is_team_admin(r, team_id, user_id))


def _is_system_admin(r: MetaReader, user_id: str) -> bool:
    user = r.get(MetaKind.USER, user_id)
    return user is not None and user["user_type"] == SYSTEM_ADMIN


def reviews(r: MetaReader, user_id: str, team_id: str, owner_agent_id: str) -> bool:
    """Whether the user may publish skills of this owner agent: the agent's owner, the team's owner or an admin
    of it, or a system admin."""
    agent = r.get(MetaKind.AGENT, owner_agent_id)
    if agent is not None and agent["team_id"] == team_id and agent["owner_user_id"] == user_id:
        return True
    return _administers(r, team_id, user_id) or _is_system_admin(r, user_id)


@dataclass(frozen=True, slots=True)
class SkillAccess:
    """Authorization of skill requests against the meta store."""

    store: MetaStore

    def actor(self, caller: Caller, ids: SkillIds, *, write: bool = False) -> Actor:
        """The ids to act under, or AccessDenied (403) naming the field a user key may not use (or an archived
        agent, for every caller)."""
        if caller.is_instance_admin:
            if ids.agent_id:
                with self.store.reading(caller.service_id) as r:
                    refuse_archived(r, ids.agent_id)
            return Actor(caller, ids)
        me = caller.user_id
        assert me is not None
        if ids.user_id is not None and ids.user_id != me:
            raise AccessDenied("user_id", "a user key acts only as its own user")
        if not ids.team_id:  # a user key always acts inside one of its teams
            raise AccessDenied("team_id", "not a team this user is an active member of")
        team_id = ids.team_id
        if write and not ids.agent_id:
            raise AccessDenied("agent_id", "is required with a user key to write (the skill's owner agent)")
        with self.store.reading(caller.service_id) as r:
            check_user_ids(r, me, team_id, ids.agent_id or None, ids.task_id)
        return Actor(caller, replace(ids, user_id=me))

    def may_read(self, actor: Actor, skill: SkillVersion) -> bool:
        """Whether the actor may see this skill (any of its versions), judged by its head: its author always; a
        draft only its reviewers besides; a published skill whoever may read its asset."""
        if actor.ids.team_id and skill.team_id != actor.ids.team_id:
            return False
        if not actor.limited:
            return True
        me = actor.caller.user_id
        assert me is not None
        if skill.user_id == me:
            return True
        with self.store.reading(actor.caller.service_id) as r:
            if skill.status == "candidate":
                return reviews(r, me, skill.team_id, skill.owner_agent_id)
            asset = r.get(MetaKind.ASSET, skill.skill_id)
            return _readable(r, asset, me, actor.ids.agent_id)

    def trusted_write(self, actor: Actor, team_id: str, owner_agent_id: str) -> bool:
        """Whether a version the actor writes now is reviewed as written: the tenant's own write (no user named),
        one for an owner agent the management plane does not know (nobody could review it), or one by a
        reviewer. Anything else becomes a draft."""
        author = actor.ids.user_id
        if not author:
            return True
        with self.store.reading(actor.caller.service_id) as r:
            agent = r.get(MetaKind.AGENT, owner_agent_id) if team_id else None
            if agent is None or agent["team_id"] != team_id:
                return True
            return reviews(r, author, team_id, owner_agent_id)

    def may_publish(self, actor: Actor, skill: SkillVersion) -> bool:
        """Whether the actor may publish the skill's draft: the gateway key, or a reviewer's user key."""
        if actor.caller.is_service_key:
            return True
        me = actor.caller.user_id
        assert me is not None
        with self.store.reading(actor.caller.service_id) as r:
            return reviews(r, me, skill.team_id, skill.owner_agent_id)

    def check_read(self, actor: Actor, skill: SkillVersion | None, skill_id: str) -> SkillVersion:
        """The skill, or SkillNotFound: one the actor may not see does not exist for it."""
        if skill is None or not self.may_read(actor, skill):
            raise SkillNotFound(f"no skill {skill_id}")
        return skill

    def check_write(self, actor: Actor, head: SkillVersion | None, skill_id: str) -> SkillVersion:
        """The head the actor may change: one it may read (else not found), owned by the request's agent when one
        is named."""
        if head is None or (actor.ids.team_id and head.team_id != actor.ids.team_id):
            raise SkillNotFound(f"no skill {skill_id}")
        if actor.limited and not self.may_read(actor, head):
            raise SkillNotFound(f"no skill {skill_id}")
        if actor.ids.agent_id and head.owner_agent_id != actor.ids.agent_id:
            raise SkillNotOwner(f"agent {actor.ids.agent_id} is not the owner (owner={head.owner_agent_id})")
        return head

    def reader(self, actor: Actor) -> SkillReader | None:
        """What a limited actor may read in its team, for listings and searches (as `may_read` judges one skill);
        None: no restriction."""
        if not actor.limited:
            return None
        user_id, team_id = actor.caller.user_id, actor.ids.team_id
        assert user_id is not None and team_id is not None
        with self.store.reading(actor.caller.service_id) as r:
            readable = readable_asset_ids(r, user_id, team_id, SKILL_ASSET, actor.ids.agent_id)
            if _administers(r, team_id, user_id):
                return SkillReader(user_id, readable, reviews_team=True)
            owned = r.find(MetaKind.AGENT, {"team_id": team_id, "owner_user_id": user_id})
            return SkillReader(user_id, readable, reviewed_agent_ids=sorted(a["agent_id"] for a in owned))

    def owner_agent(self, actor: Actor) -> Row | None:
        """The meta agent a new skill of this request is bound to: `agent_id` in `team_id`, when it exists.

        An agent of another team than the request's is SKILL_TEAM_MISMATCH (a user key was refused earlier).
        """
        team_id, agent_id = actor.ids.team_id, actor.ids.agent_id
        if not (team_id and agent_id):
            return None
        with self.store.reading(actor.caller.service_id) as r:
            agent = r.get(MetaKind.AGENT, agent_id)
        if agent is not None and agent["team_id"] != team_id:
            raise SkillTeamMismatch(f"agent {agent_id} belongs to team {agent['team_id']}, not {team_id}")
        return agent
