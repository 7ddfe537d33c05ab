"""Where the blocks' data comes from: small readers over the hub's services, one per block.

Each reader takes the turn's identity (already authorized by the identity resolver) and reads in process,
synchronously (the injector runs it in a thread: they read SQLite). What each may show is what the identity may
read through the same services the data plane uses:
- capabilities: the user's `asset_type.<type>.enabled` flags (absent = on);
- profile memory: the L3 persona and L2 scene index of the user's own profile with the agent, and with at most two
  agents whose chat memory is bound to it (a `chat_memory-{team}-{agent}` fixed asset of another agent of the same
  team, usable and visible to the user). L2/L3 belong to one user in memhub, so an imported agent's section is this
  user's profile with that agent, never its owner's;
- skills: the skill finder's listing of the skills the agent may use, as the caller may read them, ranked by the
  agent's and task's descriptions (all of them, by binding priority, when those match none);
- knowledge: the offer's resources for the agent (its bindings, else the team's), capability-filtered;
- session context: the agent and the task as `agent/get` and `task/get` show them to the user;
- recall: the turn's memories and earlier turns of the user's own scope with the agent (`/v3/recall`'s ranking).
A refusal (a user who may not read something) is an empty answer, not a failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memhub.errors import Forbidden
from memhub.knowledge.offer import KnowledgeOffer
from memhub.knowledge.skill.access import SkillIds
from memhub.knowledge.skill.finder import SkillFinder
from memhub.knowledge.skill.listing import DEFAULT_CHAR_BUDGET, EMPTY, MAX_CHAR_BUDGET, render_listing
from memhub.knowledge.tools_block import render_knowledge_tools
from memhub.memory.core import CoreService
from memhub.memory.recall import RecalledItem, RecallRequest, RecallService, RecentMessage
from memhub.memory.scenario import ScenarioService
from memhub.meta.agents import Agents, agent_visible
from memhub.meta.assets import CHAT_MEMORY, CHAT_MEMORY_PREFIX, chat_memory_asset_id
from memhub.meta.caller import Caller
from memhub.meta.config import ConfigParams
from memhub.meta.errors import MetaError
from memhub.meta.origins import KnowledgeOrigins, origin_of
from memhub.meta.permissions import UNUSABLE_STATUSES
from memhub.meta.tasks import Tasks
from memhub.model.meta import MetaKind
from memhub.proxy.injection.blocks import AgentDetail, TaskDetail
from memhub.proxy.injection.memory_blocks import MAX_IMPORTED_AGENTS, AgentMemory, Language, SceneEntry
from memhub.proxy.model import ChatTurn, ProxyIdentity
from memhub.scope import Isolation
from memhub.store.meta import MetaStore

CAPABILITIES = ("skill", "llm_wiki", "code_graph", "chat_memory")
RECALL_QUERY_CHARS = 2048  # as /v3/recall takes a query
# A listing query from the agent's and task's descriptions: fewer distinct words than this is too weak to rank by.
LISTING_QUERY_MIN_TOKENS = 3


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The user's asset switches; any flag absent, or the lookup failing, means on (as the original)."""

    skill: bool = True
    llm_wiki: bool = True
    code_graph: bool = True
    chat_memory: bool = True

    def view(self) -> dict[str, bool]:
        """The flags by asset type."""
        return {name: getattr(self, name) for name in CAPABILITIES}


def caller_of(identity: ProxyIdentity) -> Caller:
    """The identity as the services' caller (a user key, never the gateway key)."""
    return Caller(identity.service_id, identity.user_id, identity.user_type, identity.key_id)


def isolation_of(identity: ProxyIdentity, agent_id: str | None = None) -> Isolation:
    """The data-plane scope of the identity (optionally with another agent of its team)."""
    assert identity.team_id and identity.agent_id
    return Isolation(
        identity.service_id,
        team_id=identity.team_id,
        user_id=identity.user_id,
        agent_id=agent_id or identity.agent_id,
        task_id=identity.task_id or "",
    )


