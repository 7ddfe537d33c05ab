"""Who a proxied turn is for: the caller's memhub user key checked against this process's own key store, the
path's space id as the tenant, team/agent/task from headers or the user's memberships, and the session.

The original verifies the key with an HTTP call to its gateway; here the proxy runs beside the gateway, so the key
is checked in process (in a worker thread: a database read) and the team and agent are authorized by the same rule
the data plane applies to a user key (`memhub.meta.access`): a turn never reads or writes memory the key could not
reach through `/v3`.

A key's check and its scope are remembered for `AUTH_CACHE_SECONDS` (an agent sends its turns and tool round trips
in quick succession, and the check is a worker-thread hop and a database read each time): a key revoked, an agent
archived or a membership removed takes effect on the proxy within that time. A key's expiry is known when it is
checked, so a remembered check never outlives it: the key stops working the moment it expires.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from anyio import to_thread

from memhub.errors import Forbidden
from memhub.ids import MAX_SERVICE_ID_CHARS, NO_CONTROL_RULE, has_control, valid_service_id
from memhub.meta.access import check_user_ids
from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.guards import ACTIVE
from memhub.meta.keys import KEY_PREFIX
from memhub.meta.services import MetaServices
from memhub.model.meta import MetaKind
from memhub.proxy.model import ProxyIdentity
from memhub.proxy.ports import ProxyDenied
from memhub.scope import Isolation
from memhub.store.meta import MetaReader

# The original's session headers, first present wins.
SESSION_HEADERS = (
    "x-conversation-id",
    "x-session-id",
    "x-claude-code-session-id",
    "x-deepseek-harness-session-id",
    "x-chat-id",
    "x-thread-id",
)
# Each id's headers: the short form the original's clients send, then the gateway's `x-tdai-*` form.
ID_HEADERS = {
    "team_id": ("x-team-id", "x-tdai-team-id"),
    "agent_id": ("x-agent-id", "x-tdai-agent-id"),
    "task_id": ("x-task-id", "x-tdai-task-id"),
}
USER_KEY_HEADER = "x-tdai-user-key"
MAX_ID_CHARS = 256  # as the data plane's ids
MISSING_USER_KEY = "unauthorized: missing_user_key (send the memhub user key as the Bearer token or x-api-key)"
INVALID_USER_KEY = "unauthorized: invalid_user_key"
AUTH_CACHE_SECONDS = 2.0
AUTH_CACHE_ENTRIES = 4096


def user_key_of(headers: Mapping[str, str]) -> str | None:
    """The memhub user key a request carries: `x-tdai-user-key`, else a Bearer token or an Anthropic `x-api-key`
    that is a user key (`sk-mem-…`); a caller's own provider key in those headers is not one."""
    explicit = headers.get(USER_KEY_HEADER, "").strip()
    if explicit:
        return explicit
    scheme, _, token = headers.get("authorization", "").partition(" ")
    candidates = [token.strip() if scheme.lower() == "bearer" else "", headers.get("x-api-key", "").strip()]
    return next((c for c in candidates if c.startswith(KEY_PREFIX)), None)


def _checked(name: str, value: str) -> str:
    if len(value) > MAX_ID_CHARS:
        raise ProxyDenied(400, f"{name}: must be at most {MAX_ID_CHARS} characters")
    if has_control(value):
        raise ProxyDenied(400, f"{name}: {NO_CONTROL_RULE}")
    return value


def session_of(headers: Mapping[str, str], fallback: str | Callable[[], str]) -> str:
    """The first session header present (trimmed, checked), else `fallback` (called only then)."""
    for name in SESSION_HEADERS:
        value = headers.get(name, "").strip()
        if value:
            return _checked(name, value)
    return fallback() if callable(fallback) else fallback


def _header_id(headers: Mapping[str, str], field: str) -> str | None:
    for name in ID_HEADERS[field]:
        value = headers.get(name, "").strip()
        if value:
            return _checked(name, value)
    return None


Scope = tuple[str | None, str | None, str | None]  # the team, agent and task a turn acts as


@dataclass(frozen=True, slots=True)
class _Wanted:
    """The ids the headers named (None: not named)."""

    team_id: str | None
    agent_id: str | None
    task_id: str | None


