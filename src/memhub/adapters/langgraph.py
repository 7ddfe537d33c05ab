"""A LangGraph `BaseStore` whose items are memhub L1 memories (docs/langgraph.md).

```python
from memhub.adapters.langgraph import MemhubStore
from memhub.sdk.connection import Connection

store = MemhubStore(Connection.from_env())        # MEMHUB_URL, MEMHUB_API_KEY, MEMHUB_SERVICE_ID, ...
graph = builder.compile(store=store)
```

Mapping:
- Each item is one L1 memory of the connection's team, agent and user. Its text (what search, recall and the
  pipeline see) is the value's only text field when the value is `{field: "text"}` (LangMem's shape), else the
  value as compact JSON. The namespace, key and creation time ride in the memory's metadata, so `get` returns
  exactly the value `put` stored.
- A namespace may start with label pairs that pin isolation ids: `("user", "u-7", "memories")` files the item
  under user `u-7` (labels `team`, `agent`, `user` by default; `id_labels={}` turns this off). Only the leading
  pairs count: `("docs", "team", "drafts")` is a plain path. A search or listing reads
  the scope its prefix pins (the connection's ids for what it leaves open): memhub keeps users apart, so no
  prefix lists two users' items at once.
- Search with a `query` goes through the gateway's ranked search (lexical, plus semantic when the gateway
  embeds); everything else pages through the scope's memories of the store's type, most recently updated
  first (the gateway looks L1 memories up by text, not by key), so its cost grows with that scope.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )

    # The reference semantics of filters and namespace matching, as LangGraph's own in-memory store applies them.
    from langgraph.store.memory import _compare_values, _does_match
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memhub.adapters.langgraph needs LangGraph: pip install 'memhub[langgraph]'", name=exc.name
    ) from exc

from memhub.adapters._gateway import GatewayLink
from memhub.sdk.agent.turns import SERVER_MAX_CONTENT_CHARS
from memhub.sdk.connection import Connection
from memhub.sdk.memory import AsyncMemoryClient

META = "langgraph"
# The L1 session the items are filed under (the gateway's L1 reads do not narrow by session; it only labels).
SESSION = "langgraph"
DEFAULT_ID_LABELS: Mapping[str, str] = {"team": "team_id", "agent": "agent_id", "user": "user_id"}
# The gateway's bounds: an L1 memory's metadata as compact JSON, and one page of a query or search.
MAX_METADATA_BYTES = 4096
PAGE = 100


class MemhubStore(BaseStore):
    """LangGraph's long-term store on a memhub gateway; `batch` for sync graphs, `abatch` for async ones.

    Gateway errors (`memhub.sdk.TDAMError`, `TransportError`) propagate: a store that dropped writes quietly
    would lose memories. Values must be JSON objects whose text is at most 8192 characters.
    """

    supports_ttl = False

    def __init__(
        self,
        connection: Connection | None = None,
        *,
        memory_type: str = "episodic",
        id_labels: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._link = GatewayLink(connection, name="memhub-langgraph", transport=transport)
        self.memory_type = memory_type
        self.id_labels = dict(DEFAULT_ID_LABELS if id_labels is None else id_labels)

    # -- BaseStore ----------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._link.run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._link.arun(self._batch(list(ops)))

    def close(self) -> None:
        """Close the connection to the gateway (the store is unusable afterwards)."""
        self._link.close()

    def __enter__(self) -> MemhubStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the operations, in order (a read after a put in one batch sees the put) ---------------------
    async def _batch(self, ops: Sequence[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                if op.value is None:
                    await self._delete(op.namespace, op.key)
                else:
                    await self._put(op.namespace, op.key, op.value)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = await self._stored(namespace, key)
        return _item(found[0]) if found else None

    async def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> None:
        content, encoding = _encode(value)
        client = await self._client(namespace)
        existing = await self._stored(namespace, key, client)
        created = existing[0]["metadata"][META]["created_at"] if existing else _now()
        meta = {META: {"namespace": list(namespace), "key": key, "created_at": created, **encoding}}
        size = len(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode())
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"namespace and key: must fit in {MAX_METADATA_BYTES} bytes of metadata (got {size})")
        # The new memory goes in before the old one goes: a failure in between leaves a duplicate that the next
        # put or delete removes (reads take the newest), never a lost item.
        await client.add_atomic(content, type=self.memory_type, metadata=meta, session_id=SESSION)
        if existing:
            await client.delete_atomic([row["id"] for row in existing], session_id=SESSION)

    async def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        client = await self._client(namespace)
        existing = await self._stored(namespace, key, client)
        if existing:
            await client.delete_atomic([row["id"] for row in existing], session_id=SESSION)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        client = await self._client(op.namespace_prefix)
        wanted = op.offset + op.limit
        matches: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()

        def keep(row: Mapping[str, Any], score: float | None) -> None:
            item = _search_item(row, score)
            if item.namespace[: len(op.namespace_prefix)] != tuple(op.namespace_prefix):
                return
            if op.filter and not all(_compare_values(item.value.get(k), v) for k, v in op.filter.items()):
                return
            if (item.namespace, item.key) not in seen:
                seen.add((item.namespace, item.key))
                matches.append(item)

        if op.query:
            found = await client.search_atomic(op.query, limit=PAGE, type=self.memory_type)
            for row in found.get("items") or []:
                if _ours(row):
                    keep(row, float(row.get("score") or 0.0))
        else:
            async with contextlib.aclosing(_scan(client, self.memory_type)) as rows:
                async for row in rows:
                    keep(row, None)
                    if len(matches) >= wanted:
                        break
        return matches[op.offset : wanted]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                prefix = tuple(condition.path)
        client = await self._client(prefix)
        namespaces: set[tuple[str, ...]] = set()
        async for row in _scan(client, self.memory_type):
            namespace = tuple(row["metadata"][META]["namespace"])
            if all(_does_match(condition, namespace) for condition in op.match_conditions or ()):
                namespaces.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # -- helpers --------------------------------------------------------------------------------------
    async def _client(self, namespace: Sequence[str]) -> AsyncMemoryClient:
        """The client for the scope a namespace (or a prefix) pins with its id label pairs."""
        client = await self._link.client()
        ids: dict[str, str] = {}
        labels = list(namespace)
        # Only a leading run of pairs pins ids: ("docs", "team", "drafts") is a path, not team "drafts".
        while len(labels) >= 2 and labels[0] in self.id_labels and labels[1] != "*":
            ids.setdefault(self.id_labels[labels[0]], labels[1])
            labels = labels[2:]
        return client.with_isolation(**ids) if ids else client

    async def _stored(
        self, namespace: tuple[str, ...], key: str, client: AsyncMemoryClient | None = None
    ) -> list[dict[str, Any]]:
        """The memories holding (namespace, key), newest first (more than one only after an interrupted put)."""
        client = client or await self._client(namespace)
        wanted = list(namespace)
        return [
            row
            async for row in _scan(client, self.memory_type)
            if row["metadata"][META]["namespace"] == wanted and row["metadata"][META]["key"] == key
        ]


def _encode(value: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The memory text for `value` and how to get the value back from it."""
    if not isinstance(value, Mapping):
        raise ValueError(f"value: must be a JSON object (got {type(value).__name__})")
    if len(value) == 1:
        ((field, text),) = value.items()
        if isinstance(field, str) and isinstance(text, str) and text:
            encoding: dict[str, Any] = {"text_field": field}
            content = text
            return _bounded(content), encoding
    try:
        content = json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"value: must be JSON-serialisable ({exc})") from exc
    return _bounded(content), {"json": True}