@dataclass(frozen=True, slots=True)
class MetaCapabilities:
    """The capability flags from the user's meta config (`asset_type` module)."""

    config: ConfigParams

    def __call__(self, identity: ProxyIdentity) -> Capabilities:
        return Capabilities(
            **{t: self.config.asset_type_enabled(identity.service_id, identity.user_id, t) for t in CAPABILITIES}
        )


@dataclass(frozen=True, slots=True)
class ProfileMemorySource:
    """The agent's and its imported agents' L3 persona and L2 scene index, from the user's own profiles."""

    meta: MetaStore
    core: CoreService
    scenario: ScenarioService

    def _imported(self, identity: ProxyIdentity) -> list[tuple[str, str]]:
        """(agent id, name) of up to two agents whose chat memory is bound to the session's agent."""
        team_id, agent_id = identity.team_id or "", identity.agent_id or ""
        found: list[tuple[str, str]] = []
        with self.meta.reading(identity.service_id) as r:
            bound = r.find(
                MetaKind.FIXED_ASSET,
                {"agent_id": agent_id, "asset_type": CHAT_MEMORY},
                order_by=("-priority", "-created_at", "id"),
            )
            prefix = f"{CHAT_MEMORY_PREFIX}{team_id}-"
            for binding in bound:
                other = binding["asset_id"].removeprefix(prefix)
                if other == agent_id or chat_memory_asset_id(team_id, other) != binding["asset_id"]:
                    continue  # its own memory, or another team's
                asset = r.get(MetaKind.ASSET, binding["asset_id"])
                if asset is None or asset["status"] in UNUSABLE_STATUSES:
                    continue
                agent = r.get(MetaKind.AGENT, other)
                if agent is None or agent["team_id"] != team_id or agent["status"] != "active":
                    continue
                if not agent_visible(r, agent, identity.user_id):
                    continue
                found.append((other, agent["name"] or other))
                if len(found) == MAX_IMPORTED_AGENTS:
                    break
        return found

    def _self_name(self, identity: ProxyIdentity) -> str:
        with self.meta.reading(identity.service_id) as r:
            agent = r.get(MetaKind.AGENT, identity.agent_id or "")
        return str(agent["name"]) if agent is not None and agent["name"] else identity.agent_id or ""

    def _memory(self, identity: ProxyIdentity, agent_id: str, name: str, is_self: bool) -> AgentMemory:
        iso = isolation_of(identity, agent_id)
        persona = self.core.read(iso).content
        scenes = tuple(SceneEntry(e.path, e.summary) for e in self.scenario.files(iso))
        return AgentMemory(agent_id, name, is_self, persona, scenes)

    def __call__(self, identity: ProxyIdentity) -> list[AgentMemory]:
        agents = [(identity.agent_id or "", self._self_name(identity), True)]
        agents += [(agent_id, name, False) for agent_id, name in self._imported(identity)]
        return [self._memory(identity, agent_id, name, is_self) for agent_id, name, is_self in agents]


_WORD = re.compile(r"[^\w]+", re.UNICODE)


def listing_query(parts: Sequence[str | None]) -> str | None:
    """The agent's and task's descriptions as a ranking query, or None when they say too little (the original's
    weak-signal rule: fewer than three distinct words of three or more characters)."""
    combined = " ".join(p.strip() for p in parts if p and p.strip()).strip()
    if not combined:
        return None
    tokens = {t for t in _WORD.split(combined.lower()) if len(t) >= 3}
    return combined if len(tokens) >= LISTING_QUERY_MIN_TOKENS else None


