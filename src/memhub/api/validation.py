"""Pydantic validation with envelope-style messages: `messages[3].content: must be …`."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memhub.api.schemas import IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE
from memhub.errors import BadRequest
from memhub.ids import NO_CONTROL_PATTERN, NO_CONTROL_RULE

M = TypeVar("M", bound=BaseModel)

# What a field's `pattern` means, in words: the message names the rule, not the regular expression.
PATTERN_RULES: dict[str, str] = {
    NO_CONTROL_PATTERN: NO_CONTROL_RULE,
    IDEMPOTENCY_KEY_PATTERN: IDEMPOTENCY_KEY_RULE,
}


def field_path(loc: tuple[int | str, ...]) -> str:
    """('messages', 3, 'content') → 'messages[3].content'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def _rule(err: Any) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    rules = {
        "missing": "is required",
        "string_type": "must be a string",
        "int_type": "must be an integer",
        "int_from_float": "must be an integer",
        "bool_type": "must be a boolean",
        "list_type": "must be an array",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
        "string_too_short": "must not be empty"
        if ctx.get("min_length") == 1
        else f"must be at least {ctx.get('min_length')} characters",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
        "too_short": f"must contain at least {ctx.get('min_length')} items",
        "too_long": f"must contain at most {ctx.get('max_length')} items",
        "greater_than_equal": f"must be >= {ctx.get('ge')}",
        "less_than_equal": f"must be <= {ctx.get('le')}",
        "literal_error": f"must be one of {ctx.get('expected')}",
        "extra_forbidden": "is not a known field",
        "string_pattern_mismatch": PATTERN_RULES.get(ctx.get("pattern", ""), f"must match {ctx.get('pattern')}"),
    }
    if kind in rules:
        return rules[kind]
    message = str(err.get("msg", "is invalid"))
    return message.removeprefix("Value error, ")


# A field path as a rule names it: `ids`, `time_start`, `tool_pairs[1].tool_call_id`.
_FIELD_PATH = re.compile(r"^[A-Za-z_]\w*(?:\[\d+\]|\.\w+)*$")


def _describe(err: Any) -> dict[str, str]:
    field, rule = field_path(err["loc"]), _rule(err)
    # Cross-field rules are raised on the whole model and name their field themselves.
    named, sep, rest = rule.partition(": ")
    if field == "body" and sep and _FIELD_PATH.match(named):
        return {"field": named, "rule": rest}
    return {"field": field, "rule": rule}


def parse_model(model: type[M], body: dict[str, Any]) -> M:
    """Validate a body against a model; the first broken rules become one 400 message."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = [_describe(e) for e in exc.errors()]
        message = "; ".join(f"{e['field']}: {e['rule']}" for e in errors[:5])
        raise BadRequest(message, data={"errors": errors[:20]}) from None
