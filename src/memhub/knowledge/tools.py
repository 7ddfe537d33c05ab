"""The agent-facing tool catalogue of `/v3/tools/list` and `/v3/tools/call`.

Wiki resources expose the reference's 7 tools plus memhub's index tools (`list_themes`, `get_index`,
`docs_for_paths`, `search_sources`); code-graph resources expose the reference's 9 tools plus memhub's
structural ones (`definition`, `call_hierarchy`, `file_deps`, `refactor_scope`, `path`, `class_hierarchy`).
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
ResourceKind = Literal["wiki", "code-graph"]
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


def _p(type_: ParamType, en: str, zh: str, **kw: Any) -> ParamSpec:
    """Shorthand for a ParamSpec with English and Chinese descriptions."""
    return ParamSpec(type=type_, description=en, description_zh=zh, **kw)


def _t(name: str, en: str, zh: str, **params: ParamSpec) -> ToolSpec:
    """Shorthand for a ToolSpec with English and Chinese descriptions."""
    return ToolSpec(name=name, description=en, description_zh=zh, params=dict(params))


_GET_INFO_WIKI = _t(
    "get_info",
    "Metadata of this wiki: name, summary, status, version, page and source counts.",
    "本 wiki 的元数据：名称、概述、状态、版本、页面数和源文件数。",
)

WIKI_TOOLS: tuple[ToolSpec, ...] = (
    _GET_INFO_WIKI,
    _t(
        "search",
        "Full-text (BM25) search over wiki pages. Returns path, title, snippet, score and related pages; "
        "read the hits with read_page.",
        "对 wiki 页面做全文（BM25）检索，返回路径、标题、摘要片段、得分和相关页面；命中后用 read_page 读取。",
        query=_p("string", "Search words or a question.", "检索词或问题。", required=True),
        limit=_p(
            "integer",
            "Maximum number of results (1–100).",
            "最多返回条数（1–100）。",
            default=20,
            minimum=1,
            maximum=100,
        ),
    ),
    _t(
        "list_pages",
        "All pages (id, title, type, path). Prefer search; use this only for a small wiki.",
        "列出全部页面（id、标题、类型、路径）。优先用 search，仅在 wiki 很小时使用。",
    ),
    _t(
        "read_page",
        "Read pages by id (e.g. concepts/redis) or wiki/… path; `.md` is optional. Missing pages come back as "
        "not_found.",
        "按页面 id（如 concepts/redis）或 wiki/… 路径读取页面，`.md` 可省略；不存在的页面返回 not_found。",
        refs=_p(
            "array",
            "Page ids or paths (1–20).",
            "页面 id 或路径（1–20 个）。",
            required=True,
            min_items=1,
            max_items=20,
        ),
    ),
    _t(
        "get_graph",
        "The page link graph: nodes (pages) and edges (links).",
        "页面链接图：节点（页面）和边（链接）。",
    ),
    _t(
        "list_raw",
        "Uploaded source files with size and ingest status.",
        "已上传的源文件列表，含大小和摄取状态。",
    ),
    _t(
        "read_raw",
        "Read the extracted text of source files by filename. Missing files come back as not_found.",
        "按文件名读取源文件的提取文本；不存在的文件返回 not_found。",
        filenames=_p(
            "array", "Source file names (1–50).", "源文件名（1–50 个）。", required=True, min_items=1, max_items=50
        ),
    ),
    _t(
        "list_themes",
        "The themes of the two-layer index (root index.json): name, title, summary, tags.",
        "两层索引的主题列表（根 index.json）：名称、标题、概述、标签。",
    ),
    _t(
        "get_index",
        "One index.json: a theme's documents (title, summary, tags, status), or the root index when theme is omitted.",
        "读取一个 index.json：某个主题下的文档（标题、概述、标签、状态）；省略 theme 时返回根索引。",
        theme=_p(
            "string",
            "Theme name from list_themes; omit for the root index.",
            "list_themes 返回的主题名；省略则返回根索引。",
        ),
    ),
    _t(
        "docs_for_paths",
        "Documents whose `paths` globs match the given workspace paths or file names (e.g. coding standards for "
        "src/api/*.py).",
        "返回 `paths` 通配符与给定工作区路径或文件名匹配的文档（例如 src/api/*.py 适用的编码规范）。",
        paths=_p(
            "array",
            "Workspace paths or file names (1–50).",
            "工作区路径或文件名（1–50 个）。",
            required=True,
            min_items=1,
            max_items=50,
        ),
    ),
    _t(
        "search_sources",
        "Keyword search in the source archives (Markdown, text, PDF, DOCX); each hit carries its locator "
        "(page or paragraph).",
        "在源文件归档（Markdown、文本、PDF、DOCX）中按关键词检索；每个命中带定位信息（页码或段落）。",
        keywords=_p(
            "array",
            "Keywords: an array of strings, or one space-separated string (1–20 keywords).",
            "关键词：字符串数组，或以空格分隔的一个字符串（1–20 个）。",
            required=True,
            min_items=1,
            max_items=20,
            accepts_string=True,
        ),
    ),
)

_SYMBOL = _p("string", "Symbol name (function, method, class, …).", "符号名（函数、方法、类等）。", required=True)
_NEIGHBOUR_LIMIT = _p(
    "integer", "Maximum number of results (1–200).", "最多返回条数（1–200）。", default=20, minimum=1, maximum=200
)

CODE_GRAPH_TOOLS: tuple[ToolSpec, ...] = (
    _t(
        "get_info",
        "Metadata of this code graph: repository, branch, commit, status and index stats.",
        "本代码索引的元数据：仓库、分支、提交、状态和索引统计。",
    ),
    _t(
        "search",
        "Find symbols by name; returns locations only (no code).",
        "按名称查找符号，只返回位置（不含代码）。",
        query=_p("string", "Symbol or file name to look for.", "要查找的符号名或文件名。", required=True),
        kind=_p(
            "string",
            "Only symbols of this kind.",
            "只返回该类别的符号。",
            enum=("function", "method", "class", "interface", "type", "variable", "route", "component"),
        ),
        limit=_p(
            "integer",
            "Maximum number of results (1–100).",
            "最多返回条数（1–100）。",
            default=10,
            minimum=1,
            maximum=100,
        ),
    ),
    _t(
        "explore",
        "Preferred tool: the verbatim source of the symbols relevant to a question, grouped by file.",
        "首选工具：返回与问题相关的符号的原文源码，按文件分组。",
        query=_p(
            "string",
            "Natural-language question or symbol / file names.",
            "自然语言问题，或符号名 / 文件名。",
            required=True,
        ),
        maxFiles=_p(
            "integer",
            "Maximum number of files (1–200).",
            "最多返回文件数（1–200）。",
            default=12,
            minimum=1,
            maximum=200,
        ),
    ),
    _t(
        "callers",
        "Functions that call the symbol.",
        "调用该符号的函数。",
        symbol=_SYMBOL,
        limit=_NEIGHBOUR_LIMIT,
    ),
    _t(
        "callees",
        "Functions the symbol calls.",
        "该符号调用的函数。",
        symbol=_SYMBOL,
        limit=_NEIGHBOUR_LIMIT,
    ),
    _t(
        "impact",
        "Symbols affected by changing the symbol, transitively up to depth.",
        "修改该符号会影响到的符号（按深度传递）。",
        symbol=_SYMBOL,
        depth=_p(
            "integer",
            "How many call levels to follow (1–10).",
            "追踪的调用层数（1–10）。",
            default=2,
            minimum=1,
            maximum=10,
        ),
    ),
    _t(
        "node",
        "One symbol: location, signature, call chain and optionally its source (all overloads).",
        "单个符号的位置、签名、调用链，可选返回源码（含全部重载）。",
        symbol=_SYMBOL,
        includeCode=_p("boolean", "Include the source code.", "是否返回源码。", default=False),
        file=_p("string", "File path, to pick one overload.", "文件路径，用于区分重载。"),
        line=_p("integer", "Line number (≥1), to pick one overload.", "行号（≥1），用于区分重载。", minimum=1),
    ),
    _t(
        "status",
        "Index statistics: file, node and edge counts.",
        "索引统计：文件数、节点数、边数。",
    ),
    _t(
        "files",
        "The indexed file tree with language and symbol counts. Use at most once per session.",
        "已索引的文件树，含语言和符号数。每个会话最多用一次。",
        path=_p("string", "Only files under this path prefix.", "只列出该路径前缀下的文件。"),
        pattern=_p("string", "Only files matching this glob.", "只列出匹配该通配符的文件。"),
        format=_p("string", "Output layout.", "输出格式。", default="tree", enum=("tree", "flat", "grouped")),
        includeMetadata=_p("boolean", "Include language and symbol counts.", "是否包含语言和符号数。", default=True),
        maxDepth=_p("integer", "Maximum directory depth (≥1).", "最大目录深度（≥1）。", minimum=1),
    ),
    # memhub's structural tools: definitions, call hierarchies, file dependencies, refactor scope, paths, classes.
    _t(
        "definition",
        "Where a symbol is defined: span, signature, docstring and source.",
        "符号的定义位置：范围、签名、文档字符串和源码。",
        symbol=_SYMBOL,
    ),
    _t(
        "call_hierarchy",
        "A call tree from the symbol: who calls it (callers) or what it calls (callees), several levels deep, "
        "with how each call was resolved.",
        "以该符号为根的调用树：谁调用它（callers）或它调用什么（callees），可多层展开，并标明每个调用的解析方式。",
        symbol=_SYMBOL,
        direction=_p("string", "Which way to walk.", "展开方向。", default="callers", enum=("callers", "callees")),
        depth=_p("integer", "How many levels (1–5).", "展开层数（1–5）。", default=2, minimum=1, maximum=5),
    ),
    _t(
        "file_deps",
        "Which repository files a file imports, and which files import it.",
        "某文件导入了仓库中的哪些文件，以及哪些文件导入了它。",
        file=_p("string", "File path as indexed (see files).", "已索引的文件路径（见 files）。", required=True),
        direction=_p(
            "string",
            "imports, imported_by or both.",
            "imports（它导入的）、imported_by（导入它的）或 both。",
            default="both",
            enum=("imports", "imported_by", "both"),
        ),
    ),
    _t(
        "refactor_scope",
        "What changing a symbol touches: its definition, every reference, overrides, subclasses and the files to edit.",
        "修改某符号会涉及的范围：定义、所有引用、重写、子类以及需要改动的文件。",
        symbol=_SYMBOL,
    ),
    _t(
        "path",
        "The shortest call path from one symbol to another.",
        "从一个符号到另一个符号的最短调用路径。",
        **{
            "from": _p("string", "Symbol the path starts at.", "路径起点符号。", required=True),
            "to": _p("string", "Symbol the path ends at.", "路径终点符号。", required=True),
            "max_depth": _p(
                "integer",
                "Longest path to look for, in calls (1–10).",
                "查找的最长路径（调用次数，1–10）。",
                default=6,
                minimum=1,
                maximum=10,
            ),
        },
    ),
    _t(
        "class_hierarchy",
        "A class's base classes and subclasses across the repository.",
        "某个类在整个仓库中的基类和子类。",
        symbol=_p("string", "Class name.", "类名。", required=True),
    ),
)

_CATALOGUE: dict[str, dict[str, ToolSpec]] = {
    "wiki": {t.name: t for t in WIKI_TOOLS},
    "code-graph": {t.name: t for t in CODE_GRAPH_TOOLS},
}


def tools_for(kind: ResourceKind) -> list[ToolSpec]:
    """The tools of a resource kind (`wiki` or `code-graph`), in catalogue order."""
    if kind not in _CATALOGUE:
        raise ValueError(f"unknown knowledge type: {kind!r}")
    return list(_CATALOGUE[kind].values())


def get_tool(kind: ResourceKind, tool_name: str, resource_id: str) -> ToolSpec:
    """The named tool of a resource kind, or UnknownTool (403) naming the resource."""
    tool = _CATALOGUE.get(kind, {}).get(tool_name) if isinstance(tool_name, str) else None
    if tool is None:
        raise UnknownTool(str(tool_name), kind, resource_id)
    return tool


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


__all__ = [
    "CODE_GRAPH_TOOLS",
    "WIKI_TOOLS",
    "ParamSpec",
    "ToolParamError",
    "ToolSpec",
    "UnknownTool",
    "get_tool",
    "tool_list_view",
    "tools_for",
    "validate_params",
]