class KeyIdentityResolver:
    """The `IdentityResolver` of a proxy served by the gateway's own process."""

    def __init__(self, meta: MetaServices, clock: Callable[[], float] = time.monotonic) -> None:
        self.meta = meta
        self.clock = clock
        # (space, key digest, wanted ids) → (end of the memory window, caller, scope); successes only. The caller
        # carries its key's expiry, judged by the key store's clock on every hit.
        self._recent: OrderedDict[tuple[str, str, _Wanted], tuple[float, Caller, Scope]] = OrderedDict()

    async def resolve(
        self,
        headers: Mapping[str, str],
        *,
        space_id: str,
        agent_source: str,
        fallback_session: str | Callable[[], str],
    ) -> ProxyIdentity:
        """The turn's identity; ProxyDenied 401 for a missing or invalid key, 403 for an id the key may not act
        as, 400 for a malformed space id or header."""
        if not valid_service_id(space_id):
            raise ProxyDenied(400, f"space_id: must be 1..{MAX_SERVICE_ID_CHARS} printable characters")
        key = user_key_of(headers)
        if key is None:
            raise ProxyDenied(401, MISSING_USER_KEY)
        session_id = session_of(headers, fallback_session)
        wanted = _Wanted(*(_header_id(headers, f) for f in ("team_id", "agent_id", "task_id")))
        caller, (team_id, agent_id, task_id) = await self._authorized(space_id, key, wanted)
        assert caller.user_id is not None
        return ProxyIdentity(
            service_id=space_id,
            user_id=caller.user_id,
            key_id=caller.key_id,
            session_id=session_id,
            agent_source=agent_source,
            team_id=team_id,
            agent_id=agent_id,
            task_id=task_id,
            user_type=caller.user_type,
        )

    async def _authorized(self, space_id: str, key: str, wanted: _Wanted) -> tuple[Caller, Scope]:
        """The key's caller and scope: remembered for a moment, else checked in one worker-thread hop (on a busy
        machine the hop costs more than the database reads)."""
        cache_key = (space_id, hashlib.sha256(key.encode()).hexdigest(), wanted)
        now = self.clock()
        hit = self._recent.get(cache_key)
        if hit is not None and hit[0] > now and not hit[1].key_expired(self.meta.users.now_ms()):
            return hit[1], hit[2]
        caller, scope = await to_thread.run_sync(self._authorize, space_id, key, wanted)
        self._recent[cache_key] = (now + AUTH_CACHE_SECONDS, caller, scope)
        self._recent.move_to_end(cache_key)
        while len(self._recent) > AUTH_CACHE_ENTRIES:
            self._recent.popitem(last=False)
        return caller, scope

    def _authorize(self, space_id: str, key: str, wanted: _Wanted) -> tuple[Caller, Scope]:
        """The key's caller and the team, agent and task it acts as; ProxyDenied 401 for an unknown key."""
        caller = self.meta.users.authenticate(space_id, key)
        if caller is None:
            raise ProxyDenied(401, INVALID_USER_KEY)
        return caller, self._scope(caller, wanted)

    def _scope(self, caller: Caller, wanted: _Wanted) -> Scope:
        """The team, agent and task the turn acts as, each authorized for the key."""
        try:
            with self.meta.store.reading(caller.service_id) as r:
                team_id = wanted.team_id or _team_named_by(r, wanted) or _only_team(r, caller)
                if team_id is None:
                    if wanted.agent_id:
                        raise ProxyDenied(403, "agent_id: not an agent this user may use")
                    if wanted.task_id:
                        raise ProxyDenied(403, "task_id: not a task this user may use")
                    return None, None, None
                agent_id = wanted.agent_id or _only_agent(r, caller, team_id)
                if agent_id is None and not caller.is_system_admin:
                    # No agent to check: the team (and any task) alone, by the data plane's rule.
                    assert caller.user_id is not None
                    check_user_ids(r, caller.user_id, team_id, None, wanted.task_id)
            if agent_id is not None:
                isolation = Isolation(caller.service_id, team_id, caller.user_id or "", agent_id, wanted.task_id or "")
                self.meta.access.authorize(caller, isolation)
        except Forbidden as exc:
            raise ProxyDenied(403, exc.message) from exc
        return team_id, agent_id, wanted.task_id


def _team_named_by(r: MetaReader, wanted: _Wanted) -> str | None:
    """The team of the agent (else the task) a header named, so naming an agent alone is enough."""
    for kind, entity_id in ((MetaKind.AGENT, wanted.agent_id), (MetaKind.TASK, wanted.task_id)):
        row = r.get(kind, entity_id) if entity_id else None
        if row is not None:
            return str(row["team_id"])
    return None


def _only_team(r: MetaReader, caller: Caller) -> str | None:
    """The user's team when they are an active member of exactly one active team."""
    memberships = r.find(MetaKind.MEMBER, {"user_id": caller.user_id, "status": ACTIVE})
    teams = {m["team_id"] for m in memberships}
    active = [t for t in sorted(teams) if (row := r.get(MetaKind.TEAM, t)) is not None and row["status"] == ACTIVE]
    return active[0] if len(active) == 1 else None


def _only_agent(r: MetaReader, caller: Caller, team_id: str) -> str | None:
    """The team's only active agent the user may use, if there is exactly one."""
    assert caller.user_id is not None
    agents = r.find(MetaKind.AGENT, {"team_id": team_id, "status": ACTIVE})
    usable = [a["agent_id"] for a in agents if agent_visible(r, a, caller.user_id, system_admin=caller.is_system_admin)]
    return usable[0] if len(usable) == 1 else None
