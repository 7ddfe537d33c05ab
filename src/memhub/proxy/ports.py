"""The seams between the proxy's parts: the turn handler (`memhub.proxy.service`) calls these, and each is built
by its own module (identity, injection, capture, `mem:` commands) and wired in `memhub.runtime`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from memhub.proxy.model import (
    Block,
    ChatTurn,
    OffloadOutcome,
    OffloadTurn,
    ProxyIdentity,
    RecallOutcome,
    RequestKind,
    TurnOutput,
    WireProtocol,
)


class ProxyDenied(Exception):
    """The caller may not use the proxy (no or a bad user key, a team or agent it may not act as).

    Answered in the caller's protocol with `status` (401 or 403) before anything is forwarded.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class IdentityResolver(Protocol):
    """Who a request is for: the Bearer user key checked against this memhub's own key store (in process)."""

    async def resolve(
        self,
        headers: Mapping[str, str],
        *,
        space_id: str,
        agent_source: str,
        fallback_session: str | Callable[[], str],
    ) -> ProxyIdentity:
        """The turn's identity; raises ProxyDenied. `fallback_session` is the protocol's stable derivation (or a
        function computing it, called only when needed), used
        when no session header came."""
        ...


class Injector(Protocol):
    """The session's system-prompt blocks and where they go."""

    async def blocks(self, identity: ProxyIdentity, kind: RequestKind) -> list[Block]:
        """The turn's blocks from the session cache (computed on a miss, except for a fork, which reads only);
        [] for side queries and auxiliary requests. Never raises: a failing source is left out."""
        ...

    def splice(self, segments: Sequence[str], blocks: Sequence[Block], agent_source: str) -> list[str]:
        """The system prompt's text segments with the `system.*` blocks spliced in at their slots (or points),
        within the injection budget. Returns as many segments as given (one when given none)."""
        ...

    def flat(self, blocks: Sequence[Block]) -> str:
        """The `system.*` blocks as one text, in placement order, within the budget (clients whose prompt has
        no slots, e.g. the Responses protocol's `<tdai_injections>`)."""
        ...

    def forget_session(self, identity: ProxyIdentity) -> None:
        """Drop the session's cached blocks so the next turn recomputes them (`mem:sync`)."""
        ...


class TurnRecaller(Protocol):
    """Per-turn recall: what memory holds about the user's message, as a block for that message alone."""

    async def recall(self, identity: ProxyIdentity, query: str, recent: Sequence[ChatTurn]) -> RecallOutcome:
        """The block for `query` (the user's words this turn), given the conversation's last messages `recent`.
        Never raises and never takes longer than its deadline: a failure or a timeout is an outcome with no
        text (status `error` / `timeout`)."""
        ...


class TurnOffloader(Protocol):
    """Context offload: the request's tool pairs ingested, and its conversation compacted once it fills enough of
    the model's window."""

    async def offload(self, identity: ProxyIdentity, turn: OffloadTurn, switch: bool | None) -> OffloadOutcome:
        """What to send for this request; `switch` is the request's own on/off (None: the agent's or the server's
        default). Never raises and never takes longer than its deadline: a failure or a timeout is an outcome
        with the caller's messages (status `error` / `timeout`)."""
        ...

    def window(self, model: object, headers: Mapping[str, str]) -> int:
        """The context window, in tokens, of the model a request names."""
        ...

    def close(self) -> None:
        """Stop the offload threads (at shutdown)."""
        ...


class TurnCapture(Protocol):
    """Where a finished main turn goes: L0 and the skills conversation buffer, off the response path."""

    def submit(
        self,
        identity: ProxyIdentity,
        protocol: WireProtocol,
        user_text: str,
        output: TurnOutput,
        position: int | None = None,
    ) -> None:
        """Queue the turn; returns at once. Writes are retried and flushed on shutdown. `position` is the turn's
        place in the conversation (the number of messages the request carried): the same words said again later
        are a new turn, the same request sent again is not."""
        ...


class Commands(Protocol):
    """`mem:` commands typed as the user's message, answered by the proxy and never sent upstream."""

    async def run(self, identity: ProxyIdentity, user_text: str) -> str | None:
        """The reply text when `user_text` is a `mem:` command, else None."""
        ...
