"""The v3 data-plane calls (L0 conversation … L3 core, recall, context), each written once as the request it sends.

`MemoryCalls` builds each call's request and hands it to `_send`; a subclass decides how it goes out. The SDK's
`MemoryClient` and `AsyncMemoryClient` (memhub.sdk.memory) send with httpx; a Claude Code hook sends with the standard
library (memhub.hooks.wire). Nothing here needs an HTTP library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Literal

from memhub.sdk._errors import ParamError
from memhub.sdk._isolation import Isolation, delete_ids, strip_none
from memhub.sdk._messages import role_and_text
from memhub.sdk._request import Request, ResultT

AtomicMemoryType = Literal[
    "persona", "episodic", "instruction", "work_fact", "work_task", "work_method", "work_artifact"
]
"""The L1 memory types the gateway stores (the `type` of add, query, search and count)."""

MAX_DELETE_MESSAGES = 5000
MAX_DELETE_SESSIONS = 100
MAX_DELETE_ATOMIC = 5000
MAX_CLEAR_CHAT_MEMORY = 100


class MemoryCalls(Generic[ResultT]):
    """The data-plane calls, each written once; the client's `_send` makes them sync or async."""

    _iso: Isolation

    def _send(self, request: Request) -> ResultT:
        raise NotImplementedError

    # Positional-only: `path` and `session_id` are also field names of the bodies these build.
    def _session_call(self, route: str, session_id: str | None, /, **fields: Any) -> ResultT:
        """An L0/L1 call: isolation, the effective session, the fields; None values dropped."""
        body = {**self._iso.base_body(), "session_id": self._iso.session(session_id), **fields}
        return self._send(Request(route, strip_none(body)))

    def _profile_call(self, route: str, /, **fields: Any) -> ResultT:
        """An L2/L3 call: team + agent (+ user, task) and the fields, never a session; None values dropped."""
        return self._send(Request(route, strip_none({**self._iso.base_body(), **fields})))

    # -- L0 conversation -----------------------------------------------------------------------
    def add_conversation(
        self,
        messages: list[dict[str, Any]],
        *,
        session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> ResultT:
        """`POST /v3/conversation/add`: append messages to a session (the call's or the bound one; required)."""
        body = {
            **self._iso.base_body(),
            "session_id": self._iso.write_session(session_id),
            "messages": messages,
            "idempotency_key": idempotency_key,
        }
        return self._send(Request("/v3/conversation/add", strip_none(body)))

    def query_conversation(
        self,
        *,
        session_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
    ) -> ResultT:
        """`POST /v3/conversation/query`: a page of messages, oldest first."""
        return self._session_call(
            "/v3/conversation/query",
            session_id,
            limit=limit,
            offset=offset,
            time_start=time_start,
            time_end=time_end,
        )

    def search_conversation(
        self,
        query: str,
        *,
        limit: int | None = None,
        session_id: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
    ) -> ResultT:
        """`POST /v3/conversation/search`: messages ranked by relevance to `query`."""
        return self._session_call(
            "/v3/conversation/search",
            session_id,
            query=query,
            limit=limit,
            time_start=time_start,
            time_end=time_end,
        )

    def delete_conversation(
        self,
        *,
        message_ids: list[str] | None = None,
        session_ids: list[str] | None = None,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/conversation/delete`: messages (≤5000) and/or whole sessions (≤100); never the bound session."""
        messages = delete_ids("message_ids", message_ids, MAX_DELETE_MESSAGES)
        if session_id is not None:
            # The deprecated singular joins the list before the limit check: the gateway counts them together.
            if not isinstance(session_id, str) or not session_id.strip():
                raise ParamError("session_id must be a non-empty string")
            if session_ids is not None and not isinstance(session_ids, list | tuple):
                raise ParamError("session_ids must be a list of non-empty strings")
            session_ids = [*(session_ids or []), session_id]
        sessions = delete_ids("session_ids", session_ids, MAX_DELETE_SESSIONS)
        if not messages and not sessions:
            raise ParamError(
                "delete_conversation requires message_ids or session_ids "
                "(the constructor session_id is intentionally NOT used for deletes)"
            )
        body = {**self._iso.base_body(), "message_ids": messages, "session_ids": sessions}
        return self._send(Request("/v3/conversation/delete", strip_none(body)))

    def count_conversation(
        self,
        *,
        session_id: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
    ) -> ResultT:
        """`POST /v3/conversation/count`: `{total}` under the query filters."""
        return self._session_call("/v3/conversation/count", session_id, time_start=time_start, time_end=time_end)

    # -- L1 atomic -------------------------------------------------------------------------------
    def update_atomic(
        self,
        id: str,
        content: str,
        *,
        background: str | None = None,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/atomic/update`: rewrite one memory's content (and background)."""
        return self._session_call("/v3/atomic/update", session_id, id=id, content=content, background=background)

    def add_atomic(
        self,
        content: str,
        type: AtomicMemoryType,
        *,
        priority: int | None = None,
        background: str | None = None,
        source_message_ids: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/atomic/add` (memhub extension): write one L1 memory as given, without distillation."""
        return self._session_call(
            "/v3/atomic/add",
            session_id,
            content=content,
            type=type,
            priority=priority,
            background=background,
            source_message_ids=source_message_ids,
            metadata=metadata,
        )

    def create_memories(self, records: list[dict[str, Any]], *, session_id: str | None = None) -> ResultT:
        """`POST /v3/atomic/create`: import L1 memories directly (≤500), bypassing distillation."""
        # Not None-stripped, like the original: an unbound session goes out as an explicit null.
        body = {**self._iso.base_body(), "session_id": self._iso.session(session_id), "records": records}
        return self._send(Request("/v3/atomic/create", body))

    def query_atomic(
        self,
        *,
        type: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/atomic/query`: a page of memories, optionally of one type."""
        return self._session_call(
            "/v3/atomic/query",
            session_id,
            type=type,
            limit=limit,
            offset=offset,
            time_start=time_start,
            time_end=time_end,
        )

    def search_atomic(
        self,
        query: str,
        *,
        limit: int | None = None,
        type: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/atomic/search`: memories ranked by relevance to `query`."""
        return self._session_call(
            "/v3/atomic/search",
            session_id,
            query=query,
            limit=limit,
            type=type,
            time_start=time_start,
            time_end=time_end,
        )

    def delete_atomic(self, ids: list[str], *, session_id: str | None = None) -> ResultT:
        """`POST /v3/atomic/delete`: memories by id (≤5000, trimmed and de-duplicated)."""
        unique = delete_ids("ids", ids, MAX_DELETE_ATOMIC)
        if not unique:
            raise ParamError("delete_atomic requires a non-empty ids list")
        # The session goes out as context, as in the original; ids name the targets, so it can only narrow.
        return self._session_call("/v3/atomic/delete", session_id, ids=unique)

    def count_atomic(
        self,
        *,
        type: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/atomic/count`: `{total}` under the query filters."""
        return self._session_call("/v3/atomic/count", session_id, type=type, time_start=time_start, time_end=time_end)

    # -- L2 scenario (team + agent; no session) ----------------------------------------------------
    def list_scenarios(self, *, path_prefix: str | None = None) -> ResultT:
        """`POST /v3/scenario/ls`: scene files and directories under a prefix."""
        return self._profile_call("/v3/scenario/ls", path_prefix=path_prefix)

    def read_scenario(self, path: str) -> ResultT:
        """`POST /v3/scenario/read`: one scene file (`content` is None when absent)."""
        return self._profile_call("/v3/scenario/read", path=path)

    def write_scenario(self, path: str, content: str, *, summary: str | None = None) -> ResultT:
        """`POST /v3/scenario/write`: rewrite an existing scene file."""
        return self._profile_call("/v3/scenario/write", path=path, content=content, summary=summary)

    def rm_scenario(self, path: str) -> ResultT:
        """`POST /v3/scenario/rm`: remove a scene file or directory."""
        return self._profile_call("/v3/scenario/rm", path=path)

    def count_scenario(self, *, path_prefix: str | None = None) -> ResultT:
        """`POST /v3/scenario/count`: `{total}` scene files under a prefix."""
        return self._profile_call("/v3/scenario/count", path_prefix=path_prefix)

    # -- L3 core (team + agent; no session) --------------------------------------------------------
    def read_core(self) -> ResultT:
        """`POST /v3/core/read`: the persona document (`content` is None when there is none)."""
        return self._profile_call("/v3/core/read")

    def write_core(self, content: str) -> ResultT:
        """`POST /v3/core/write`: replace the persona document."""
        return self._profile_call("/v3/core/write", content=content)

    def count_core(self) -> ResultT:
        """`POST /v3/core/count`: `{total}` persona documents (0 or 1)."""
        return self._profile_call("/v3/core/count")

    # -- recall (memhub extension) -------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        messages: Sequence[Any] | None = None,
        max_tokens: int | None = None,
        max_chars: int | None = None,
        include_persona: bool = True,
        include_scenes: bool = True,
        session_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/recall`: what to put in front of this turn, in one call (docs/sdk.md "recall").

        `{memories, persona, scenes, tokens, strategy}`: L1 memories and L0 conversation turns (each with its
        `layer`), best first and packed within the budget (`max_tokens`, `max_chars`; the gateway's default when
        neither is given), plus the persona and the scene index unless switched off. `messages` are the recent
        turns, in any shape capture accepts (dicts or objects with `role` and `content`, content as text or
        parts); only their role and text are sent. Gateways without the route (the original, older memhub)
        answer 404.
        """
        return self._session_call(
            "/v3/recall",
            session_id,
            query=query,
            messages=role_and_text(messages) if messages is not None else None,
            max_tokens=max_tokens,
            max_chars=max_chars,
            include_persona=include_persona,
            include_scenes=include_scenes,
        )

    # -- runtime context (memhub extension) ---------------------------------------------------------
    def compose_context(
        self,
        query: str,
        *,
        session_id: str | None = None,
        help_mode: bool | None = None,
        system_agent: bool | None = None,
        paths: list[str] | None = None,
        attachments: list[str] | None = None,
        data_connection: bool | None = None,
        capabilities: dict[str, bool] | None = None,
        caps: dict[str, int] | None = None,
        language: str | None = None,
    ) -> ResultT:
        """`POST /v3/context/compose`: this turn's runtime context (knowledge, skills, conversation excerpt).

        A memhub extension (docs/context.md): `system`, `user_prepend`, `user` and the `sources` used.
        """
        return self._session_call(
            "/v3/context/compose",
            session_id,
            query=query,
            help_mode=help_mode,
            system_agent=system_agent,
            paths=paths,
            attachments=attachments,
            data_connection=data_connection,
            capabilities=capabilities,
            caps=caps,
            language=language,
        )

    # -- chat-memory assets ---------------------------------------------------------------------------
    def clear_chat_memory(self, memory_ids: list[str]) -> ResultT:
        """`POST /v3/chat-memory/clear`: empty chat-memory assets (≤100), keeping the assets themselves."""
        unique = delete_ids("memory_ids", memory_ids, MAX_CLEAR_CHAT_MEMORY)
        if not unique:
            raise ParamError("clear_chat_memory requires a non-empty memory_ids list")
        # Asset-level: the ids alone name the scope, so no isolation fields go out.
        return self._send(Request("/v3/chat-memory/clear", {"memory_ids": unique}))
