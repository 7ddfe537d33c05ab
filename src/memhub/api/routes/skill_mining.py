"""`/v3/skill/extract`, `/v3/skill/conversation/add` and `/v3/skill/conversation/force-archive`: agent work in,
archives for skill mining out.

They authenticate as the data plane and take every id from the body, as the other skill routes; the caller must
be allowed to write skills as the body's (team, agent, user), the skills mining may write. A body that breaks a
rule answers code 40001 with HTTP 200, and nothing is buffered or archived. `conversation/add` takes an
idempotency key (body `idempotency_key` or the `Idempotency-Key` header, as `/v3/conversation/add`): the same key
again in the session buffers nothing and answers `replayed: true`.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from memhub.api.guarded import GuardedCall, GuardedRoute
from memhub.api.routes.conversation import IDEMPOTENCY_HEADER
from memhub.api.routes.skill import skill_route
from memhub.api.schemas import IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE
from memhub.api.skill_mining_schemas import SkillConversationAdd, SkillExtract, SkillForceArchive
from memhub.knowledge.skill.access import SkillAccess, SkillIds
from memhub.knowledge.skill.errors import SkillBadRequest
from memhub.knowledge.skill.mining.service import Archived, MiningService
from memhub.meta.caller import Caller
from memhub.model.skills import SessionKey

EMPTY_BUFFER = "No messages in buffer to archive"
_IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)


def _session(
    access: SkillAccess, caller: Caller, body: SkillConversationAdd | SkillExtract | SkillForceArchive, session: str
) -> SessionKey:
    """The buffer key, after checking the caller may act as the body's team, agent and user."""
    if body.space_id is not None and body.space_id != caller.service_id:
        raise SkillBadRequest("space_id", "must be the request's service id (x-tdai-service-id) when given")
    actor = access.actor(
        caller, SkillIds(team_id=body.team_id, agent_id=body.agent_id, user_id=body.user_id), write=True
    )
    return SessionKey(caller.service_id, body.team_id, body.agent_id, actor.ids.user_id or body.user_id, session)


def _archived(archived: Archived) -> dict[str, Any]:
    return {
        "task_id": archived.task_id,
        "archived_at_ms": archived.archived_at_ms,
        "archive_key": archived.archive_key,
    }


def routes(mining: MiningService, access: SkillAccess) -> list[GuardedRoute]:
    """The mining routes over one mining service."""

    def conversation_add(call: GuardedCall, body: SkillConversationAdd) -> Any:
        unpaired = body.unpaired()
        if unpaired is not None:
            raise SkillBadRequest(f"messages[{unpaired}].tool_call_id", "tool_call/tool_result must carry tool_call_id")
        idempotency_key = body.idempotency_key or call.request.headers.get(IDEMPOTENCY_HEADER) or None
        if idempotency_key is not None and not _IDEMPOTENCY_KEY.match(idempotency_key):
            raise SkillBadRequest("Idempotency-Key", IDEMPOTENCY_KEY_RULE)
        key = _session(access, call.caller, body, body.session_id)
        outcome = mining.add(key, [m.wire() for m in body.messages], body.task_id, idempotency_key)
        if outcome.replayed:
            return {"status": "ok", "replayed": True}
        if outcome.archived is None:
            return {"status": "ok"}
        return {"status": "archived", "archived": {**_archived(outcome.archived), "reason": outcome.archived.reason}}

    def force_archive(call: GuardedCall, body: SkillForceArchive) -> Any:
        key = _session(access, call.caller, body, body.session_id)
        archived = mining.force_archive(key, body.task_id, body.reason)
        if archived is None:
            return {"status": "empty", "message": EMPTY_BUFFER}
        return {"status": "archived", **_archived(archived)}

    def extract(call: GuardedCall, body: SkillExtract) -> Any:
        # A direct extraction has no buffer: without a session id each call gets its own, as the original's `sx-`.
        session = body.session_id or f"sx-{secrets.token_hex(4)}"
        key = _session(access, call.caller, body, session)
        iterations = body.options.max_iterations if body.options else None
        archived = mining.extract(key, [m.wire() for m in body.messages], body.task_id, body.reason, iterations)
        return {"ok": True, **_archived(archived)}

    route = skill_route

    return [
        route("extract", SkillExtract, extract, "Archive a slice of agent work for skill mining now"),
        route("conversation/add", SkillConversationAdd, conversation_add, "Buffer a turn of agent work for mining"),
        route(
            "conversation/force-archive",
            SkillForceArchive,
            force_archive,
            "Archive the session's buffered work for mining now",
        ),
    ]
