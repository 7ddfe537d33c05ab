"""The turn handler: who the caller is, what kind of request it is, a `mem:` command answered here, blocks
injected (the session's into the system prompt, the turn's recall into the user's message), the request
forwarded, the answer streamed back as it arrives and captured once complete.

memhub's own failures never fail the turn: an injection error forwards the caller's original bytes, a recall
that fails or runs past its deadline leaves the turn without recall, a capture error is logged, and what
happened is said in the `x-memhub-memory` response header. An upstream answer past the size or time cap is cut.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import anyio
import httpx

from memhub.proxy.classify import classify
from memhub.proxy.model import (
    OffloadOutcome,
    OffloadTurn,
    ProxyIdentity,
    RecallOutcome,
    RequestKind,
    TurnOutput,
    WireProtocol,
)
from memhub.proxy.offload.prefix import breakpoint_count
from memhub.proxy.ports import (
    Commands,
    IdentityResolver,
    Injector,
    ProxyDenied,
    TurnCapture,
    TurnOffloader,
    TurnRecaller,
)
from memhub.proxy.protocols import Body, Family, ProtocolAdapter, StreamTap, adapter_for, dumps
from memhub.proxy.upstream import Upstream, UpstreamConfig, UpstreamUnavailable
from memhub.proxy.user_text import clean_user_text
from memhub.shutdown import StopClock, finish_within

log = logging.getLogger("memhub.proxy")

MEMORY_HEADER = "x-memhub-memory"
# Per request, `on` or `off`: per-turn recall for this turn, whatever the server's default.
RECALL_HEADER = "x-memhub-recall"
# Per request, `on` or `off`: context offload for this request, whatever the agent's or the server's default.
OFFLOAD_HEADER = "x-memhub-offload"
SWITCH = {"on": True, "off": False}
RECENT_TURNS = 8  # the conversation's last messages recall is given, to skip what the model already has
DEFAULT_AGENT_SOURCE = "claude-code"  # what `/proxy/...` serves: the original's default client
SSE = "text/event-stream"
FLUSH_TIMEOUT_S = 60.0  # the most a shutdown without a stop budget waits for capture to write its turns
ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    502: "api_error",
    504: "api_error",
}
# Receives what the model answered once the response has ended.
OutputSink = Callable[[TurnOutput], None]


def agent_source_of(segment: str) -> str:
    """The client kind a path's first segment names (`proxy` is the default client)."""
    return DEFAULT_AGENT_SOURCE if segment == "proxy" else segment


@dataclass(slots=True)
class ProxyReply:
    """What the route sends: a whole body, or a stream forwarded chunk by chunk as the upstream sends it."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None


@dataclass(frozen=True, slots=True)
class Switches:
    """A request's per-turn choices: recall on or off; offload on, off, or as its agent and the server say (None)."""

    recall: bool
    offload: bool | None


@dataclass(frozen=True, slots=True)
class Forwarding:
    """The body that goes upstream and what the memory header will say about it."""

    payload: bytes
    memory: str


