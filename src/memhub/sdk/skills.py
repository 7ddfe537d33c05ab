"""`SkillClient` / `AsyncSkillClient`: the `/v3/skill/*` routes, with the original SDK's method names and arguments.

    from memhub.sdk import SkillClient, TDAMError, encode_utf8

    with SkillClient("http://127.0.0.1:8420", "mh-gw-…", "svc-a",
                     team_id="team-1", agent_id="agent-1", user_id="user-1") as skills:
        made = skills.create(name="py-tips", content="---\\nname: py-tips\\ndescription: Python tips\\n---\\n# Tips\\n",
                             resources=[encode_utf8("scripts/run.sh", "echo hi\\n", is_executable=True)])
        try:
            skills.patch(made["skill_id"], expected_version=1, old_string="# Tips", new_string="# Python tips")
        except TDAMError as e:
            if e.code == SKILL_ERROR_CODE["VERSION_STALE"]:
                latest = e.data["current_version"]   # someone else wrote first: re-read, retry

Unlike `MemoryClient`, the isolation ids are optional: the constructor's `team_id` / `agent_id` /
`user_id` / `task_id` are defaults that each call may override (`with_defaults` clones with others).
`conversation_add` and `conversation_force_archive` never use the defaults: their ids are required
arguments, as in the original. `extract` is checked here (messages, user, team and agent ids) before
anything is sent. Business errors are HTTP 200 with a five-digit envelope code; the SDK raises them as
`TDAMError` with `code`, `message`, `request_id` and `data` (e.g. `current_version` after 40901).

memhub adds three calls the original's SDK lacks (the first two are routes of the original's gateway):
`get_by_name`, `export` (the zip, decoded) and `publish` (a mined candidate made active).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Final, Generic, Self

import httpx

from memhub.sdk._errors import ParamError
from memhub.sdk._http import AsyncClient, AsyncHttp, SyncClient, SyncHttp, coroutine_calls, options
from memhub.sdk._isolation import strip_none
from memhub.sdk._request import JsonObject, Request, ResultT
from memhub.sdk._skill_parts import (
    SKILL_ERROR_CODE,
    Messages,
    SkillDefaults,
    check_extract,
    check_owner,
    decode_export,
    encode_base64,
    encode_utf8,
)

__all__ = ["SKILL_ERROR_CODE", "AsyncSkillClient", "SkillClient", "SkillDefaults", "encode_base64", "encode_utf8"]

_V3: Final = "/v3/skill"


# -- the calls, written once --------------------------------------------------------------------------------------
class _Defaulted:
    """The ids a client falls back to, and clones with others (not a call: stays synchronous in the async client)."""

    _defaults: SkillDefaults

    @property
    def defaults(self) -> SkillDefaults:
        """The ids sent when a call gives none."""
        return self._defaults

    def with_defaults(
        self,
        *,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> Self:
        """A clone sharing this client's connection, with some defaults replaced (None keeps the current one)."""
        clone = copy.copy(self)
        clone._defaults = SkillDefaults(**self._defaults.merge(team_id, agent_id, user_id, task_id))
        return clone

    encode_utf8 = staticmethod(encode_utf8)
    encode_base64 = staticmethod(encode_base64)


