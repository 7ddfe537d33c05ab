"""Isolation ids: body first, then `x-tdai-*-id` headers, then the default bucket, as in the original."""

from __future__ import annotations

from starlette.requests import Request

from memhub.api.schemas import MAX_ID_CHARS, Body
from memhub.errors import FieldError, Unprocessable
from memhub.ids import NO_CONTROL_RULE, has_control
from memhub.scope import DEFAULT_ID, Isolation

STRICT_FIELDS = ("team_id", "agent_id", "user_id")


def _pick(body: Body, request: Request, name: str) -> str | None:
    value = getattr(body, name)
    if isinstance(value, str) and value.strip():
        return value.strip()
    header_name = "x-tdai-" + name.replace("_", "-")
    header = request.headers.get(header_name, "").strip()
    if len(header) > MAX_ID_CHARS:
        raise FieldError(header_name, f"must be at most {MAX_ID_CHARS} characters")
    if has_control(header):
        raise FieldError(header_name, NO_CONTROL_RULE)
    return header or None


def resolve_isolation(
    service_id: str, body: Body, request: Request, *, strict: bool, default_user: str | None = None
) -> Isolation:
    """The ids a request acts under; in strict mode team, agent and user must all be given.

    A request authenticated by a user key acts as that user when it names none.
    """
    picked = {name: _pick(body, request, name) for name in (*STRICT_FIELDS, "session_id", "task_id")}
    picked["user_id"] = picked["user_id"] or default_user
    if strict:
        missing = [name for name in STRICT_FIELDS if not picked[name]]
        if missing:
            raise Unprocessable(
                f"/v3 requires strict isolation: missing {', '.join(missing)}", data={"missing": missing}
            )
    return Isolation(
        service_id=service_id,
        team_id=picked["team_id"] or DEFAULT_ID,
        user_id=picked["user_id"] or DEFAULT_ID,
        agent_id=picked["agent_id"] or DEFAULT_ID,
        task_id=picked["task_id"] or "",
        session_id=picked["session_id"],
        profile_team_id=picked["team_id"] or picked["user_id"] or DEFAULT_ID,
    )
