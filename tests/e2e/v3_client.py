"""A stand-in for the TencentDB Agent Memory v3 Python SDK's `MemoryClient` (spec §7.1).

The SDK cannot be installed here, so this reproduces the requests it sends, written from the
spec: every body starts from {team_id, agent_id, user_id[, task_id]}, adds `session_id` (the
per-call value, else the client's) for L0/L1 calls except deletes, then the call's fields;
None values are dropped. Headers are `Authorization: Bearer`, `x-tdai-service-id` and a JSON
content type. The response handling mirrors what the SDK does with it: an HTTP error or a
non-zero `code` raises, `data: null` becomes `{}`, any other non-object `data` is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx


class SdkError(Exception):
    """What the SDK raises as TDAMError: code, message, request id, details."""

    def __init__(self, code: int, message: str, request_id: str = "", details: dict[str, Any] | None = None) -> None:
        super().__init__(f"({code}) {message} request_id={request_id}")
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = details


def _drop_none(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


@dataclass
class SentRequest:
    """One request exactly as it went on the wire (for shape assertions)."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class V3MemoryClient:
    endpoint: str
    api_key: str
    service_id: str
    team_id: str
    agent_id: str
    user_id: str
    session_id: str | None = None
    task_id: str | None = None
    timeout: float = 10.0
    sent: list[SentRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (self.team_id and self.agent_id and self.user_id):
            raise ValueError("team_id, agent_id and user_id are required")
        self._http = httpx.Client(timeout=self.timeout)
        self._headers = {
            "Authorization": f"Bearer {self.api_key}",
            "x-tdai-service-id": self.service_id,
            "Content-Type": "application/json",
        }

    # -- transport -------------------------------------------------------------------------
    def _base(self) -> dict[str, Any]:
        body: dict[str, Any] = {"team_id": self.team_id, "agent_id": self.agent_id, "user_id": self.user_id}
        if self.task_id:
            body["task_id"] = self.task_id
        return body

    def _session(self, override: str | None) -> str | None:
        return override or self.session_id

    def _post(self, sub: str, body: dict[str, Any]) -> dict[str, Any]:
        path = f"/v3/{sub}"
        self.sent.append(SentRequest(path, body, dict(self._headers)))
        response = self._http.post(self.endpoint.rstrip("/") + path, json=body, headers=self._headers)
        try:
            envelope = response.json()
        except ValueError:
            raise SdkError(response.status_code if response.is_error else -1, response.text) from None
        if not isinstance(envelope, dict):
            raise SdkError(-1, "API response must be a JSON object")
        code = envelope.get("code")
        if response.is_error or code != 0:
            payload = envelope.get("data")
            raise SdkError(
                code if isinstance(code, int) and code != 0 else response.status_code,
                str(envelope.get("message") or f"HTTP {response.status_code}"),
                str(envelope.get("request_id") or ""),
                payload if isinstance(payload, dict) else None,
            )
        data = envelope.get("data")
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise SdkError(-1, "API response data must be a JSON object")
        return data

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> V3MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- L0 --------------------------------------------------------------------------------
    def add_conversation(self, messages: list[dict[str, Any]], *, session_id: str | None = None) -> dict[str, Any]:
        session = self._session(session_id)
        if not session:
            raise ValueError("add_conversation requires a session id")
        return self._post("conversation/add", _drop_none({**self._base(), "session_id": session, "messages": messages}))

    def query_conversation(
        self,
        *,
        session_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
    ) -> dict[str, Any]:
        body = {
            **self._base(),
            "session_id": self._session(session_id),
            "limit": limit,
            "offset": offset,
            "time_start": time_start,
            "time_end": time_end,
        }
        return self._post("conversation/query", _drop_none(body))

    def search_conversation(
        self,
        query: str,
        *,
        limit: int | None = None,
        session_id: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
    ) -> dict[str, Any]:
        body = {
            **self._base(),
            "session_id": self._session(session_id),
            "query": query,
            "limit": limit,
            "time_start": time_start,
            "time_end": time_end,
        }
        return self._post("conversation/search", _drop_none(body))

    def delete_conversation(
        self, *, message_ids: list[str] | None = None, session_ids: list[str] | None = None
    ) -> dict[str, Any]:
        # Deletes never inherit the client's session id.
        if not message_ids and not session_ids:
            raise ValueError("delete_conversation requires message_ids or session_ids")
        body = {**self._base(), "message_ids": message_ids, "session_ids": session_ids}
        return self._post("conversation/delete", _drop_none(body))

    def count_conversation(
        self, *, session_id: str | None = None, time_start: str | None = None, time_end: str | None = None
    ) -> dict[str, Any]:
        body = {**self._base(), "session_id": self._session(session_id), "time_start": time_start, "time_end": time_end}
        return self._post("conversation/count", _drop_none(body))

    # -- L1 --------------------------------------------------------------------------------
    def update_atomic(
        self, id: str, content: str, *, background: str | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        body = {
            **self._base(),
            "session_id": self._session(session_id),
            "id": id,
            "content": content,
            "background": background,
        }
        return self._post("atomic/update", _drop_none(body))

    def query_atomic(
        self,
        *,
        type: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            **self._base(),
            "session_id": self._session(session_id),
            "type": type,
            "limit": limit,
            "offset": offset,
            "time_start": time_start,
            "time_end": time_end,
        }
        return self._post("atomic/query", _drop_none(body))

    def search_atomic(
        self,
        query: str,
        *,
        limit: int | None = None,
        type: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            **self._base(),
            "session_id": self._session(session_id),
            "query": query,
            "limit": limit,
            "type": type,
            "time_start": time_start,
            "time_end": time_end,
        }
        return self._post("atomic/search", _drop_none(body))

    def delete_atomic(self, ids: list[str], *, session_id: str | None = None) -> dict[str, Any]:
        unique = list(dict.fromkeys(i.strip() for i in ids))
        if not unique:
            raise ValueError("delete_atomic requires ids")
        body = {**self._base(), "session_id": self._session(session_id), "ids": unique}
        return self._post("atomic/delete", _drop_none(body))

    def count_atomic(
        self,
        *,
        type: str | None = None,
        time_start: str | None = None,
        time_end: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            **self._base(),
            "session_id": self._session(session_id),
            "type": type,
            "time_start": time_start,
            "time_end": time_end,
        }
        return self._post("atomic/count", _drop_none(body))

    # -- L2 (team + agent; no session) ---------------------------------------------------------
    def list_scenarios(self, *, path_prefix: str | None = None) -> dict[str, Any]:
        return self._post("scenario/ls", _drop_none({**self._base(), "path_prefix": path_prefix}))

    def read_scenario(self, path: str) -> dict[str, Any]:
        return self._post("scenario/read", {**self._base(), "path": path})

    def write_scenario(self, path: str, content: str, *, summary: str | None = None) -> dict[str, Any]:
        body = {**self._base(), "path": path, "content": content, "summary": summary}
        return self._post("scenario/write", _drop_none(body))

    def rm_scenario(self, path: str) -> dict[str, Any]:
        return self._post("scenario/rm", {**self._base(), "path": path})

    def count_scenario(self, *, path_prefix: str | None = None) -> dict[str, Any]:
        return self._post("scenario/count", _drop_none({**self._base(), "path_prefix": path_prefix}))

    # -- L3 (team + agent; no session) ---------------------------------------------------------
    def read_core(self) -> dict[str, Any]:
        return self._post("core/read", self._base())

    def write_core(self, content: str) -> dict[str, Any]:
        return self._post("core/write", {**self._base(), "content": content})

    def count_core(self) -> dict[str, Any]:
        return self._post("core/count", self._base())


SDK_METHODS = (
    "add_conversation",
    "query_conversation",
    "search_conversation",
    "delete_conversation",
    "count_conversation",
    "update_atomic",
    "query_atomic",
    "search_atomic",
    "delete_atomic",
    "count_atomic",
    "list_scenarios",
    "read_scenario",
    "write_scenario",
    "rm_scenario",
    "count_scenario",
    "read_core",
    "write_core",
    "count_core",
)