class _SkillCalls(Generic[ResultT]):
    """The skill calls, each written once; the client's `_send` makes them sync or async."""

    _defaults: SkillDefaults

    def _send(self, request: Request) -> ResultT:
        raise NotImplementedError

    def _body(
        self, team_id: str | None, agent_id: str | None, user_id: str | None, task_id: str | None, /, **fields: Any
    ) -> dict[str, Any]:
        return strip_none({**self._defaults.merge(team_id, agent_id, user_id, task_id), **fields})

    def _post(self, route: str, body: dict[str, Any]) -> ResultT:
        return self._send(Request(f"{_V3}/{route}", body))

    # -- CRUD --------------------------------------------------------------------------------------------------
    def create(
        self,
        *,
        name: str,
        content: str,
        resources: Iterable[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/create`: version 1 of a new skill (SKILL.md with front matter, optional resource files)."""
        files = [dict(r) for r in resources] if resources is not None else None
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            name=name,
            content=content,
            resources=files,
            metadata=dict(metadata) if metadata is not None else None,
        )
        return self._post("create", body)

    def update(
        self,
        skill_id: str,
        *,
        expected_version: int,
        content: str,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/update`: replace SKILL.md; 40901 with `data.current_version` when someone wrote first."""
        body = self._body(
            team_id, agent_id, user_id, task_id, skill_id=skill_id, expected_version=expected_version, content=content
        )
        return self._post("update", body)

    def patch(
        self,
        skill_id: str,
        *,
        expected_version: int,
        old_string: str,
        new_string: str,
        replace_all: bool | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/patch`: replace `old_string` in SKILL.md (42202: not unique and no `replace_all`)."""
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            skill_id=skill_id,
            expected_version=expected_version,
            old_string=old_string,
            new_string=new_string,
            replace_all=replace_all,
        )
        return self._post("patch", body)

    def delete(
        self,
        skill_id: str,
        *,
        expected_version: int,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/delete`: remove the skill, every version and its files (`{skill_id, archived: true}`)."""
        body = self._body(team_id, agent_id, user_id, task_id, skill_id=skill_id, expected_version=expected_version)
        return self._post("delete", body)

    def get(
        self,
        skill_id: str,
        *,
        version: int | None = None,
        include_content: bool | None = None,
        include_manifest: bool | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/get`: the head, or one version; content and file manifest unless switched off."""
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            skill_id=skill_id,
            version=version,
            include_content=include_content,
            include_manifest=include_manifest,
        )
        return self._post("get", body)

    def get_by_name(
        self,
        skill_name: str,
        *,
        version: int | None = None,
        include_content: bool | None = None,
        include_manifest: bool | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/get-by-name`: `get` by the name `<available_skills>` shows; needs team and agent."""
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            skill_name=skill_name,
            version=version,
            include_content=include_content,
            include_manifest=include_manifest,
        )
        check_owner(body, "get_by_name")
        return self._post("get-by-name", body)

    def list(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        pagination: Mapping[str, Any] | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/list`: heads; `filters` {owner_agent_id, name_prefix, status}, `pagination`."""
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            filters=dict(filters) if filters is not None else None,
            pagination=dict(pagination) if pagination is not None else None,
        )
        return self._post("list", body)

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: str | None = None,
        scope: str | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/search`: `mode` bm25 | embedding | hybrid; `scope="team"` searches past the agent's own."""
        body = self._body(team_id, agent_id, user_id, task_id, query=query, top_k=top_k, mode=mode, scope=scope)
        return self._post("search", body)

    def versions(
        self,
        skill_id: str,
        *,
        pagination: Mapping[str, Any] | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/versions`: every version of a skill, newest first, with `is_expired`."""
        page = dict(pagination) if pagination is not None else None
        return self._post(
            "versions", self._body(team_id, agent_id, user_id, task_id, skill_id=skill_id, pagination=page)
        )

    def publish(
        self,
        skill_id: str,
        *,
        expected_version: int,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/publish` (memhub): a mined `candidate` becomes active (mining never does that itself)."""
        body = self._body(team_id, agent_id, user_id, task_id, skill_id=skill_id, expected_version=expected_version)
        return self._post("publish", body)

    # -- resource files ----------------------------------------------------------------------------------------
    def write_files(
        self,
        skill_id: str,
        *,
        expected_version: int,
        files: Iterable[Mapping[str, Any]],
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/files/write`: add or replace ≤ 100 files (`encode_utf8`, `encode_base64`): a new version."""
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            skill_id=skill_id,
            expected_version=expected_version,
            files=[dict(f) for f in files],
        )
        return self._post("files/write", body)

    def remove_files(
        self,
        skill_id: str,
        *,
        expected_version: int,
        paths: Iterable[str],
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/files/remove`: remove files by path in a new version."""
        body = self._body(
            team_id, agent_id, user_id, task_id, skill_id=skill_id, expected_version=expected_version, paths=[*paths]
        )
        return self._post("files/remove", body)

    def read_file(
        self,
        skill_id: str,
        path: str,
        *,
        version: int | None = None,
        encoding: str | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/files/read`: one file of the head or of a version, as `utf-8` text or `base64`."""
        body = self._body(
            team_id, agent_id, user_id, task_id, skill_id=skill_id, version=version, path=path, encoding=encoding
        )
        return self._post("files/read", body)

    # -- prompt and mining -------------------------------------------------------------------------------------
    def listing(
        self,
        *,
        query: str | None = None,
        char_budget: int | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/listing`: the `<available_skills>` block, ranked for `query`, within `char_budget`."""
        body = self._body(team_id, agent_id, user_id, task_id, query=query, char_budget=char_budget)
        return self._post("listing", body)

    def extract(
        self,
        messages: Messages,
        *,
        session_id: str | None = None,
        reason: str | None = None,
        options: Mapping[str, Any] | None = None,
        space_id: str | None = None,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/extract`: archive these messages for mining now; answers once the archive is written.

        Mining runs in the background; its skills show up in `list` / `search`. `space_id` defaults to the
        client's service id on the gateway's side.
        """
        body = self._body(
            team_id,
            agent_id,
            user_id,
            task_id,
            space_id=space_id,
            session_id=session_id,
            messages=list(messages) if isinstance(messages, list | tuple) else messages,
            reason=reason,
            options=dict(options) if options is not None else None,
        )
        check_extract(messages, body)
        return self._post("extract", body)

    def conversation_add(
        self,
        *,
        session_id: str,
        user_id: str,
        team_id: str,
        agent_id: str,
        messages: Messages,
        space_id: str | None = None,
        task_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/conversation/add`: this turn's messages into the session's mining buffer.

        Roles user / assistant / tool_call / tool_result / system; tool messages carry `tool_call_id`. The ids
        are required and the client's defaults are NOT used, as in the original. The answer is
        `{status: "ok"|"archived", archived?: {task_id, archived_at_ms, archive_key, reason}}`. With
        `idempotency_key` (a memhub addition) a retry of a turn that landed buffers nothing again and answers
        `{status: "ok", replayed: true}`.
        """
        body = strip_none(
            {
                "session_id": session_id,
                "space_id": space_id,
                "user_id": user_id,
                "team_id": team_id,
                "agent_id": agent_id,
                "task_id": task_id,
                "messages": list(messages),
                "idempotency_key": idempotency_key,
            }
        )
        return self._post("conversation/add", body)

    def conversation_force_archive(
        self,
        *,
        session_id: str,
        user_id: str,
        team_id: str,
        agent_id: str,
        space_id: str | None = None,
        reason: str | None = None,
        task_id: str | None = None,
    ) -> ResultT:
        """`POST /v3/skill/conversation/force-archive`: archive the session's buffer now, whatever its size.

        No defaults are used, as for `conversation_add`. The answer is `{status: "empty", message}` or
        `{status: "archived", task_id, archived_at_ms, archive_key}`.
        """
        body = strip_none(
            {
                "session_id": session_id,
                "space_id": space_id,
                "user_id": user_id,
                "team_id": team_id,
                "agent_id": agent_id,
                "reason": reason,
                "task_id": task_id,
            }
        )
        return self._post("conversation/force-archive", body)

    # -- export (decoded by the concrete clients) --------------------------------------------------------------
    def _export_request(
        self, skill_id: str, version: int | None, ids: tuple[str | None, str | None, str | None, str | None]
    ) -> Request:
        return Request(f"{_V3}/export", self._body(*ids, skill_id=skill_id, version=version))


def _connect_defaults(
    team_id: str | None, agent_id: str | None, user_id: str | None, task_id: str | None
) -> SkillDefaults:
    for name, value in (("team_id", team_id), ("agent_id", agent_id), ("user_id", user_id), ("task_id", task_id)):
        if value is not None and not isinstance(value, str):
            raise ParamError(f"{name} must be a string")
    return SkillDefaults(team_id, agent_id, user_id, task_id)


class SkillClient(SyncClient, _Defaulted, _SkillCalls[JsonObject]):
    """The synchronous skill client."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
        user_key: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._defaults = _connect_defaults(team_id, agent_id, user_id, task_id)
        opts = options(endpoint, api_key, service_id, user_key=user_key, timeout=timeout, verify=verify)
        self._http = SyncHttp(opts, transport)

    def export(
        self,
        skill_id: str,
        *,
        version: int | None = None,
        raw: bool = False,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> bytes | JsonObject:
        """`POST /v3/skill/export`: the skill as a zip's bytes (SKILL.md and its files); `raw=True` gives the answer
        itself (`zip_base64`, `filename`, `name`, `version`, `file_count`, `total_bytes`, `warnings`)."""
        request = self._export_request(skill_id, version, (team_id, agent_id, user_id, task_id))
        return decode_export(self._send(request), raw=raw)


@coroutine_calls(_SkillCalls)
class AsyncSkillClient(AsyncClient, _Defaulted, _SkillCalls[Awaitable[JsonObject]]):
    """The asynchronous skill client: `SkillClient`'s calls as coroutines (`with_defaults` stays synchronous)."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
        user_key: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._defaults = _connect_defaults(team_id, agent_id, user_id, task_id)
        opts = options(endpoint, api_key, service_id, user_key=user_key, timeout=timeout, verify=verify)
        self._http = AsyncHttp(opts, transport)

    @classmethod
    def sharing(cls, http: AsyncHttp, defaults: SkillDefaults) -> AsyncSkillClient:
        """A client on another client's connection (the agent kit's, so one pool serves memory and skills)."""
        client = cls.__new__(cls)
        client._http, client._defaults = http, defaults
        return client

    async def export(
        self,
        skill_id: str,
        *,
        version: int | None = None,
        raw: bool = False,
        team_id: str | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        task_id: str | None = None,
    ) -> bytes | JsonObject:
        """`SkillClient.export` as a coroutine."""
        request = self._export_request(skill_id, version, (team_id, agent_id, user_id, task_id))
        return decode_export(await self._send(request), raw=raw)
