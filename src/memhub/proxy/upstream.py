"""The upstream LLM providers: one base URL and key per protocol family, requests forwarded with the caller's
headers (minus hop-by-hop ones and every memhub credential), one retry while nothing has been received."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import httpx

from memhub.meta.keys import KEY_PREFIX
from memhub.proxy.protocols import Family

log = logging.getLogger("memhub.proxy")

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade"}
)  # fmt: skip
# Read by the proxy, or recomputed for the upstream: never copied through.
CONSUMED = frozenset(
    {"host", "content-length", "accept-encoding", "authorization", "x-api-key", "x-provider-api-key", "cookie",
     "x-team-id", "x-agent-id", "x-task-id", "x-user-id"}
)  # fmt: skip
CONSUMED_PREFIXES = ("x-tdai-", "x-memhub-")
# Recomputed by the proxy's own response (the body is re-chunked and decoded).
RESPONSE_DROPPED = HOP_BY_HOP | {"content-length", "content-encoding"}
PROVIDER_KEY_HEADER = "x-provider-api-key"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one protocol family is forwarded and the provider key used when the caller brings none."""

    base_url: str
    api_key: str = ""


MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_RESPONSE_SECONDS = 900.0


@dataclass(frozen=True, slots=True)
class UpstreamConfig:
    """The upstreams, their timeouts (seconds) and the caps on one response: its size and how long it may run
    from the moment the request is sent (a provider streaming without end must not hold a connection and memory
    forever)."""

    openai: Endpoint
    anthropic: Endpoint
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    retries: int = 1  # attempts after the first while nothing was received (refused, timed out)
    max_response_bytes: int = MAX_RESPONSE_BYTES
    max_response_seconds: float = MAX_RESPONSE_SECONDS

    def endpoint(self, family: Family) -> Endpoint:
        """The family's endpoint."""
        return self.anthropic if family is Family.ANTHROPIC else self.openai


class UpstreamUnavailable(Exception):
    """Nothing usable came from the upstream: it could not be reached (after the retry), or it did not start its
    answer in time. `status` is what the caller gets: 502, or 504 for a timeout."""

    def __init__(self, message: str, status: int = 502) -> None:
        super().__init__(message)
        self.status = status


# Failures after which the request cannot have been answered: no connection, or the connection closed before any
# byte of an answer (a pooled connection the provider had dropped). A read timeout is not among them: the
# provider may be working on (and billing for) the request, so sending it again could run it twice.
RETRIED = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)


def _is_memhub_key(value: str) -> bool:
    return KEY_PREFIX in value


class Upstream:
    """Forwards requests to the configured providers over one pooled HTTP client per event loop."""

    def __init__(self, config: UpstreamConfig, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _http(self) -> httpx.AsyncClient:
        # A pool belongs to the loop its connections were opened on; a server runs one loop, but an in-process
        # test client may run each request on its own, where the previous loop's pool cannot be used.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            timeout = httpx.Timeout(
                connect=self.config.connect_timeout,
                read=self.config.read_timeout,
                write=self.config.read_timeout,
                pool=self.config.connect_timeout,
            )
            self._client = httpx.AsyncClient(timeout=timeout, transport=self._transport, follow_redirects=False)
            self._loop = loop
        return self._client

    def provider_key(self, family: Family, headers: Mapping[str, str]) -> str:
        """The provider key to send: the caller's own (`x-provider-api-key`, or for Anthropic an `x-api-key`
        that is not a memhub user key), else the configured one. A memhub key is never the answer."""
        candidates = [headers.get(PROVIDER_KEY_HEADER, "")]
        if family is Family.ANTHROPIC:
            candidates.append(headers.get("x-api-key", ""))
        candidates.append(self.config.endpoint(family).api_key)
        for candidate in candidates:
            value = candidate.strip()
            if value and not _is_memhub_key(value):
                return value
        return ""

    def outbound_headers(self, family: Family, headers: Iterable[tuple[str, str]], key: str) -> list[tuple[str, str]]:
        """The caller's headers as the upstream gets them: hop-by-hop, memhub identity and credentials dropped,
        the provider key in the protocol's auth header, the body asked for without compression (the tap reads
        it as it passes)."""
        pairs = list(headers)
        named_by_connection = {
            token.strip().lower() for name, value in pairs if name.lower() == "connection" for token in value.split(",")
        }
        out: list[tuple[str, str]] = []
        for name, value in pairs:
            lower = name.lower()
            if lower in HOP_BY_HOP or lower in CONSUMED or lower in named_by_connection:
                continue
            if lower.startswith(CONSUMED_PREFIXES) or _is_memhub_key(value):
                continue
            out.append((lower, value))
        if key:
            out.append(("x-api-key", key) if family is Family.ANTHROPIC else ("authorization", f"Bearer {key}"))
        out.append(("accept-encoding", "identity"))
        return out

    async def send(
        self,
        family: Family,
        method: str,
        path: str,
        headers: Iterable[tuple[str, str]],
        content: bytes | None,
        query: str = "",
    ) -> httpx.Response:
        """The upstream's response with its headers read and its body not yet (read or stream it, then close it).

        A connection refused, reset or closed before the response started is tried once more, then
        `UpstreamUnavailable` (502); a response that does not start within the read timeout is not tried again
        (504). An HTTP error status is a response like any other.
        """
        endpoint = self.config.endpoint(family)
        url = endpoint.base_url.rstrip("/") + path + (f"?{query}" if query else "")
        http = self._http()
        request = http.build_request(method, url, headers=headers, content=content)
        failure: httpx.TransportError | None = None
        for attempt in range(1 + self.config.retries):
            try:
                return await http.send(request, stream=True)
            except httpx.TimeoutException as exc:
                if isinstance(exc, RETRIED):
                    failure = exc
                    log.warning("upstream %s %s failed (attempt %d): %r", method, url, attempt + 1, exc)
                    continue
                log.warning("upstream %s %s timed out; not sent again: %r", method, url, exc)
                raise UpstreamUnavailable(f"upstream {endpoint.base_url} timed out: {type(exc).__name__}", 504) from exc
            except httpx.TransportError as exc:
                failure = exc
                log.warning("upstream %s %s failed (attempt %d): %r", method, url, attempt + 1, exc)
        raise UpstreamUnavailable(f"upstream {endpoint.base_url} unreachable: {type(failure).__name__}")

    @staticmethod
    def response_headers(response: httpx.Response) -> dict[str, str]:
        """The upstream's response headers the client gets (content type, request ids, rate limits …)."""
        return {k: v for k, v in response.headers.items() if k.lower() not in RESPONSE_DROPPED}

    async def aclose(self) -> None:
        """Close the pooled connections of the current client."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