@dataclass(frozen=True, slots=True)
class SkillListingSource:
    """The `<available_skills>` listing of the skills the agent may use, each line with the skill's id."""

    finder: SkillFinder
    meta: MetaStore
    char_budget: int = DEFAULT_CHAR_BUDGET

    def _query(self, identity: ProxyIdentity) -> str | None:
        with self.meta.reading(identity.service_id) as r:
            agent = r.get(MetaKind.AGENT, identity.agent_id or "")
            task = r.get(MetaKind.TASK, identity.task_id) if identity.task_id else None
        parts = [agent["description"], agent["prompt"]] if agent is not None else []
        if task is not None and task["team_id"] == identity.team_id:
            parts.append(task["description"])
        return listing_query(parts)

    def __call__(self, identity: ProxyIdentity) -> str:
        ids = SkillIds(identity.team_id, identity.agent_id, identity.user_id, identity.task_id)
        caller = caller_of(identity)
        query = self._query(identity)
        try:
            found = self.finder.listing(caller, ids, query, MAX_CHAR_BUDGET)
            if query and not found.hits:
                # Descriptions that match no skill must not hide the agent's skills (the original listed none).
                found = self.finder.listing(caller, ids, None, MAX_CHAR_BUDGET)
        except Forbidden:
            return ""  # the skill rules refuse this caller: no listing rather than a failed turn
        if not found.hits or found.listing == EMPTY:
            return ""
        named = [replace(skill, name=f"{skill.name} [{skill.skill_id}]") for skill in found.hits]
        return render_listing(named, self.char_budget, mode=found.mode, authors=found.authors).listing


@dataclass(frozen=True, slots=True)
class KnowledgeSource:
    """`<knowledge_tools>` for the agent's resources (or the team's), filtered by the capability flags.

    The recipes go through the memory bridge (`bridge_url`, which serves `tools/list` and `tools/call` as the
    session token's user) and carry that token and the tenant header: the agent needs no key of its own, and the
    user, team, agent and conversation ids the original added for telemetry stay out of the prompt. Only this
    gateway's own resources are offered: a resource another server serves cannot take this server's token.
    """

    offer: KnowledgeOffer
    bridge_url: str

    def __call__(self, identity: ProxyIdentity, capabilities: Capabilities, language: Language, token: str) -> str:
        try:
            resources = self.offer.resources(caller_of(identity), identity.team_id or "", identity.agent_id)
        except Forbidden:
            return ""
        own = self.offer.origins.own
        served_here = [replace(r, url=self.bridge_url) for r in resources if own and origin_of(r.url) == own]
        return render_knowledge_tools(
            served_here,
            capabilities=capabilities.view(),
            headers={"x-tdai-service-id": identity.service_id},
            language=language,
            session_token=token,
            origins=KnowledgeOrigins.of(self.bridge_url),
        )


@dataclass(frozen=True, slots=True)
class SessionContextSource:
    """The session's agent and task as the user may see them (one the user may not see is left out)."""

    agents: Agents
    tasks: Tasks

    def __call__(self, identity: ProxyIdentity) -> tuple[AgentDetail | None, TaskDetail | None]:
        caller = caller_of(identity)
        agent: AgentDetail | None = None
        task: TaskDetail | None = None
        try:
            row = self.agents.get(caller, identity.agent_id or "")
            agent = AgentDetail(row["agent_id"], row["name"] or "", row["description"], row["prompt"])
        except MetaError:
            pass
        if identity.task_id:
            try:
                row = self.tasks.get(caller, identity.task_id)
                if row["team_id"] == identity.team_id:
                    task = TaskDetail(row["task_id"], row["title"] or "", row["description"])
            except MetaError:
                pass
        return agent, task


@dataclass(frozen=True, slots=True)
class RecallSource:
    """The turn's recall over the user's own scope with the agent: L1 memories and L0 turns ranked together within
    `max_tokens` (memhub.memory.recall, which also skips what `recent` already holds and anything that reads like
    an instruction), without the persona and the scene index, which the system prompt already carries. None when
    the user has switched chat memory off."""

    recall: RecallService
    config: ConfigParams

    def __call__(
        self, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn], max_tokens: int
    ) -> list[RecalledItem] | None:
        if not self.config.asset_type_enabled(identity.service_id, identity.user_id, CHAT_MEMORY):
            return None
        request = RecallRequest(
            query=query[:RECALL_QUERY_CHARS],
            messages=[RecentMessage(turn.role, turn.text) for turn in recent],
            max_tokens=max_tokens,
            include_persona=False,
            include_scenes=False,
        )
        return self.recall.recall(isolation_of(identity), request).memories
