"""The wiki's agent-facing tools (`/v3/tools/list` and `/v3/tools/call`): the reference's 7 tools plus memhub's
index tools (`list_themes`, `get_index`, `docs_for_paths`, `search_sources`), in `tools/list` order."""

from __future__ import annotations

from memhub.knowledge.tools import ToolSpec, param, tool

_GET_INFO_WIKI = tool(
    "get_info",
    "Metadata of this wiki: name, summary, status, version, page and source counts.",
    "本 wiki 的元数据：名称、概述、状态、版本、页面数和源文件数。",
)

WIKI_TOOLS: tuple[ToolSpec, ...] = (
    _GET_INFO_WIKI,
    tool(
        "search",
        "Full-text (BM25) search over wiki pages. Returns path, title, snippet, score and related pages; "
        "read the hits with read_page.",
        "对 wiki 页面做全文（BM25）检索，返回路径、标题、摘要片段、得分和相关页面；命中后用 read_page 读取。",
        query=param("string", "Search words or a question.", "检索词或问题。", required=True),
        limit=param(
            "integer",
            "Maximum number of results (1–100).",
            "最多返回条数（1–100）。",
            default=20,
            minimum=1,
            maximum=100,
        ),
    ),
    tool(
        "list_pages",
        "All pages (id, title, type, path). Prefer search; use this only for a small wiki.",
        "列出全部页面（id、标题、类型、路径）。优先用 search，仅在 wiki 很小时使用。",
    ),
    tool(
        "read_page",
        "Read pages by id (e.g. concepts/redis) or wiki/… path; `.md` is optional. Missing pages come back as "
        "not_found.",
        "按页面 id（如 concepts/redis）或 wiki/… 路径读取页面，`.md` 可省略；不存在的页面返回 not_found。",
        refs=param(
            "array",
            "Page ids or paths (1–20).",
            "页面 id 或路径（1–20 个）。",
            required=True,
            min_items=1,
            max_items=20,
        ),
    ),
    tool(
        "get_graph",
        "The page link graph: nodes (pages) and edges (links).",
        "页面链接图：节点（页面）和边（链接）。",
    ),
    tool(
        "list_raw",
        "Uploaded source files with size and ingest status.",
        "已上传的源文件列表，含大小和摄取状态。",
    ),
    tool(
        "read_raw",
        "Read the extracted text of source files by filename. Missing files come back as not_found.",
        "按文件名读取源文件的提取文本；不存在的文件返回 not_found。",
        filenames=param(
            "array", "Source file names (1–50).", "源文件名（1–50 个）。", required=True, min_items=1, max_items=50
        ),
    ),
    tool(
        "list_themes",
        "The themes of the two-layer index (root index.json): name, title, summary, tags.",
        "两层索引的主题列表（根 index.json）：名称、标题、概述、标签。",
    ),
    tool(
        "get_index",
        "One index.json: a theme's documents (title, summary, tags, status), or the root index when theme is omitted.",
        "读取一个 index.json：某个主题下的文档（标题、概述、标签、状态）；省略 theme 时返回根索引。",
        theme=param(
            "string",
            "Theme name from list_themes; omit for the root index.",
            "list_themes 返回的主题名；省略则返回根索引。",
        ),
    ),
    tool(
        "docs_for_paths",
        "Documents whose `paths` globs match the given workspace paths or file names (e.g. coding standards for "
        "src/api/*.py).",
        "返回 `paths` 通配符与给定工作区路径或文件名匹配的文档（例如 src/api/*.py 适用的编码规范）。",
        paths=param(
            "array",
            "Workspace paths or file names (1–50).",
            "工作区路径或文件名（1–50 个）。",
            required=True,
            min_items=1,
            max_items=50,
        ),
    ),
    tool(
        "search_sources",
        "Keyword search in the source archives (Markdown, text, PDF, DOCX); each hit carries its locator "
        "(page or paragraph).",
        "在源文件归档（Markdown、文本、PDF、DOCX）中按关键词检索；每个命中带定位信息（页码或段落）。",
        keywords=param(
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
