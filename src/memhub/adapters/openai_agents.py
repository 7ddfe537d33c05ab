"""An OpenAI Agents SDK `Session` whose history is memhub's L0 conversation (docs/openai-agents.md).

```python
from agents import Agent, Runner
from memhub.adapters.openai_agents import MemhubSession

session = MemhubSession("chat-42")                 # connection from MEMHUB_URL, MEMHUB_API_KEY, ...
result = await Runner.run(agent, "Hi, I'm Ada", session=session)
```

Each history item is one L0 message of the session (more when its text passes the gateway's 8192 characters per
message): the message's text is the item's readable text (message text, tool arguments and outputs), so search,
recall and the memory pipeline read the conversation as people wrote it, and the rest of the item rides in the
message's metadata, so `get_items` returns every item exactly as it was added. Messages of the same session
written by something else (a hook, the proxy, the SDK) come back as plain `{"role", "content"}` items.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

try:
    from agents.memory.session_settings import SessionSettings
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memhub.adapters.openai_agents needs the OpenAI Agents SDK: pip install 'memhub[openai-agents]'",
        name=exc.name,
    ) from exc

from memhub.adapters._gateway import GatewayLink
from memhub.sdk.agent.turns import SERVER_MAX_CONTENT_CHARS, batched
from memhub.sdk.connection import Connection
from memhub.sdk.memory import AsyncMemoryClient

META = "openai_agents"
# The gateway's bounds: a message's metadata as compact JSON, a page of a query.
MAX_METADATA_BYTES = 4096
PAGE = 100
# The string fields that hold what a person or a tool said; they become the message text.
TEXT_KEYS = frozenset({"content", "text", "arguments", "output", "refusal"})
SEPARATOR = "\n\n"

Path = list[str | int]


class MemhubSession:
    """Conversation history for one session id, kept in memhub's L0 for the connection's team, agent and user.

    Gateway errors (`memhub.sdk.TDAMError`, `TransportError`) propagate: a session that dropped turns quietly
    would hand the model a history with holes.
    """

    def __init__(
        self,
        session_id: str,
        connection: Connection | None = None,
        *,
        session_settings: SessionSettings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError("session_id: must be a non-empty string")
        self.session_id = session_id
        self.session_settings = session_settings
        self._link = GatewayLink(connection, name="memhub-openai-agents", transport=transport)

    # -- Session -------------------------------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The history, oldest first; with `limit` (or the settings' limit), the latest `limit` items."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        return await self._link.arun(self._get_items(limit))

    async def add_items(self, items: list[Any]) -> None:
        """Append items, in order."""
        await self._link.arun(self._add_items(items))

    async def pop_item(self) -> Any | None:
        """Remove the most recent item and return it (None when the session is empty)."""
        return await self._link.arun(self._pop_item())

    async def clear_session(self) -> None:
        """Remove every message of this session."""
        await self._link.arun(self._clear())

    def close(self) -> None:
        """Close the connection to the gateway (the session is unusable afterwards)."""
        self._link.close()

    # -- on the adapter's loop ---------------------------------------------------------------------------
    async def _client(self) -> AsyncMemoryClient:
        return await self._link.client()

    async def _get_items(self, limit: int | None) -> list[Any]:
        if limit is not None and limit <= 0:
            return []
        rows = await self._tail(limit)
        items = [item for _, item in _decode(rows)]
        return items if limit is None else items[-limit:]

    async def _add_items(self, items: Sequence[Any]) -> None:
        messages = [message for item in items for message in _encode(_plain(item))]
        client = await self._client()
        for batch in batched(messages):
            await client.add_conversation(batch, session_id=self.session_id)

    async def _pop_item(self) -> Any | None:
        rows = await self._tail(1)
        decoded = _decode(rows)
        if not decoded:
            return None
        ids, item = decoded[-1]
        client = await self._client()
        await client.delete_conversation(message_ids=ids)
        return item

    async def _clear(self) -> None:
        client = await self._client()
        await client.delete_conversation(session_ids=[self.session_id])

    async def _tail(self, items: int | None) -> list[dict[str, Any]]:
        """The session's messages, oldest first: all of them, or enough from the end to hold `items` items."""
        client = await self._client()
        total = int((await client.count_conversation(session_id=self.session_id)).get("total") or 0)
        rows: list[dict[str, Any]] = []
        end = total
        while end > 0:
            start = max(0, end - PAGE)
            page = await client.query_conversation(session_id=self.session_id, limit=end - start, offset=start)
            rows[:0] = page.get("messages") or []
            end = start
            if items is not None and sum(1 for row in rows if not _continuation(row)) >= items:
                break
        return rows


