"""Where a client-side integration reaches memhub and as whom: one set of settings for `memhub mcp`, `memhub hooks`
and the framework adapters, from flags first, then the environment.

| setting | flag | environment |
|---|---|---|
| gateway URL | `--url` | `MEMHUB_URL` (default `http://127.0.0.1:8420`) |
| key (the gateway key or a user key) | `--key` | `MEMHUB_API_KEY` |
| user key, when `--key` is the gateway key | `--user-key` | `MEMHUB_USER_KEY` |
| tenant | `--service-id` | `MEMHUB_SERVICE_ID` |
| team, agent, user | `--team-id`, `--agent-id`, `--user-id` | `MEMHUB_TEAM_ID`, `MEMHUB_AGENT_ID`, `MEMHUB_USER_ID` |

With a user key, the ids that are not given are read from the gateway (`resolve`): the key's user, the user's
only team and that team's only active agent. With the gateway key, all three must be given. Knowledge tools are
checked per user, so they need a user key (`--key` or `--user-key`).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from memhub.sdk._errors import ParamError, TDAMError
from memhub.sdk._request import JsonObject, Request

# The clients, and httpx under them, are imported by the methods that make one (the management calls by
# `resolution`, which most connections never need): a Claude Code hook reads its connection from here and sends with
# the standard library (memhub.hooks.wire), a new process per event that should import neither.
if TYPE_CHECKING:
    import httpx

    from memhub.sdk.knowledge import AsyncKnowledgeClient
    from memhub.sdk.memory import AsyncMemoryClient
    from memhub.sdk.skills import AsyncSkillClient

DEFAULT_URL = "http://127.0.0.1:8420"
# A memhub user key starts with this; anything else given as the key is taken for the gateway key.
USER_KEY_PREFIX = "sk-mem-"
ENVIRONMENT = {
    "url": "MEMHUB_URL",
    "key": "MEMHUB_API_KEY",
    "user_key": "MEMHUB_USER_KEY",
    "service_id": "MEMHUB_SERVICE_ID",
    "team_id": "MEMHUB_TEAM_ID",
    "agent_id": "MEMHUB_AGENT_ID",
    "user_id": "MEMHUB_USER_ID",
}
FLAGS = {name: "--" + name.replace("_", "-") for name in ENVIRONMENT}
# How an HTTP request carries each setting but the URL (the gateway's own headers; the key as the Bearer token).
HEADERS = {
    "key": "authorization",
    "user_key": "x-tdai-user-key",
    "service_id": "x-tdai-service-id",
    "team_id": "x-tdai-team-id",
    "agent_id": "x-tdai-agent-id",
    "user_id": "x-tdai-user-id",
}


def flags_text(missing: list[str]) -> str:
    """Missing flags with their variables: `--agent-id (or MEMHUB_AGENT_ID), --user-id (or MEMHUB_USER_ID)`."""
    return ", ".join(f"{flag} (or {ENVIRONMENT[flag[2:].replace('-', '_')]})" for flag in missing)


@dataclass(frozen=True, slots=True)
class Connection:
    """How to reach the gateway and the isolation ids to act as; `None` means not given."""

    url: str = DEFAULT_URL
    key: str | None = None
    service_id: str | None = None
    team_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    user_key: str | None = None
    timeout: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **given: Any) -> Connection:
        """The settings from `given` (flags; None = not given), else the environment, else the defaults."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, variable in ENVIRONMENT.items():
            value = given.get(name)
            if value is None:
                value = env.get(variable)
            if isinstance(value, str):
                value = value.strip() or None
            if value is not None:
                values[name] = value
        if given.get("timeout") is not None:
            values["timeout"] = float(given["timeout"])
        return cls(**values)

    @property
    def personal_key(self) -> str | None:
        """The user key this connection acts with, if any (`--user-key`, or `--key` when it is one)."""
        if self.user_key:
            return self.user_key
        return self.key if self.key and self.key.startswith(USER_KEY_PREFIX) else None

    def missing(self) -> list[str]:
        """The flags still needed before a call can be made (after `resolve`)."""
        wanted = ["key", "service_id", "team_id", "agent_id", "user_id"]
        return [FLAGS[name] for name in wanted if not getattr(self, name)]

    def require(self) -> None:
        """ParamError naming every missing flag and its environment variable."""
        missing = self.missing()
        if missing:
            raise ParamError(f"memhub connection incomplete: give {flags_text(missing)}")

    def environment(self) -> dict[str, str]:
        """These settings as the environment variables `from_env` reads (for a host's MCP or hook config)."""
        out = {ENVIRONMENT[f.name]: str(getattr(self, f.name)) for f in fields(self) if f.name in ENVIRONMENT}
        return {k: v for k, v in out.items() if v not in ("None", "")}

    def memory_client(
        self, *, session_id: str | None = None, transport: httpx.AsyncBaseTransport | None = None
    ) -> AsyncMemoryClient:
        """A data-plane client bound to the team, agent and user (call `require` first)."""
        from memhub.sdk.memory import AsyncMemoryClient

        self.require()
        assert self.key and self.team_id and self.agent_id and self.user_id
        return AsyncMemoryClient(
            self.url,
            self.key,
            self.service_id,
            team_id=self.team_id,
            agent_id=self.agent_id,
            user_id=self.user_id,
            session_id=session_id,
            user_key=self.user_key,
            timeout=self.timeout,
            transport=transport,
        )

    def skill_client(self, *, transport: httpx.AsyncBaseTransport | None = None) -> AsyncSkillClient:
        """A skills client whose calls default to the team, agent and user (call `require` first)."""
        from memhub.sdk.skills import AsyncSkillClient

        self.require()
        return AsyncSkillClient(
            self.url,
            self.key or "",
            self.service_id,
            team_id=self.team_id,
            agent_id=self.agent_id,
            user_id=self.user_id,
            user_key=self.user_key,
            timeout=self.timeout,
            transport=transport,
        )

    def knowledge_client(self, *, transport: httpx.AsyncBaseTransport | None = None) -> AsyncKnowledgeClient | None:
        """A knowledge-tools client, or None without a user key (knowledge access is checked per user)."""
        from memhub.sdk.knowledge import AsyncKnowledgeClient

        personal = self.personal_key
        if personal is None or not self.key:
            return None
        return AsyncKnowledgeClient(
            self.url,
            self.key,
            self.service_id,
            user_key=personal,
            team_id=self.team_id,
            agent_id=self.agent_id,
            user_id=self.user_id,
            timeout=self.timeout,
            transport=transport,
        )

    async def resolve(self, *, transport: httpx.AsyncBaseTransport | None = None) -> Connection:
        """These settings with the ids a user key implies filled in: its user, the user's only team, that team's
        only active agent. Ids already given are kept; an id that cannot be inferred stays None (see `require`).
        Raises TDAMError when the gateway refuses the key, TransportError when it cannot be reached.
        """
        steps = self.resolution()
        try:
            request = next(steps)
        except StopIteration as done:
            return done.value  # nothing to ask
        from memhub.sdk.metadata import AsyncMetadataClient

        personal = self.personal_key
        meta = AsyncMetadataClient(
            self.url, self.key or "", self.service_id, user_key=personal, timeout=self.timeout, transport=transport
        )
        try:
            while True:
                answer = await meta._send(request)
                try:
                    request = steps.send(answer)
                except StopIteration as done:
                    return done.value
        finally:
            await meta.close()

    def resolution(self) -> Generator[Request, JsonObject, Connection]:
        """`resolve` as the requests it makes: each request yielded is to be sent with this connection's key and
        tenant (and its user key), and its answer's data sent back in; what it returns is the resolved connection.
        The async `resolve` sends them with the SDK; a Claude Code hook sends them with the standard library.
        """
        personal = self.personal_key
        if personal is None or not self.key or not self.service_id:
            return self
        if self.team_id and self.agent_id and self.user_id:
            return self
        from memhub.sdk._metadata_calls import MetadataRequests

        meta = MetadataRequests()
        found: dict[str, str] = {}
        if not self.user_id:
            verified = yield meta.verify_auth(personal)
            user = (verified or {}).get("user") or {}
            if not (verified or {}).get("valid") or not user.get("user_id"):
                raise TDAMError(401, "unauthorized: invalid_user_key")
            found["user_id"] = str(user["user_id"])
        team_id = self.team_id
        if not team_id:
            teams = _items((yield meta.list_teams({"user_key": personal})))
            if len(teams) == 1 and teams[0].get("team_id"):
                team_id = found["team_id"] = str(teams[0]["team_id"])
        if team_id and not self.agent_id:
            agents = _items((yield meta.list_agents({"team_id": team_id, "status": "active"})))
            if len(agents) == 1 and agents[0].get("agent_id"):
                found["agent_id"] = str(agents[0]["agent_id"])
        return replace(self, **found)


def _items(answer: Any) -> list[Mapping[str, Any]]:
    """A management-plane page's rows (`{items, total, limit, offset}`)."""
    if not isinstance(answer, Mapping):
        return []
    rows = answer.get("items") or []
    return [row for row in rows if isinstance(row, Mapping)]
