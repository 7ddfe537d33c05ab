"""The code graph's agent-facing tools (`/v3/tools/list` and `/v3/tools/call`, and the direct `/v3/code-graph/<tool>`
routes): the reference's 9 tools plus memhub's structural ones (`definition`, `call_hierarchy`, `file_deps`,
`refactor_scope`, `path`, `class_hierarchy`), in `tools/list` order."""

from __future__ import annotations

from memhub.knowledge.tools import ToolSpec, param, tool

_SYMBOL = param("string", "Symbol name (function, method, class, …).", "符号名（函数、方法、类等）。", required=True)
_NEIGHBOUR_LIMIT = param(
    "integer", "Maximum number of results (1–200).", "最多返回条数（1–200）。", default=20, minimum=1, maximum=200
)

CODE_GRAPH_TOOLS: tuple[ToolSpec, ...] = (
    tool(
        "get_info",
        "Metadata of this code graph: repository, branch, commit, status and index stats.",
        "本代码索引的元数据：仓库、分支、提交、状态和索引统计。",
    ),
    tool(
        "search",
        "Find symbols by name; returns locations only (no code).",
        "按名称查找符号，只返回位置（不含代码）。",
        query=param("string", "Symbol or file name to look for.", "要查找的符号名或文件名。", required=True),
        kind=param(
            "string",
            "Only symbols of this kind.",
            "只返回该类别的符号。",
            enum=("function", "method", "class", "interface", "type", "variable", "route", "component"),
        ),
        limit=param(
            "integer",
            "Maximum number of results (1–100).",
            "最多返回条数（1–100）。",
            default=10,
            minimum=1,
            maximum=100,
        ),
    ),
    tool(
        "explore",
        "Preferred tool: the verbatim source of the symbols relevant to a question, grouped by file.",
        "首选工具：返回与问题相关的符号的原文源码，按文件分组。",
        query=param(
            "string",
            "Natural-language question or symbol / file names.",
            "自然语言问题，或符号名 / 文件名。",
            required=True,
        ),
        maxFiles=param(
            "integer",
            "Maximum number of files (1–200).",
            "最多返回文件数（1–200）。",
            default=12,
            minimum=1,
            maximum=200,
        ),
    ),
    tool(
        "callers",
        "Functions that call the symbol.",
        "调用该符号的函数。",
        symbol=_SYMBOL,
        limit=_NEIGHBOUR_LIMIT,
    ),
    tool(
        "callees",
        "Functions the symbol calls.",
        "该符号调用的函数。",
        symbol=_SYMBOL,
        limit=_NEIGHBOUR_LIMIT,
    ),
    tool(
        "impact",
        "Symbols affected by changing the symbol, transitively up to depth.",
        "修改该符号会影响到的符号（按深度传递）。",
        symbol=_SYMBOL,
        depth=param(
            "integer",
            "How many call levels to follow (1–10).",
            "追踪的调用层数（1–10）。",
            default=2,
            minimum=1,
            maximum=10,
        ),
    ),
    tool(
        "node",
        "One symbol: location, signature, call chain and optionally its source (all overloads).",
        "单个符号的位置、签名、调用链，可选返回源码（含全部重载）。",
        symbol=_SYMBOL,
        includeCode=param("boolean", "Include the source code.", "是否返回源码。", default=False),
        file=param("string", "File path, to pick one overload.", "文件路径，用于区分重载。"),
        line=param("integer", "Line number (≥1), to pick one overload.", "行号（≥1），用于区分重载。", minimum=1),
    ),
    tool(
        "status",
        "Index statistics: file, node and edge counts.",
        "索引统计：文件数、节点数、边数。",
    ),
    tool(
        "files",
        "The indexed file tree with language and symbol counts. Use at most once per session.",
        "已索引的文件树，含语言和符号数。每个会话最多用一次。",
        path=param("string", "Only files under this path prefix.", "只列出该路径前缀下的文件。"),
        pattern=param("string", "Only files matching this glob.", "只列出匹配该通配符的文件。"),
        format=param("string", "Output layout.", "输出格式。", default="tree", enum=("tree", "flat", "grouped")),
        includeMetadata=param("boolean", "Include language and symbol counts.", "是否包含语言和符号数。", default=True),
        maxDepth=param("integer", "Maximum directory depth (≥1).", "最大目录深度（≥1）。", minimum=1),
    ),
    # memhub's structural tools: definitions, call hierarchies, file dependencies, refactor scope, paths, classes.
    tool(
        "definition",
        "Where a symbol is defined: span, signature, docstring and source.",
        "符号的定义位置：范围、签名、文档字符串和源码。",
        symbol=_SYMBOL,
    ),
    tool(
        "call_hierarchy",
        "A call tree from the symbol: who calls it (callers) or what it calls (callees), several levels deep, "
        "with how each call was resolved.",
        "以该符号为根的调用树：谁调用它（callers）或它调用什么（callees），可多层展开，并标明每个调用的解析方式。",
        symbol=_SYMBOL,
        direction=param("string", "Which way to walk.", "展开方向。", default="callers", enum=("callers", "callees")),
        depth=param("integer", "How many levels (1–5).", "展开层数（1–5）。", default=2, minimum=1, maximum=5),
    ),
    tool(
        "file_deps",
        "Which repository files a file imports, and which files import it.",
        "某文件导入了仓库中的哪些文件，以及哪些文件导入了它。",
        file=param("string", "File path as indexed (see files).", "已索引的文件路径（见 files）。", required=True),
        direction=param(
            "string",
            "imports, imported_by or both.",
            "imports（它导入的）、imported_by（导入它的）或 both。",
            default="both",
            enum=("imports", "imported_by", "both"),
        ),
    ),
    tool(
        "refactor_scope",
        "What changing a symbol touches: its definition, every reference, overrides, subclasses and the files to edit.",
        "修改某符号会涉及的范围：定义、所有引用、重写、子类以及需要改动的文件。",
        symbol=_SYMBOL,
    ),
    tool(
        "path",
        "The shortest call path from one symbol to another.",
        "从一个符号到另一个符号的最短调用路径。",
        **{
            "from": param("string", "Symbol the path starts at.", "路径起点符号。", required=True),
            "to": param("string", "Symbol the path ends at.", "路径终点符号。", required=True),
            "max_depth": param(
                "integer",
                "Longest path to look for, in calls (1–10).",
                "查找的最长路径（调用次数，1–10）。",
                default=6,
                minimum=1,
                maximum=10,
            ),
        },
    ),
    tool(
        "class_hierarchy",
        "A class's base classes and subclasses across the repository.",
        "某个类在整个仓库中的基类和子类。",
        symbol=param("string", "Class name.", "类名。", required=True),
    ),
)
