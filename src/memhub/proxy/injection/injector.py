"""The proxy's `Injector`: which blocks a turn gets (computed once per session), where they go, within the budget.

Blocks and their placement are the original's hooks (`injection/injectors/*`, `session/context-injector.ts`):

| block | hook id | point | priority | slot / relation |
|---|---|---|---|---|
| skills | skill-injector | system.before_tools | 200 | skills / before |
| `<knowledge_tools>` | knowledge-tools-injector | system.before_tools | 300 | knowledge / after |
| `<tdai_memory_tools>` | tdai-memory-tools-injector | system.suffix | 105 | memory / before |
| `<tdai_profile_memory>` | tdai-profile-memory-injector | system.suffix | 110 | memory / inside_append |
| `<session_context>` | session-context | system.suffix | 1000 | (end of the prompt) |
| `<memhub_offload_tools>` | memhub-offload-tools | system.suffix | 106 | memory / before (memhub's own) |

Per-turn recall is not among them: it changes every turn, so it goes into the turn's last user message
(memhub.proxy.injection.recall), never into the system prompt.

Prompt-cache hygiene, where the original lost it: a session's blocks are computed once, on its first main turn,
and reused byte for byte until the entry's time to live ends or `mem:sync` forgets it, so the system prompt is
the same turn after turn; a fork (a compaction or summary reusing the main prompt) reads the entry and never
fills it, so a fork that raced ahead of the main turn cannot fix a different text. The only per-session value in
any block is the memory tools' session token; the tenant, user, team, agent and conversation ids the original
put into its recipes are not in the prompt. Concurrent first turns of one session compute once.

Degradation: every source runs in a thread and is caught on its own: a failing source gives no block (logged),
and the next main turn asks it again; the capability lookup failing means everything is on, as in the original.
`blocks` never raises.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memhub.proxy.injection.blocks import (
    AgentDetail,
    SkillRecipe,
    TaskDetail,
    render_session_context,
    render_skills,
)
from memhub.proxy.injection.budget import apply_budget, placement_order
from memhub.proxy.injection.cache import DEFAULT_MAX_SESSIONS, SessionBlockCache
from memhub.proxy.injection.memory_blocks import AgentMemory, Language, render_memory_tools, render_profile_memory
from memhub.proxy.injection.profiles import Placement, profile_for, splice
from memhub.proxy.injection.sources import Capabilities
from memhub.proxy.model import (
    PRIORITY_CUSTOM,
    PRIORITY_MEMORY,
    PRIORITY_SKILL,
    PRIORITY_WIKI,
    Block,
    InjectionPoint,
    ProxyIdentity,
    Relation,
    RequestKind,
    Slot,
)

log = logging.getLogger("memhub.proxy.injection")


@dataclass(frozen=True, slots=True)
class Hook:
    """Where one kind of block goes (the original's hook declaration)."""

    hook_id: str
    point: InjectionPoint
    priority: int
    slot: Slot | None = None
    relation: Relation = "after"

    def block(self, text: str) -> Block | None:
        """The block of this hook with `text` (trailing blank lines trimmed), or None for an empty text."""
        text = text.rstrip()
        if not text:
            return None
        return Block(self.hook_id, text, self.point, self.priority, self.slot, self.relation)


SKILLS = Hook("skill-injector", "system.before_tools", PRIORITY_SKILL, "skills", "before")
KNOWLEDGE = Hook("knowledge-tools-injector", "system.before_tools", PRIORITY_WIKI, "knowledge", "after")
MEMORY_TOOLS = Hook("tdai-memory-tools-injector", "system.suffix", PRIORITY_MEMORY + 5, "memory", "before")
PROFILE_MEMORY = Hook("tdai-profile-memory-injector", "system.suffix", PRIORITY_MEMORY + 10, "memory", "inside_append")
SESSION_CONTEXT = Hook("session-context", "system.suffix", PRIORITY_CUSTOM)
SESSION_HOOKS = (SKILLS, KNOWLEDGE, MEMORY_TOOLS, PROFILE_MEMORY, SESSION_CONTEXT)
# Not a session block: context offload adds it to each request it is on for (memhub.proxy.offload).
OFFLOAD_TOOLS = Hook("memhub-offload-tools", "system.suffix", PRIORITY_MEMORY + 6, "memory", "before")
SPLICED_PROMPTS = 256  # spliced system prompts remembered (a few hundred KB each at most)


class CapabilityReader(Protocol):
    def __call__(self, identity: ProxyIdentity) -> Capabilities: ...


class ProfileReader(Protocol):
    def __call__(self, identity: ProxyIdentity) -> Sequence[AgentMemory]: ...


class SkillReader(Protocol):
    def __call__(self, identity: ProxyIdentity) -> str: ...


class KnowledgeReader(Protocol):
    def __call__(self, identity: ProxyIdentity, capabilities: Capabilities, language: Language, token: str) -> str: ...


class SessionReader(Protocol):
    def __call__(self, identity: ProxyIdentity) -> tuple[AgentDetail | None, TaskDetail | None]: ...


@dataclass(frozen=True, slots=True)
class InjectionSources:
    """The readers the blocks are made from (memhub.proxy.injection.sources over a hub, or any stand-in)."""

    capabilities: CapabilityReader
    profile_memory: ProfileReader
    skills: SkillReader
    knowledge: KnowledgeReader
    session_context: SessionReader


@dataclass(frozen=True, slots=True)
class InjectorConfig:
    """Plain settings values (runtime passes them; the proxy does not read settings itself)."""

    proxy_url: str  # where the memory-tool recipes reach the memory bridge (Settings.proxy_url())
    language: Language = "en"  # MEMHUB_KNOWLEDGE_LANGUAGE
    budget_chars: int | None = 24_000  # MEMHUB_PROXY_INJECTION_BUDGET_CHARS
    session_ttl_seconds: float = 86_400  # MEMHUB_PROXY_SESSION_TTL_SECONDS
    max_sessions: int = DEFAULT_MAX_SESSIONS


class _Failed:
    """A source that raised (distinct from one that answered with nothing)."""


FAILED = _Failed()


class BlockInjector:
    """Implements memhub.proxy.ports.Injector over `InjectionSources`."""

    def __init__(
        self,
        sources: InjectionSources,
        config: InjectorConfig,
        session_token: Callable[[ProxyIdentity], str],
        skill_recipe: Callable[[ProxyIdentity], SkillRecipe],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sources = sources
        self.config = config
        self.session_token = session_token
        self.skill_recipe = skill_recipe
        self.cache = SessionBlockCache(config.session_ttl_seconds, max_sessions=config.max_sessions, clock=clock)
        self._locks: dict[Hashable, asyncio.Lock] = {}
        self._users: dict[Hashable, int] = {}
        # A session sends the same system prompt every turn and gets the same blocks: the spliced prompt is
        # remembered instead of parsed and rebuilt each time (blocks are frozen, so they key it by value).
        self._spliced: OrderedDict[tuple[str, tuple[str, ...], tuple[Block, ...]], tuple[str, ...]] = OrderedDict()

    # -- the port ---------------------------------------------------------------------------------------------

    async def blocks(self, identity: ProxyIdentity, kind: RequestKind) -> list[Block]:
        """The turn's blocks in placement order; [] for side queries, auxiliary requests and turns without a
        memory scope. Never raises."""
        try:
            if kind not in (RequestKind.MAIN, RequestKind.FORK) or not identity.has_memory_scope:
                return []
            stable = await (self._main(identity) if kind == RequestKind.MAIN else self._fork(identity))
            return [b for b in (stable.get(h.hook_id) for h in SESSION_HOOKS) if b is not None]
        except Exception:
            log.exception("injection for session %s failed; the turn goes without blocks", identity.session_id)
            return []

    def splice(self, segments: Sequence[str], blocks: Sequence[Block], agent_source: str) -> list[str]:
        """The system prompt's segments with the `system.*` blocks at their slots (or points), within the budget."""
        key = (agent_source, tuple(segments), tuple(blocks))
        done = self._spliced.get(key)
        if done is None:
            kept = apply_budget(placement_order(blocks), self.config.budget_chars)
            placements = [Placement(b.text, b.slot, b.relation, b.point == "system.prefix") for b in kept]
            done = tuple(splice(segments, placements, profile_for(agent_source, segments)))
            self._spliced[key] = done
            if len(self._spliced) > SPLICED_PROMPTS:
                self._spliced.popitem(last=False)
        else:
            self._spliced.move_to_end(key)
        return list(done)

    def flat(self, blocks: Sequence[Block]) -> str:
        """The `system.*` blocks in placement order within the budget, separated by blank lines."""
        return "\n\n".join(b.text for b in apply_budget(placement_order(blocks), self.config.budget_chars))

    def forget_session(self, identity: ProxyIdentity) -> None:
        """Drop the session's cached blocks; its next turn computes them afresh."""
        self.cache.forget(identity.cache_key)

    # -- the session cache ------------------------------------------------------------------------------------

    async def _main(self, identity: ProxyIdentity) -> Mapping[str, Block | None]:
        key = identity.cache_key
        entry = self.cache.get(key)
        if entry is not None and not entry.failed:
            return entry.blocks
        async with self._lock(key):
            entry = self.cache.get(key)  # another turn of the session may have filled it meanwhile
            if entry is None:
                blocks, failed = await self._compute(identity, SESSION_HOOKS)
                return self.cache.put(key, blocks, failed).blocks
            if entry.failed:
                retry = tuple(h for h in SESSION_HOOKS if h.hook_id in entry.failed)
                blocks, failed = await self._compute(identity, retry)
                return self.cache.merge(key, entry, blocks, failed).blocks
            return entry.blocks

    async def _fork(self, identity: ProxyIdentity) -> Mapping[str, Block | None]:
        entry = self.cache.get(identity.cache_key)
        if entry is not None:
            return entry.blocks
        blocks, _ = await self._compute(identity, SESSION_HOOKS)  # read-only: never stored
        return blocks

    def _lock(self, key: Hashable) -> _KeyLock:
        return _KeyLock(self, key)

    # -- computing blocks -------------------------------------------------------------------------------------

    async def _compute(
        self, identity: ProxyIdentity, hooks: Sequence[Hook]
    ) -> tuple[dict[str, Block | None], frozenset[str]]:
        caps = await self._run("capabilities", self.sources.capabilities, identity)
        if not isinstance(caps, Capabilities):
            caps = Capabilities()  # the original: a failed lookup means every asset type is on
        makers: dict[str, Callable[[ProxyIdentity, Capabilities], Block | None]] = {
            SKILLS.hook_id: self._skills,
            KNOWLEDGE.hook_id: self._knowledge,
            MEMORY_TOOLS.hook_id: self._memory_tools,
            PROFILE_MEMORY.hook_id: self._profile,
            SESSION_CONTEXT.hook_id: self._session_context,
        }
        answers = await asyncio.gather(*(self._run(h.hook_id, makers[h.hook_id], identity, caps) for h in hooks))
        blocks: dict[str, Block | None] = {}
        failed: set[str] = set()
        for hook, answer in zip(hooks, answers, strict=True):
            if isinstance(answer, _Failed):
                failed.add(hook.hook_id)
            else:
                blocks[hook.hook_id] = answer if isinstance(answer, Block) else None
        return blocks, frozenset(failed)

    async def _run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in a thread; FAILED (logged) when it raises."""
        try:
            return await asyncio.to_thread(fn, *args)
        except Exception:
            log.warning("injection source %s failed; its block is left out", name, exc_info=True)
            return FAILED

    def _skills(self, identity: ProxyIdentity, caps: Capabilities) -> Block | None:
        if not caps.skill:
            return None
        listing = self.sources.skills(identity)
        return SKILLS.block(render_skills(listing, self.skill_recipe(identity), self.config.language))

    def _knowledge(self, identity: ProxyIdentity, caps: Capabilities) -> Block | None:
        token = self.session_token(identity)
        return KNOWLEDGE.block(self.sources.knowledge(identity, caps, self.config.language, token))

    def _memory_tools(self, identity: ProxyIdentity, caps: Capabilities) -> Block | None:
        if not caps.chat_memory:
            return None
        token = self.session_token(identity)
        return MEMORY_TOOLS.block(render_memory_tools(self.config.proxy_url, token, self.config.language))

    def _profile(self, identity: ProxyIdentity, caps: Capabilities) -> Block | None:
        if not caps.chat_memory:
            return None
        agents = self.sources.profile_memory(identity)
        return PROFILE_MEMORY.block(render_profile_memory(agents, self.config.language))

    def _session_context(self, identity: ProxyIdentity, caps: Capabilities) -> Block | None:
        agent, task = self.sources.session_context(identity)
        return SESSION_CONTEXT.block(render_session_context(agent, task))


class _KeyLock:
    """One asyncio lock per session key, dropped when nobody holds or waits for it."""

    def __init__(self, owner: BlockInjector, key: Hashable) -> None:
        self.owner = owner
        self.key = key

    async def __aenter__(self) -> None:
        owner = self.owner
        owner._users[self.key] = owner._users.get(self.key, 0) + 1
        lock = owner._locks.setdefault(self.key, asyncio.Lock())
        try:
            await lock.acquire()
        except BaseException:
            self._release_user()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.owner._locks[self.key].release()
        self._release_user()

    def _release_user(self) -> None:
        owner = self.owner
        owner._users[self.key] -= 1
        if owner._users[self.key] == 0:
            del owner._users[self.key]
            owner._locks.pop(self.key, None)
