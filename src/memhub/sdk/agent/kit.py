"""`MemoryAgent`: recall, capture, tools and degradation for any agent framework, as the
original's plugin hooks do them.

Every call runs on the kit's private loop (runner.LoopThread), so a sync agent and an async agent use the
same code, and nothing raises into the agent: recall returns what arrived before its deadline, capture
queues and retries in the background, tools answer with a "memory unavailable: …" string, and a circuit
breaker stops a dead gateway from costing a timeout per call.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from memhub.formats.sanitize import sanitize_text
from memhub.sdk._errors import TDAMError
from memhub.sdk.agent import prompt, tools
from memhub.sdk.agent.breaker import CircuitBreaker
from memhub.sdk.agent.capture import CaptureJob, CaptureQueue, idempotency_key
from memhub.sdk.agent.config import (
    SERVER_MAX_BATCH,
    SERVER_MAX_CONTENT_CHARS,
    SERVER_MAX_QUERY_CHARS,
    SERVER_MAX_RECALL_MESSAGES,
    SERVER_MAX_SEARCH_LIMIT,
    AgentConfig,
    recall_budget,
)
from memhub.sdk.agent.recall import (
    CONTEXT,
    MEMORIES,
    PERSONA,
    ROUTE_MISSING,
    SCENES,
    Recall,
    RecallRoute,
    StableParts,
    as_three_calls,
    gather,
    searched_memories,
)
from memhub.sdk.agent.runner import LoopThread
from memhub.sdk.agent.skills import SKILLS, skill_paths, turn_window
from memhub.sdk.agent.turns import fit_to_server_limits, recent_turns, select_turn
from memhub.sdk.knowledge import AsyncKnowledgeClient
from memhub.sdk.memory import AsyncMemoryClient
from memhub.sdk.skills import AsyncSkillClient

T = TypeVar("T")
log = logging.getLogger("memhub.sdk.agent")

SUSPECT_MARGIN = 5
UNAVAILABLE = "memory unavailable: "


class GatewayUnavailable(Exception):
    """Raised inside the kit when the circuit breaker is open; never reaches the agent."""


@dataclass(slots=True)
class _Turn:
    """What recall remembers of the turn for capture: the clean user text and where the turn begins."""

    user_text: str
    message_count: int | None
    searches: int = 0


class MemoryAgent:
    """The four paths to long-term memory: `recall`, `capture`, `tool_definitions`/`dispatch`, degradation."""

    def __init__(
        self,
        client: AsyncMemoryClient,
        *,
        session_id: str | None = None,
        knowledge: AsyncKnowledgeClient | None = None,
        knowledge_ids: Sequence[str] = (),
        config: AgentConfig | None = None,
        logger: logging.Logger | None = None,
        skills: AsyncSkillClient | None = None,
    ) -> None:
        self.config = config or AgentConfig()
        self.session_id = session_id or getattr(client, "session_id", None)
        self._client = client
        self._knowledge = knowledge
        self._knowledge_ids = tuple(dict.fromkeys(knowledge_ids))
        self._log = logger or log
        self._loop = LoopThread()
        self.breaker = CircuitBreaker(self.config.breaker_threshold, self.config.breaker_cooldown)
        self._capture = CaptureQueue(self._send_batch, self.breaker, self.config, self._log)
        self._owns_skills = skills is not None  # a client of its own is closed with the kit; a shared one is not
        self._skills = skill_paths(client, skills, self.config, self.breaker, self._log)
        self._turns: dict[str, _Turn] = {}
        self._cursors: dict[str, datetime] = {}
        self._captured: dict[str, int] = {}  # per session: the history length the last capture saw
        self._stable = StableParts()
        self._route = RecallRoute(self.config.recall_reprobe_after)
        self._knowledge_tools: list[tools.ToolDefinition] | None = None
        self._closed = False
        # An agent that exits without close() would lose what is still queued: flush it at interpreter exit
        # (the loop thread is a daemon and still runs while atexit handlers do). A weak reference, so
        # registering does not keep the agent alive.
        self._exit_hook = functools.partial(_close_at_exit, weakref.ref(self))
        atexit.register(self._exit_hook)

    @classmethod
    def connect(
        cls,
        endpoint: str,
        api_key: str,
        service_id: str,
        *,
        team_id: str,
        agent_id: str,
        user_id: str,
        session_id: str,
        task_id: str | None = None,
        user_key: str | None = None,
        knowledge_ids: Sequence[str] = (),
        timeout: float = 30,
        config: AgentConfig | None = None,
        logger: logging.Logger | None = None,
    ) -> MemoryAgent:
        """A kit with its own clients; knowledge tools need a `user_key` and the resources' ids."""
        client = AsyncMemoryClient(
            endpoint,
            api_key,
            service_id,
            team_id=team_id,
            agent_id=agent_id,
            user_id=user_id,
            session_id=session_id,
            task_id=task_id,
            user_key=user_key,
            timeout=timeout,
        )
        knowledge = None
        if knowledge_ids and user_key:
            knowledge = AsyncKnowledgeClient(
                endpoint,
                api_key,
                service_id,
                user_key=user_key,
                team_id=team_id,
                agent_id=agent_id,
                user_id=user_id,
                timeout=timeout,
            )
        return cls(
            client,
            session_id=session_id,
            knowledge=knowledge,
            knowledge_ids=knowledge_ids,
            config=config,
            logger=logger,
        )

    # ------------------------------------------------------------------ plumbing

    async def _guarded(self, coro: Coroutine[Any, Any, T], timeout: float, *, timeout_is_outage: bool = True) -> T:
        """One gateway call under the breaker and a timeout; outcomes feed the breaker.

        Recall passes `timeout_is_outage=False`: missing its 200 ms budget says the gateway is busy, not
        down, and opening the breaker for that would turn a latency spike into half a minute without memory.
        """
        if not self.breaker.allow():
            coro.close()
            raise GatewayUnavailable(f"gateway marked down, retrying in {self.breaker.retry_after():.0f} s")
        try:
            result = await asyncio.wait_for(coro, timeout)
        except asyncio.CancelledError:
            raise
        except TimeoutError as exc:
            if timeout_is_outage:
                self.breaker.record_failure(exc)
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except Exception as exc:
            self.breaker.record_failure(exc)
            raise
        self.breaker.record_success()
        return result

    def _session(self, session_id: str | None) -> str | None:
        return session_id or self.session_id

    # ------------------------------------------------------------------ recall

    def recall(self, query: str, *, messages: Sequence[Any] | None = None, session_id: str | None = None) -> Recall:
        """Memories for this turn within the deadline; never raises (an empty, degraded Recall at worst)."""
        try:
            return self._loop.run(self._recall(query, messages, session_id), self.config.recall_deadline + 1.0)
        except Exception as exc:
            self._log.warning("memhub recall failed: %s", exc)
            return self._empty_recall(self._paths())

    async def arecall(
        self, query: str, *, messages: Sequence[Any] | None = None, session_id: str | None = None
    ) -> Recall:
        """`recall` for async agents."""
        try:
            return await self._loop.run_async(self._recall(query, messages, session_id))
        except Exception as exc:
            self._log.warning("memhub recall failed: %s", exc)
            return self._empty_recall(self._paths())

    def _paths(self) -> tuple[str, ...]:
        """The recall paths this configuration runs."""
        cfg = self.config
        wanted = ((MEMORIES, True), (PERSONA, cfg.include_persona), (SCENES, cfg.include_scene_nav))
        extra = ((CONTEXT, cfg.compose_context), (SKILLS, cfg.skills_listing and self._skills is not None))
        return tuple(name for name, on in (*wanted, *extra) if on)

    def _empty_recall(self, degraded: tuple[str, ...]) -> Recall:
        return self._compose([], self._stable.persona, self._stable.scenes, degraded, 0.0)

    async def _recall(self, query: str, messages: Sequence[Any] | None, session_id: str | None) -> Recall:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.config.recall_deadline
        cfg = self.config
        session = self._session(session_id)
        self._turns[session or ""] = _Turn(query, len(messages) if messages is not None else None)
        search_query = sanitize_text(query)[:SERVER_MAX_QUERY_CHARS]

        # The runtime-context composer runs beside the memory paths, however those are fetched.
        context_task = None
        if cfg.compose_context and search_query:
            call = self._client.compose_context(search_query, session_id=session, language=cfg.language)
            context_task = loop.create_task(
                self._guarded(call, cfg.recall_deadline, timeout_is_outage=False), name="recall-context"
            )
        # So does the skill listing, ranked for the user's message.
        skills_call = self._skills.listing_call(search_query) if self._skills is not None else None
        skills_task = None
        if skills_call is not None:
            skills_task = loop.create_task(
                self._guarded(skills_call, cfg.recall_deadline, timeout_is_outage=False), name="recall-skills"
            )
        results, degraded = await self._memory_paths(search_query, messages, deadline)
        side = {name: task for name, task in ((CONTEXT, context_task), (SKILLS, skills_task)) if task is not None}
        if side:
            more, late = await gather(side, deadline, self._log)
            results.update(more)
            degraded += late
        skills = ""
        if skills_task is not None and self._skills is not None:
            skills = self._skills.listing_outcome(skills_task, results, degraded)

        # Memories the gateway's quality check flagged as reading like instructions never reach the prompt.
        memories = prompt.trusted_memories((results.get(MEMORIES) or {}).get("items") or [])
        if PERSONA in results:
            content = (results[PERSONA] or {}).get("content")
            body, listed = prompt.split_navigation(content) if isinstance(content, str) else ("", [])
            self._stable.persona = body or None
            if SCENES not in results and not self._stable.scenes:
                # The scene list was late, but an older gateway's navigation block in the persona names the scenes.
                self._stable.scenes = tuple(listed[: cfg.max_scenes])
        if SCENES in results:
            entries = (results[SCENES] or {}).get("entries") or []
            self._stable.scenes = tuple(prompt.scene_paths(entries, cfg.max_scenes))
        context = results.get(CONTEXT) if isinstance(results.get(CONTEXT), Mapping) else None
        elapsed_ms = (loop.time() - started) * 1000
        if degraded:
            self._log.info("memhub recall degraded (%s) in %.0f ms", ", ".join(degraded), elapsed_ms)
        return self._compose(
            memories,
            self._stable.persona if cfg.include_persona else None,
            self._stable.scenes if cfg.include_scene_nav else (),
            tuple(degraded),
            elapsed_ms,
            context,
            skills,
        )

    async def _memory_paths(
        self, search_query: str, messages: Sequence[Any] | None, deadline: float
    ) -> tuple[dict[str, Any], list[str]]:
        """Memories, persona and scenes by `deadline`: one `/v3/recall` where the gateway has it, else three calls.

        The answer comes back in the shapes of the three calls (`items`, `content`, `entries`), so what follows
        does not care which way it came. A recall that fails or is late degrades every path it carried.
        """
        cfg = self.config
        loop = asyncio.get_running_loop()
        if search_query and self._route.ask():
            call = self._client.recall(
                search_query,
                messages=recent_turns(messages or (), SERVER_MAX_RECALL_MESSAGES, SERVER_MAX_CONTENT_CHARS),
                **recall_budget(cfg),
                include_persona=cfg.include_persona,
                include_scenes=cfg.include_scene_nav,
            )
            try:
                answer = await self._guarded(call, max(0.0, deadline - loop.time()), timeout_is_outage=False)
            except TDAMError as exc:
                if exc.code not in ROUTE_MISSING:
                    return self._recall_failed(exc)
                self._route.answered(present=False)
                self._log.info("memhub recall: the gateway has no /v3/recall (%s); using three calls", exc.code)
            except Exception as exc:
                return self._recall_failed(exc)
            else:
                self._route.answered(present=True)
                answer = answer if isinstance(answer, Mapping) else {}
                return as_three_calls(answer, persona=cfg.include_persona, scenes=cfg.include_scene_nav), []
        calls: dict[str, Coroutine[Any, Any, Any]] = {}
        if search_query:
            # A few more than fit, so memories flagged `injection_suspect` (left out below) do not shorten the list.
            limit = min(cfg.max_memories + SUSPECT_MARGIN, SERVER_MAX_SEARCH_LIMIT)
            calls[MEMORIES] = self._client.search_atomic(search_query, limit=limit)
        if cfg.include_persona:
            calls[PERSONA] = self._client.read_core()
        if cfg.include_scene_nav:
            calls[SCENES] = self._client.list_scenarios()
        timeout = max(0.0, deadline - loop.time())
        tasks = {
            name: loop.create_task(self._guarded(coro, timeout, timeout_is_outage=False), name=f"recall-{name}")
            for name, coro in calls.items()
        }
        results, degraded = await gather(tasks, deadline, self._log)
        if MEMORIES in results:
            results[MEMORIES] = searched_memories(results[MEMORIES], cfg.max_memories)
        return results, degraded

    def _recall_failed(self, exc: BaseException) -> tuple[dict[str, Any], list[str]]:
        self._log.info("memhub recall: /v3/recall unavailable (%s)", exc)
        return {}, [p for p in self._paths() if p not in (CONTEXT, SKILLS)]

    def _compose(
        self,
        memories: list[Mapping[str, Any]],
        persona: str | None,
        scenes: tuple[str, ...],
        degraded: tuple[str, ...],
        elapsed_ms: float,
        context: Mapping[str, Any] | None = None,
        skills: str = "",
    ) -> Recall:
        cfg = self.config
        prepend = prompt.format_memories(
            memories,
            max_items=len(memories),
            max_item_chars=cfg.max_memory_chars,
            max_chars=cfg.max_prepend_chars,
            max_tokens=cfg.max_prepend_tokens,
        )
        append_system = prompt.format_system(
            persona, scenes, language=cfg.language, max_persona_chars=cfg.max_persona_chars
        )
        knowledge = str((context or {}).get("system") or "")
        return Recall(
            prepend=prepend,
            append_system=append_system,
            memories=tuple(dict(m) for m in memories),
            persona=persona,
            scenes=scenes,
            degraded=degraded,
            elapsed_ms=round(elapsed_ms, 3),
            tokens=sum(prompt.estimate_tokens(part) for part in (prepend, append_system, knowledge, skills)),
            knowledge=knowledge,
            skills=skills,
            context=dict(context) if context is not None else None,
        )

    # ------------------------------------------------------------------ capture

    def capture(self, messages: Sequence[Any], *, since: int | None = None, session_id: str | None = None) -> int:
        """Queue this turn's new user/assistant messages for L0; returns how many were queued. Never raises.

        With `AgentConfig.skills_capture` the turn, tool calls and results included, is also queued for skill
        mining (not counted in the return value; see `stats["skills_capture"]`).
        """
        try:
            jobs, mined = self._capture_jobs(messages, since, session_id)
            if not jobs and not mined:
                return 0
            return self._loop.run(self._enqueue(jobs, mined), 2.0)
        except Exception as exc:
            self._log.warning("memhub capture failed before queueing: %s", exc)
            return 0

    async def acapture(
        self, messages: Sequence[Any], *, since: int | None = None, session_id: str | None = None
    ) -> int:
        """`capture` for async agents."""
        try:
            jobs, mined = self._capture_jobs(messages, since, session_id)
            return await self._loop.run_async(self._enqueue(jobs, mined)) if jobs or mined else 0
        except Exception as exc:
            self._log.warning("memhub capture failed before queueing: %s", exc)
            return 0

    def _capture_jobs(
        self, messages: Sequence[Any], since: int | None, session_id: str | None
    ) -> tuple[list[CaptureJob], list[CaptureJob]]:
        """This turn's L0 batches, and its batches for skill mining (tool calls and results included)."""
        mining = self._skills is not None and self.config.skills_capture
        if not (self.config.capture_enabled or mining) or self._closed:
            return [], []
        session = self._session(session_id)
        if not session:
            self._log.warning("memhub capture skipped: no session id (give one to MemoryAgent or to capture)")
            return [], []
        turn = self._turns.get(session) or self._turns.get("")
        # Where this turn starts: the caller's word, else the length recall saw, else where the last capture
        # ended, so a caller that passes the whole history every time never sends a message twice.
        start = since
        if start is None:
            start = turn.message_count if turn and turn.message_count is not None else self._captured.get(session)
        mined = self._skills.capture_jobs(session, turn_window(messages, start)) if self._skills and mining else []
        selected = select_turn(
            list(messages),
            since_index=start,
            after_timestamp=self._cursors.get(session),
            original_user_text=turn.user_text if turn else None,
        )
        if selected.max_timestamp is not None:
            self._cursors[session] = selected.max_timestamp
        self._captured[session] = len(messages)
        if turn is not None:
            turn.message_count, turn.user_text = None, ""  # this turn is captured; the next recall opens one
        if not self.config.capture_enabled:
            return [], mined
        batches = fit_to_server_limits(
            selected.messages, max_content_chars=SERVER_MAX_CONTENT_CHARS, max_batch=SERVER_MAX_BATCH
        )
        return [CaptureJob(session, batch, idempotency_key(session, batch)) for batch in batches if batch], mined

    async def _enqueue(self, jobs: list[CaptureJob], mined: list[CaptureJob]) -> int:
        if self._skills is not None:
            for job in mined:
                self._skills.queue.offer(job)
        return sum(len(job.messages) for job in jobs if self._capture.offer(job))

    async def _join(self, timeout: float) -> bool:
        queues = [self._capture, *([self._skills.queue] if self._skills is not None else [])]
        return all(await asyncio.gather(*(queue.join(timeout) for queue in queues)))

    async def _send_batch(self, job: CaptureJob) -> Any:
        return await asyncio.wait_for(
            self._client.add_conversation(job.messages, session_id=job.session_id, idempotency_key=job.key),
            self.config.tool_timeout * 2,
        )

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until queued captures are sent (or given up); False if some are still pending at `timeout`."""
        try:
            return self._loop.run(self._join(timeout), timeout + 1.0)
        except Exception:
            return False

    async def aflush(self, timeout: float = 10.0) -> bool:
        """`flush` for async agents."""
        try:
            return await self._loop.run_async(self._join(timeout))
        except Exception:
            return False

    # ------------------------------------------------------------------ tools

    def tool_definitions(self, fmt: tools.ToolFormat = "openai") -> list[dict[str, Any]]:
        """The memory tools, plus the configured knowledge resources' tools, in OpenAI or Anthropic format."""
        try:
            return self._loop.run(self._definitions(fmt), self.config.tool_timeout + 1.0)
        except Exception as exc:  # the memory tools are known without asking the gateway
            self._log.warning("memhub: knowledge tools not listed (%s)", exc)
            return [d.render(fmt) for d in tools.MEMORY_TOOLS]

    async def atool_definitions(self, fmt: tools.ToolFormat = "openai") -> list[dict[str, Any]]:
        """`tool_definitions` for async agents."""
        try:
            return await self._loop.run_async(self._definitions(fmt))
        except Exception as exc:
            self._log.warning("memhub: knowledge tools not listed (%s)", exc)
            return [d.render(fmt) for d in tools.MEMORY_TOOLS]

    async def _definitions(self, fmt: tools.ToolFormat) -> list[dict[str, Any]]:
        """Render the tools, listing the knowledge resources' tools once (a failed listing is retried next time)."""
        if self._knowledge is not None and self._knowledge_ids and self._knowledge_tools is None:
            found: list[tools.ToolDefinition] = []
            for knowledge_id in self._knowledge_ids:
                listing = await self._guarded(self._knowledge.tools_list(knowledge_id), self.config.tool_timeout)
                found += tools.knowledge_tools(knowledge_id, listing or {})
            self._knowledge_tools = found
        return [d.render(fmt) for d in [*tools.MEMORY_TOOLS, *(self._knowledge_tools or [])]]

    def dispatch(self, name: str, args: Mapping[str, Any] | str | None = None, *, session_id: str | None = None) -> str:
        """Run one tool call and return its text; errors come back as "memory unavailable: …", never raised."""
        try:
            return self._loop.run(self._dispatch(name, args, session_id), self.config.tool_timeout + 1.0)
        except Exception as exc:
            return UNAVAILABLE + _reason(exc)

    async def adispatch(
        self, name: str, args: Mapping[str, Any] | str | None = None, *, session_id: str | None = None
    ) -> str:
        """`dispatch` for async agents."""
        try:
            return await self._loop.run_async(self._dispatch(name, args, session_id))
        except Exception as exc:
            return UNAVAILABLE + _reason(exc)

    async def _dispatch(self, name: str, raw_args: Mapping[str, Any] | str | None, session_id: str | None) -> str:
        try:
            args = tools.parse_arguments(raw_args)
            return await self._run_tool(name, args, session_id)
        except tools.ToolArgumentError as exc:
            return f"invalid arguments for {name}: {exc}"
        except TDAMError as exc:
            if exc.code == 400:  # the gateway checked the arguments (knowledge tools): the model can fix them
                return f"invalid arguments for {name}: {exc.message}"
            self._log.info("memhub tool %s failed: %s", name, exc)
            return UNAVAILABLE + _reason(exc)
        except Exception as exc:
            self._log.info("memhub tool %s failed: %s", name, exc)
            return UNAVAILABLE + _reason(exc)

    def _count_search(self, session_id: str | None) -> str | None:
        """Count a search against the turn's cap (the guide's ≤ 3 rule, enforced); the refusal text when over it.

        Only well-formed searches count: a call the kit refused for its arguments cost the model nothing.
        """
        cap = self.config.max_searches_per_turn
        turn = self._turns.setdefault(self._session(session_id) or "", _Turn("", None))
        if turn.searches >= cap:
            return (
                f"Search limit reached for this turn ({cap} of {cap} used): the information is probably not "
                "in memory; answer from what you have."
            )
        turn.searches += 1
        return None

    async def _run_tool(self, name: str, args: dict[str, Any], session_id: str | None) -> str:
        cfg = self.config
        if name == tools.MEMORY_SEARCH:
            query = tools.require_text(args, "query", SERVER_MAX_QUERY_CHARS)
            limit, kind = tools.search_limit(args), tools.optional_text(args, "type", 64)
            if refusal := self._count_search(session_id):
                return refusal
            call = self._client.search_atomic(query, limit=limit, type=kind)
            return tools.format_memory_hits(await self._guarded(call, cfg.tool_timeout))
        if name == tools.CONVERSATION_SEARCH:
            query = tools.require_text(args, "query", SERVER_MAX_QUERY_CHARS)
            limit, session = tools.search_limit(args), tools.optional_text(args, "session_key", 256)
            if refusal := self._count_search(session_id):
                return refusal
            call = self._client.search_conversation(query, limit=limit, session_id=session)
            return tools.format_conversation_hits(await self._guarded(call, cfg.tool_timeout))
        if name in tools.READ_FILE_ALIASES:
            path = tools.memory_file_path(args)
            if path.lower() in ("persona.md", "core/persona.md"):
                data = await self._guarded(self._client.read_core(), cfg.tool_timeout)
            else:
                data = await self._guarded(self._client.read_scenario(path), cfg.tool_timeout)
            content = (data or {}).get("content")
            return prompt.clip(
                tools.format_file(path, content if isinstance(content, str) else None), cfg.max_tool_chars
            )
        definition = next((d for d in self._knowledge_tools or [] if d.name == name), None)
        if definition is None or self._knowledge is None:
            known = ", ".join(d.name for d in [*tools.MEMORY_TOOLS, *(self._knowledge_tools or [])])
            return f"unknown tool: {name} (available: {known})"
        assert definition.knowledge_id is not None and definition.remote_name is not None
        call = self._knowledge.tools_call(definition.knowledge_id, definition.remote_name, args)
        return tools.format_knowledge_result(await self._guarded(call, cfg.tool_timeout), cfg.max_tool_chars)

    # ------------------------------------------------------------------ health and lifecycle

    @property
    def stats(self) -> dict[str, Any]:
        """Capture counters and the breaker's state, for logs and dashboards."""
        stats = {
            "capture": self._capture.snapshot(),
            "breaker": {"state": self.breaker.state, "trips": self.breaker.trips},
        }
        if self._skills is not None:
            stats["skills_capture"] = self._skills.queue.snapshot()
        return stats

    def close(self, flush_timeout: float = 5.0) -> None:
        """Send what is queued (up to `flush_timeout`), then close the clients and stop the loop."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._exit_hook)
        if flush_timeout > 0 and not self.flush(flush_timeout):
            self._log.warning("memhub: closing with %d capture batch(es) unsent", self._capture.pending())
        try:
            self._loop.run(self._close_clients(), 5.0)
        except Exception as exc:
            self._log.debug("memhub: closing clients: %s", exc)
        self._loop.stop()

    async def _close_clients(self) -> None:
        skills = self._skills.client if self._skills is not None and self._owns_skills else None
        for client in (self._client, self._knowledge, skills):
            if client is not None:
                await client.close()

    def __enter__(self) -> MemoryAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


EXIT_FLUSH_TIMEOUT = 3.0


def _close_at_exit(ref: weakref.ref[MemoryAgent]) -> None:
    """At interpreter exit: close an agent its owner forgot to close, sending queued captures first."""
    agent = ref()
    if agent is not None:
        agent.close(flush_timeout=EXIT_FLUSH_TIMEOUT)


def _reason(exc: BaseException) -> str:
    """A short cause a model can read: the gateway's message and code, not a Python repr."""
    text = f"{exc.message} (code {exc.code})" if isinstance(exc, TDAMError) else str(exc).strip()
    return " ".join((text or type(exc).__name__).split())[:300]