def _plain(item: Any) -> dict[str, Any]:
    """An item as a JSON object (the Agents SDK's input items are TypedDicts; pydantic models are dumped)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(exclude_unset=True)
    if not isinstance(item, dict):
        raise ValueError(f"items: each item must be a JSON object (got {type(item).__name__})")
    try:
        return json.loads(json.dumps(item))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"items: each item must be JSON-serialisable ({exc})") from exc


def _role(item: dict[str, Any]) -> str:
    """L0 has users and assistants: what the model produced is the assistant's, everything else the user's."""
    role = item.get("role")
    if role == "assistant":
        return "assistant"
    if role in ("user", "system", "developer") or str(item.get("type", "")).endswith("_output"):
        return "user"
    return "assistant"


def _encode(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The L0 messages holding one item: its text split into parts, the rest in the first part's metadata."""
    skeleton = json.loads(json.dumps(item))
    moved: list[tuple[Path, str]] = []
    for path, text in _strings(skeleton):
        if path and path[-1] in TEXT_KEYS:
            moved.append((path, text))
    for path, _ in moved:
        _set(skeleton, path, None)
    # Whatever else makes the rest too large (encrypted reasoning, long ids) joins the text, longest first.
    rest = sorted(_strings(skeleton), key=lambda pt: len(pt[1]), reverse=True)
    while _size({META: {"item": skeleton, "texts": [[p, len(t)] for p, t in moved]}}) > MAX_METADATA_BYTES - 64:
        if not rest:
            raise ValueError("items: an item's structure must fit in 4096 bytes of metadata besides its text")
        path, text = rest.pop(0)
        moved.append((path, text))
        _set(skeleton, path, None)
    text = SEPARATOR.join(t for _, t in moved)
    head: dict[str, Any] = {"item": skeleton, "texts": [[p, len(t)] for p, t in moved]}
    if not text:
        # A message needs text: a placeholder that says what the item is, ignored when it is read back.
        text = f"[{item.get('type') or item.get('role') or 'item'}]"
        head["placeholder"] = True
    chunks = [text[i : i + SERVER_MAX_CONTENT_CHARS] for i in range(0, len(text), SERVER_MAX_CONTENT_CHARS)]
    head["parts"] = len(chunks)
    role = _role(item)
    messages = [{"role": role, "content": chunks[0], "metadata": {META: head}}]
    messages += [{"role": role, "content": c, "metadata": {META: {"part": n}}} for n, c in enumerate(chunks[1:], 1)]
    return messages


def _decode(rows: Sequence[dict[str, Any]]) -> list[tuple[list[str], Any]]:
    """Items from messages, oldest first, each with the ids of the messages that hold it."""
    out: list[tuple[list[str], Any]] = []
    pending: tuple[list[str], dict[str, Any], list[str]] | None = None  # ids, head, text parts

    def finish() -> None:
        nonlocal pending
        if pending is not None:
            ids, head, parts = pending
            out.append((ids, _rebuild(head, "".join(parts))))
            pending = None

    for row in rows:
        meta = (row.get("metadata") or {}).get(META)
        if isinstance(meta, dict) and "part" in meta:
            if pending is not None:
                pending[0].append(row["id"])
                pending[2].append(row["content"])
            continue  # a part whose head is gone (popped, or before the first page read): nothing to add to
        finish()
        if isinstance(meta, dict) and "item" in meta:
            pending = ([row["id"]], meta, [row["content"]])
        else:
            out.append(([row["id"]], {"role": row["role"], "content": row["content"]}))
    finish()
    return out


def _rebuild(head: dict[str, Any], text: str) -> Any:
    item = head["item"]
    if head.get("placeholder"):
        text = ""
    at = 0
    for path, length in head["texts"]:
        _set(item, path, text[at : at + length])
        at += length + len(SEPARATOR)
    return item


def _continuation(row: dict[str, Any]) -> bool:
    meta = (row.get("metadata") or {}).get(META)
    return isinstance(meta, dict) and "part" in meta


def _strings(node: Any, path: Path | None = None) -> list[tuple[Path, str]]:
    """Every string leaf of a JSON value with its path."""
    path = path or []
    if isinstance(node, str):
        return [(path, node)]
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _strings(value, [*path, key])]
    if isinstance(node, list):
        return [leaf for i, value in enumerate(node) for leaf in _strings(value, [*path, i])]
    return []


def _set(node: Any, path: Path, value: Any) -> None:
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
