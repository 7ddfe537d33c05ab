"""`MetadataClient` / `AsyncMetadataClient`: the management plane (`/v3/meta/*`, 54 calls) and knowledge CRUD
(`/v3/knowledge/*`, 5 calls).

The calls themselves, the requests they send, are `MetadataCalls` (memhub.sdk._metadata_calls); these clients send
them with httpx. No isolation context: the team, user or asset a call is about travels in its body. Calls that take a
request dict send it without its None values; calls that take ids send exactly those fields. Who the
caller is comes from `user_key` (`x-tdai-user-key`), which most management calls require.
"""

from __future__ import annotations

from collections.abc import Awaitable

import httpx

from memhub.sdk._errors import ParamError
from memhub.sdk._http import AsyncClient, AsyncHttp, Options, SyncClient, SyncHttp, coroutine_calls, options
from memhub.sdk._metadata_calls import MetadataCalls
from memhub.sdk._request import JsonObject


def _connect(
    endpoint: str, api_key: str, service_id: str | None, user_key: str | None, timeout: float, verify: bool
) -> Options:
    # The original checks these two first, with these messages; the URL and timeout come after.
    if not service_id:
        raise ParamError("service_id must be provided")
    if not api_key:
        raise ParamError("api_key must be provided")
    return options(endpoint, api_key, service_id, user_key=user_key, timeout=timeout, verify=verify)


class MetadataClient(SyncClient, MetadataCalls[JsonObject]):
    """The synchronous management-plane client."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        user_key: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = SyncHttp(_connect(endpoint, api_key, service_id, user_key, timeout, verify), transport)


@coroutine_calls(MetadataCalls)
class AsyncMetadataClient(AsyncClient, MetadataCalls[Awaitable[JsonObject]]):
    """The asynchronous management-plane client: `MetadataClient`'s methods as coroutines."""

    def __init__(
        self,
        endpoint: str = "",
        api_key: str = "",
        service_id: str | None = None,
        *,
        user_key: str | None = None,
        timeout: float = 30,
        verify: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = AsyncHttp(_connect(endpoint, api_key, service_id, user_key, timeout, verify), transport)
