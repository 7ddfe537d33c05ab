"""The management services, wired together over one store."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memhub.errors import MemhubError
from memhub.meta.access import DataPlaneAccess
from memhub.meta.agents import Agents
from memhub.meta.assets import (
    Assets,
    chat_memory_asset_id,
    delete_agent_assets,
    delete_chat_memory_asset,
    ensure_chat_memory_asset,
)
from memhub.meta.caller import Caller
from memhub.meta.config import ConfigParams
from memhub.meta.keys import KeyHasher
from memhub.meta.knowledge import KnowledgeRegistry
from memhub.meta.origins import NO_ORIGINS, KnowledgeOrigins
from memhub.meta.quotas import Quotas
from memhub.meta.tasks import Tasks
from memhub.meta.teams import Teams
from memhub.meta.users import Users
from memhub.model.meta import MetaKind, Row
from memhub.scope import DEFAULT_ID, Isolation
from memhub.store.meta import MetaStore

DEFAULT_TEAM = "default-team"
log = logging.getLogger("memhub.meta")


@dataclass(frozen=True, slots=True)
class MetaServices:
    """Users, teams, agents, tasks, assets, config, the knowledge registry and data-plane access."""

    store: MetaStore
    users: Users
    teams: Teams
    agents: Agents
    tasks: Tasks
    assets: Assets
    config: ConfigParams
    knowledge: KnowledgeRegistry
    access: DataPlaneAccess

    @classmethod
    def over(
        cls,
        store: MetaStore,
        hasher: KeyHasher,
        quotas: Quotas | None = None,
        knowledge_origins: KnowledgeOrigins | None = None,
    ) -> MetaServices:
        """All services over one store; quotas default to the original's (500 users, 100 teams, 20 keys).

        `knowledge_origins` are where registered knowledge services may live; without them none is accepted.
        """
        quotas = quotas or Quotas()
        assets = Assets(store)
        agents = Agents(
            store,
            ensure_assets=ensure_chat_memory_asset,
            drop_assets=delete_agent_assets,
            withdraw_memory_asset=delete_chat_memory_asset,
        )
        teams = Teams(store, quotas, create_default_agent=agents.default_agent, cascade_agent=agents.cascade)
        return cls(
            store=store,
            users=Users(store, hasher, quotas),
            teams=teams,
            agents=agents,
            tasks=Tasks(store),
            assets=assets,
            config=ConfigParams(store, quotas),
            knowledge=KnowledgeRegistry(store, knowledge_origins or NO_ORIGINS),
            access=DataPlaneAccess(store),
        )

    def note_conversation(self, isolation: Isolation) -> None:
        """conversation/add: the agent's chat-memory asset exists (as the original
        creates it); never fails the add.

        Only for an agent registered in the team; the common case (asset present) is one read.
        """
        service_id, team_id, agent_id = isolation.service_id, isolation.team_id, isolation.agent_id
        if DEFAULT_ID in (team_id, agent_id):
            return
        try:
            with self.store.reading(service_id) as r:
                agent = r.get(MetaKind.AGENT, agent_id)
                if agent is None or agent["team_id"] != team_id:
                    return
                bound = {"agent_id": agent_id, "asset_id": chat_memory_asset_id(team_id, agent_id)}
                if r.count(MetaKind.FIXED_ASSET, bound):
                    return
            with self.store.writing(service_id) as w:
                agent = w.get(MetaKind.AGENT, agent_id)
                if agent is not None and agent["status"] == "active":
                    ensure_chat_memory_asset(w, agent, team_id=team_id)
        except MemhubError as exc:
            log.warning("chat_memory asset for %s/%s not ensured: %s", team_id, agent_id, exc)

    def init_admin(self, service_id: str, username: str, user_key: str | None, request_id: str) -> Row:
        """The instance's first user (a system admin) with a default team and agent, in one transaction."""
        bootstrap = Caller(service_id, request_id=request_id)
        with self.store.writing(service_id) as w:
            admin = self.users.init_admin(w, bootstrap, username, user_key)
            caller = Caller(service_id, admin["user_id"], admin["user_type"], request_id=request_id)
            team = self.teams.insert_team(
                w,
                caller,
                {"name": DEFAULT_TEAM, "description": "Created at initialisation to hold the default agent"},
                admin["user_id"],
            )
            agent = self.agents.insert_agent(
                w,
                caller,
                {
                    "team_id": team["team_id"],
                    "owner_user_id": admin["user_id"],
                    "name": f"default-agent-{username}",
                    "description": "Default assistant for general tasks and day-to-day collaboration.",
                    "prompt": "",
                    "visibility": "team",
                    "metadata_json": '{"ui":{"role_prompt":"","rules_prompt":""}}',
                },
            )
        # team_id and agent_id are memhub additions: the ids a first agent needs for the data plane.
        return {
            "user_id": admin["user_id"],
            "user_key": admin["default_user_key"],
            "team_id": team["team_id"],
            "agent_id": agent["agent_id"],
        }