class ProxyService:
    """Serves proxied turns and passthrough calls. `injector`, `recaller`, `offloader`, `capture` and `commands` may
    be None (a proxy that only forwards; offload needs the injector, which offers its read tool); `recall_default`
    says whether a turn gets recall when its request does not say; `resume` runs at start (capture replays what a
    previous process left), `flush` at shutdown."""

    def __init__(
        self,
        identity: IdentityResolver,
        upstream: Upstream,
        *,
        injector: Injector | None = None,
        recaller: TurnRecaller | None = None,
        recall_default: bool = True,
        offloader: TurnOffloader | None = None,
        capture: TurnCapture | None = None,
        commands: Commands | None = None,
        flush: Callable[[float, float | None], bool] | None = None,
        resume: Callable[[], object] | None = None,
    ) -> None:
        self.identity = identity
        self.upstream = upstream
        self.injector = injector
        self.recaller = recaller
        self.recall_default = recall_default
        self.offloader = offloader
        self.capture = capture
        self.commands = commands
        # At shutdown: writes what capture still holds within the seconds given, then gives up and waits for the
        # store write in progress at most the second number of seconds (None: until it ends); True if all were
        # written (blocking).
        self.flush = flush
        self.resume = resume  # starts the capture's replay of what a previous process left (returns at once)

    async def turn(
        self,
        protocol: WireProtocol,
        segment: str,
        space_id: str,
        headers: Mapping[str, str],
        raw: bytes,
        query: str = "",
    ) -> ProxyReply:
        """One model call in `protocol`: answered here (a `mem:` command, an error) or forwarded, with the caller's
        query string (Claude Code sends `?beta=true`)."""
        adapter = adapter_for(protocol)
        agent_source = agent_source_of(segment)
        body = _json_object(raw)
        # Derived only when no session header came: it hashes the conversation's opening.
        fallback = functools.partial(adapter.fallback_session, body or {})
        try:
            identity = await self.identity.resolve(
                headers, space_id=space_id, agent_source=agent_source, fallback_session=fallback
            )
        except ProxyDenied as exc:
            return _error(adapter, exc.status, exc.message, "denied")
        if body is None:
            return _error(adapter, 400, "body: must be a JSON object", "passthrough; reason=bad-body")
        switch = headers.get(RECALL_HEADER)
        recall_on = self.recall_default if switch is None else SWITCH.get(switch.strip().lower())
        if recall_on is None:
            return _error(adapter, 400, f"{RECALL_HEADER}: must be on or off", "passthrough; reason=bad-header")
        asked = headers.get(OFFLOAD_HEADER)
        offload_on = None if asked is None else SWITCH.get(asked.strip().lower())
        if asked is not None and offload_on is None:
            return _error(adapter, 400, f"{OFFLOAD_HEADER}: must be on or off", "passthrough; reason=bad-header")
        kind = classify(protocol, agent_source, body, headers)
        user_text = adapter.last_user_text(body)
        if kind is RequestKind.MAIN and user_text is not None and self.commands is not None:
            answer = await self._command(identity, user_text)
            if answer is not None:
                return _synthetic(adapter, body, answer)
        switches = Switches(recall_on, offload_on)
        forwarding = await self._inject(adapter, identity, kind, headers, body, raw, user_text, switches)
        capture = self.capture if kind is RequestKind.MAIN and identity.has_memory_scope else None
        return await self._forward(
            adapter.family,
            "POST",
            adapter.upstream_path,
            headers,
            forwarding.payload,
            memory=forwarding.memory,
            adapter=adapter,
            on_output=(
                lambda output: self._submit(capture, identity, protocol, user_text or "", output, _position(body))
            )
            if capture is not None
            else None,
            query=query,
        )

    async def passthrough(
        self,
        family: Family,
        method: str,
        path: str,
        segment: str,
        space_id: str,
        headers: Mapping[str, str],
        raw: bytes,
        query: str = "",
    ) -> ProxyReply:
        """An auxiliary call (models, embeddings, token counting): authenticated, forwarded untouched."""
        adapter = adapter_for(WireProtocol.ANTHROPIC if family is Family.ANTHROPIC else WireProtocol.OPENAI_CHAT)
        try:
            await self.identity.resolve(
                headers, space_id=space_id, agent_source=agent_source_of(segment), fallback_session="auxiliary"
            )
        except ProxyDenied as exc:
            return _error(adapter, exc.status, exc.message, "denied")
        return await self._forward(
            family,
            method,
            path,
            headers,
            raw or None,
            memory="passthrough; reason=auxiliary",
            adapter=adapter,
            query=query,
        )

    def start(self) -> None:
        """At start: capture replays the turns a previous process left in its spool (in the background)."""
        if self.resume is not None:
            self.resume()

    async def aclose(self, clock: StopClock | None = None) -> list[str]:
        """Close the upstream connections, then flush the turns still queued for capture (before the store
        closes); what still runs when it returns (left to the process's exit).

        Without a stop clock both are waited for. With one, neither waits past its budget: a running offload is
        left running, and capture gives up on the turns it has not written by then (they stay in its spool for
        the next start) without waiting for the store write in progress.
        """
        await self.upstream.aclose()
        running: list[str] = []
        offloader = self.offloader
        if offloader is not None and not await anyio.to_thread.run_sync(
            finish_within, clock, "offload", offloader.close
        ):
            running.append("a proxy offload")
        if self.flush is not None:
            flush_s, last_write_s = (FLUSH_TIMEOUT_S, None) if clock is None else (clock.remaining(), 0.0)
            if not await anyio.to_thread.run_sync(self.flush, flush_s, last_write_s) and clock is not None:
                running.append("the proxy's capture")
        return running

    async def _command(self, identity: ProxyIdentity, user_text: str) -> str | None:
        try:
            return await self.commands.run(identity, user_text.strip()) if self.commands else None
        except Exception:
            log.exception("mem: command failed for session %s; forwarding the turn", identity.session_id)
            return None

    async def _inject(
        self,
        adapter: ProtocolAdapter,
        identity: ProxyIdentity,
        kind: RequestKind,
        headers: Mapping[str, str],
        body: Body,
        raw: bytes,
        user_text: str | None,
        switches: Switches,
    ) -> Forwarding:
        if kind in (RequestKind.SIDE_QUERY, RequestKind.AUXILIARY):
            return Forwarding(raw, f"passthrough; reason={kind.value}")
        if not identity.has_memory_scope:
            return Forwarding(raw, "passthrough; reason=no-scope")
        if self.injector is None:
            return Forwarding(raw, "passthrough; reason=no-injector")
        try:
            # The session's blocks (computed on its first turn), the turn's recall and the context's offload run
            # at once; each reads the caller's own request.
            blocks, recalled, offloaded = await asyncio.gather(
                self.injector.blocks(identity, kind),
                self._recall(adapter, identity, kind, body, user_text, switches.recall),
                self._offload(adapter, identity, kind, headers, body, raw, user_text, switches.offload),
            )
            said = f"; recall={recalled.status}" if recalled is not None else ""
            # Offload is off unless switched on: a request it is off for says nothing of it.
            said += f"; offload={offloaded.status}" if offloaded is not None and offloaded.on else ""
            recall_text = recalled.text if recalled is not None else ""
            if offloaded is not None and offloaded.block is not None:
                blocks = [*blocks, offloaded.block]
            sent = body
            if offloaded is not None and offloaded.messages is not None:
                sent = adapter.with_conversation(body, offloaded.messages)
            if not blocks and not recall_text and sent is body:
                return Forwarding(raw, "passthrough; reason=no-blocks" + said)
            injected = dumps(adapter.inject(sent, blocks, self.injector, identity.agent_source, recall_text))
        except Exception:
            # Whatever went wrong, the caller's own request still goes out exactly as it came.
            log.exception("injection failed for session %s; forwarding the original body", identity.session_id)
            return Forwarding(raw, "degraded; reason=injection-error")
        done = "injected" if kind is RequestKind.MAIN else f"injected; kind={kind.value}"
        return Forwarding(injected, done + said)

    async def _offload(
        self,
        adapter: ProtocolAdapter,
        identity: ProxyIdentity,
        kind: RequestKind,
        headers: Mapping[str, str],
        body: Body,
        raw: bytes,
        user_text: str | None,
        switch: bool | None,
    ) -> OffloadOutcome | None:
        """Context offload for a main request of the conversation (a user's turn or a tool result continuing it);
        None for any other request and when this proxy has no offload."""
        messages = adapter.conversation(body)
        if kind is not RequestKind.MAIN or self.offloader is None or messages is None:
            return None
        typed = clean_user_text(user_text) if user_text is not None else None
        prompt = typed.text if typed is not None and not typed.skip and typed.text else None
        turn = OffloadTurn(
            messages=messages,
            fixed=adapter.fixed_parts(body),
            window=self.offloader.window(body.get("model"), headers),
            size=len(raw),
            breakpoints=breakpoint_count(body),
            prompt=prompt,
            recent=tuple(adapter.recent_turns(body, RECENT_TURNS)) if prompt is not None else (),
        )
        return await self.offloader.offload(identity, turn, switch)

    async def _recall(
        self,
        adapter: ProtocolAdapter,
        identity: ProxyIdentity,
        kind: RequestKind,
        body: Body,
        user_text: str | None,
        recall_on: bool,
    ) -> RecallOutcome | None:
        """The turn's recall when its last message is the user's words; None for a turn that is not (a tool result
        continuing the turn, a fork, a client's own prompt) and when this proxy has no recall."""
        if kind is not RequestKind.MAIN or user_text is None or self.recaller is None:
            return None
        typed = clean_user_text(user_text)  # what capture stores: the words, not the client's wrappers
        if typed.skip or not typed.text:
            return None
        if not recall_on:
            return RecallOutcome("", "off")
        return await self.recaller.recall(identity, typed.text, adapter.recent_turns(body, RECENT_TURNS))

    def _submit(
        self,
        capture: TurnCapture,
        identity: ProxyIdentity,
        protocol: WireProtocol,
        user_text: str,
        output: TurnOutput,
        position: int | None,
    ) -> None:
        if not output.complete:
            return
        try:
            capture.submit(identity, protocol, user_text, output, position)
        except Exception:
            log.exception("capture of a turn of session %s failed", identity.session_id)

    async def _forward(
        self,
        family: Family,
        method: str,
        path: str,
        headers: Mapping[str, str],
        payload: bytes | None,
        *,
        memory: str,
        adapter: ProtocolAdapter,
        on_output: OutputSink | None = None,
        query: str = "",
    ) -> ProxyReply:
        key = self.upstream.provider_key(family, headers)
        outbound = self.upstream.outbound_headers(family, _pairs(headers), key)
        sent = time.monotonic()
        try:
            response = await self.upstream.send(family, method, path, outbound, payload, query)
        except UpstreamUnavailable as exc:
            return _error(adapter, exc.status, str(exc), memory)
        reply_headers = {**self.upstream.response_headers(response), MEMORY_HEADER: memory}
        streamed = response.headers.get("content-type", "").startswith(SSE)
        chunks = _capped(response, self.upstream.config, sent)
        if response.status_code < 400 and streamed:
            tap = adapter.tap() if on_output is not None else None
            return ProxyReply(response.status_code, reply_headers, stream=_relay(response, chunks, tap, on_output))
        try:
            content = b"".join([chunk async for chunk in chunks])
        except ResponseCut as exc:
            log.warning("upstream %s answer cut: %s; the caller gets a 502 and the turn is not captured", path, exc)
            return _error(adapter, 502, f"upstream response cut: {exc}", memory)
        except httpx.HTTPError as exc:
            return _error(adapter, 502, f"upstream response cut: {type(exc).__name__}", memory)
        finally:
            await response.aclose()
        if on_output is not None and response.status_code < 300:
            try:
                on_output(adapter.parse(content))
            except Exception:
                log.warning("upstream answer not parsed; turn not captured", exc_info=True)
        return ProxyReply(response.status_code, reply_headers, body=content)


