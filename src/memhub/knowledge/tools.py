"""What an agent-facing tool of `/v3/tools/list` and `/v3/tools/call` is, its wire view and its param rules.

Each kind lists its own tools (`knowledge/<kind>/tools.py`); `memhub.knowledge.kinds` finds them by kind.
Unlike the reference, `tools/call` params are validated for every tool (the reference passed
code-graph params through unchecked), so a bad call is a 400 with the offending field instead of undefined behaviour
in the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from memhub.errors import BadRequest, Forbidden

ParamType = Literal["string", "integer", "boolean", "array"]
Language = Literal["en", "zh"]


class ToolParamError(BadRequest):
    """A `tools/call` param broke its tool's schema; `field` names the param and `rule` the broken rule."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"invalid params: {field}: {rule}")
        self.field = field
        self.rule = rule


class UnknownTool(Forbidden):
    """`tools/call` named a tool the resource's kind does not have (HTTP 403, as in the reference)."""

    def __init__(self, tool_name: str, kind: str, resource_id: str) -> None:
        super().__init__(
            f"unknown tool: '{tool_name}' for {kind} resource '{resource_id}'. "
            "Use tools/list to see the available tools."
        )
        self.tool_name = tool_name
        self.kind = kind
        self.resource_id = resource_id


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One tool param; `default=None` means no default, and `items` is the element type of an array."""

    type: ParamType
    required: bool = False
    description: str = ""
    default: Any = None
    enum: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    max_items: int | None = None
    min_items: int | None = None
    items: ParamType = "string"
    # search_sources takes `keywords` as an array or as one space-separated string.
    accepts_string: bool = False
    description_zh: str = ""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One agent-facing tool: its name, description and params."""

    name: str
    description: str
    params: dict[str, ParamSpec] = field(default_factory=dict)
    description_zh: str = ""


def param(type_: ParamType, en: str, zh: str, **kw: Any) -> ParamSpec:
    """Shorthand for a ParamSpec with English and Chinese descriptions."""
    return ParamSpec(type=type_, description=en, description_zh=zh, **kw)


def tool(name: str, en: str, zh: str, **params: ParamSpec) -> ToolSpec:
    """Shorthand for a ToolSpec with English and Chinese descriptions."""
    return ToolSpec(name=name, description=en, description_zh=zh, params=dict(params))


def _param_view(p: ParamSpec, language: Language) -> dict[str, Any]:
    """A param in the reference's wire shape `{type, required?, description?, default?, enum?}`."""
    out: dict[str, Any] = {"type": p.type}
    if p.required:
        out["required"] = True
    desc = p.description_zh if language == "zh" and p.description_zh else p.description
    if desc:
        out["description"] = desc
    if p.default is not None:
        out["default"] = p.default
    if p.enum is not None:
        out["enum"] = list(p.enum)
    return out


def tool_list_view(specs: list[ToolSpec] | tuple[ToolSpec, ...], language: Language = "en") -> list[dict[str, Any]]:
    """The `tools` array of a tools/list response: `[{name, description, params:{p:{…}}}]`."""
    views: list[dict[str, Any]] = []
    for s in specs:
        desc = s.description_zh if language == "zh" and s.description_zh else s.description
        views.append(
            {"name": s.name, "description": desc, "params": {n: _param_view(p, language) for n, p in s.params.items()}}
        )
    return views


def _type_ok(value: object, type_: ParamType) -> bool:
    """Whether a JSON value has the declared type; bool is not an integer here (JSON true is not 1)."""
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "boolean":
        return isinstance(value, bool)
    return isinstance(value, list)


def _check(name: str, p: ParamSpec, value: object) -> object:
    """One param value checked against its spec; returns the (normalised) value or raises ToolParamError."""
    if p.accepts_string and isinstance(value, str):
        value = value.split()  # "redis timeout" → ["redis", "timeout"]; CJK without spaces stays one keyword
    if not _type_ok(value, p.type):
        raise ToolParamError(name, f"expected {p.type}")
    if isinstance(value, str) and p.required and not value.strip():
        raise ToolParamError(name, "must not be empty")
    if p.enum is not None and value not in p.enum:
        raise ToolParamError(name, f"must be one of {', '.join(p.enum)}")
    if isinstance(value, int) and not isinstance(value, bool):
        if p.minimum is not None and value < p.minimum:
            raise ToolParamError(name, f"must be >= {p.minimum}")
        if p.maximum is not None and value > p.maximum:
            raise ToolParamError(name, f"must be <= {p.maximum}")
    if isinstance(value, list):
        # Counts first: a 10,000-item array is rejected without scanning it.
        if p.min_items is not None and len(value) < p.min_items:
            raise ToolParamError(name, f"needs at least {p.min_items} item(s)")
        if p.max_items is not None and len(value) > p.max_items:
            raise ToolParamError(name, f"at most {p.max_items} items")
        for i, item in enumerate(value):
            if not _type_ok(item, p.items):
                raise ToolParamError(f"{name}[{i}]", f"expected {p.items}")
            if isinstance(item, str) and not item.strip():
                raise ToolParamError(f"{name}[{i}]", "must not be empty")
    return value


def validate_params(spec: ToolSpec, params: object) -> dict[str, Any]:
    """`params` checked against the tool's schema, with defaults applied; raises ToolParamError (400).

    A JSON null counts as absent, because agents often send `"limit": null` for "use the default".
    """
    if not isinstance(params, Mapping):
        raise ToolParamError("params", "must be an object")
    for key in params:
        if key not in spec.params:
            raise ToolParamError(str(key), "unknown param")
    out: dict[str, Any] = {}
    # Catalogue order, not the caller's key order, so the engine and logs see a stable dict.
    for name, p in spec.params.items():
        value = params.get(name)
        if value is None:
            if p.required:
                raise ToolParamError(name, "required")
            if p.default is not None:
                out[name] = p.default
            continue
        out[name] = _check(name, p, value)
    return out


def tool_error(text: str, **extra: Any) -> dict[str, Any]:
    """A tool-level failure: still `code: 0`, with `data.isError` and a message an agent can act on."""
    return {"text": text, "isError": True, **extra}


__all__ = [
    "ParamSpec",
    "ToolParamError",
    "ToolSpec",
    "UnknownTool",
    "param",
    "tool",
    "tool_error",
    "tool_list_view",
    "validate_params",
]