def _bounded(content: str) -> str:
    if len(content) > SERVER_MAX_CONTENT_CHARS:
        raise ValueError(f"value: its text must be at most {SERVER_MAX_CONTENT_CHARS} characters (got {len(content)})")
    return content


def _ours(row: Mapping[str, Any]) -> bool:
    """Whether an L1 memory is a LangGraph item (the pipeline's own memories are not)."""
    meta = row.get("metadata")
    return isinstance(meta, Mapping) and isinstance(meta.get(META), Mapping) and "namespace" in meta[META]


def _item(row: Mapping[str, Any]) -> Item:
    meta = row["metadata"][META]
    return Item(
        value=_value(row),
        key=meta["key"],
        namespace=tuple(meta["namespace"]),
        created_at=datetime.fromisoformat(meta["created_at"]),
        updated_at=datetime.fromisoformat(str(row.get("updated_at") or meta["created_at"])),
    )


def _search_item(row: Mapping[str, Any], score: float | None) -> SearchItem:
    item = _item(row)
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)


def _value(row: Mapping[str, Any]) -> dict[str, Any]:
    meta = row["metadata"][META]
    content = row["content"]
    return {meta["text_field"]: content} if "text_field" in meta else json.loads(content)


async def _scan(client: AsyncMemoryClient, memory_type: str) -> AsyncIterator[dict[str, Any]]:
    """Every LangGraph item of the client's scope, most recently updated first."""
    offset = 0
    while True:
        page = await client.query_atomic(type=memory_type, limit=PAGE, offset=offset)
        rows = page.get("items") or []
        for row in rows:
            if _ours(row):
                yield row
        offset += len(rows)
        if not rows or offset >= int(page.get("total") or 0):
            return


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