class ResponseCut(Exception):
    """The upstream's answer went past the size or the time cap (`UpstreamConfig.max_response_*`)."""


async def _capped(response: httpx.Response, config: UpstreamConfig, sent: float) -> AsyncGenerator[bytes, None]:
    """The response body's chunks as they arrive, until it ends or passes a cap: more than `max_response_bytes`
    in all (the chunk that passes it is not given), or still running `max_response_seconds` after the request was
    sent (`sent`, monotonic), when the wait for the next chunk is cut short. Then ResponseCut."""
    chunks = response.aiter_bytes()
    size = 0
    deadline = sent + config.max_response_seconds
    while True:
        with anyio.move_on_after(deadline - time.monotonic()) as waited:
            chunk = await anext(chunks, None)
        if waited.cancelled_caught:
            raise ResponseCut(f"still running after {config.max_response_seconds:g} s")
        if chunk is None:
            return
        size += len(chunk)
        if size > config.max_response_bytes:
            raise ResponseCut(f"more than {config.max_response_bytes} bytes")
        yield chunk


async def _relay(
    response: httpx.Response,
    chunks: AsyncGenerator[bytes, None],
    tap: StreamTap | None,
    on_output: OutputSink | None,
) -> AsyncIterator[bytes]:
    """The upstream's chunks as they arrive; the tap reads each one before it goes to the client. When the client
    hangs up, the consumer is cancelled here and the upstream connection is closed; when the upstream cuts the
    stream, or the stream passes a cap, the error goes on so the client's connection is cut too (it must not see
    a truncated stream end cleanly). Either way the tap's reading goes to `on_output`, which keeps only an answer
    that ended normally — also when the client closed its connection the moment the last event reached it; a
    stream cut at a cap is never kept."""
    try:
        async for chunk in chunks:
            if tap is not None:
                try:
                    tap.feed(chunk)
                except Exception:
                    log.warning("stream tap failed; the turn will not be captured", exc_info=True)
                    tap = None
            yield chunk
    except ResponseCut as exc:
        log.warning("upstream stream cut: %s; the client's connection is cut and the turn not captured", exc)
        tap = None
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await chunks.aclose()
            await response.aclose()
        if tap is not None and on_output is not None:
            try:
                on_output(tap.finish())
            except Exception:
                log.warning("stream tap failed at the end; the turn will not be captured", exc_info=True)


def _json_object(raw: bytes) -> Body | None:
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _position(body: Body) -> int | None:
    """The turn's place in its conversation: how many messages (or Responses input items) the request carried."""
    for name in ("messages", "input"):
        items = body.get(name)
        if isinstance(items, list):
            return len(items)
    return None


def _pairs(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    items = getattr(headers, "multi_items", None)
    return list(items()) if callable(items) else list(headers.items())


def _error(adapter: ProtocolAdapter, status: int, message: str, memory: str) -> ProxyReply:
    body = adapter.error(ERROR_KINDS.get(status, "api_error"), message)
    return ProxyReply(status, {"content-type": "application/json", MEMORY_HEADER: memory}, body=dumps(body))


def _synthetic(adapter: ProtocolAdapter, body: Body, text: str) -> ProxyReply:
    headers = {MEMORY_HEADER: "command"}
    if adapter.is_stream(body):
        events = adapter.reply_stream(body, text)

        async def stream() -> AsyncIterator[bytes]:
            for event in events:
                yield event

        return ProxyReply(200, {**headers, "content-type": SSE, "cache-control": "no-cache"}, stream=stream())
    return ProxyReply(200, {**headers, "content-type": "application/json"}, body=dumps(adapter.reply(body, text)))
