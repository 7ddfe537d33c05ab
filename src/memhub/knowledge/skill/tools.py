"""A skill's agent-facing tools (`/v3/tools/list` and `/v3/tools/call` on a `skl-…` id), read-only: the
original's proxy offers these reads (view, read one file) to every agent and keeps writes behind the skill routes.
"""

from __future__ import annotations

from memhub.knowledge.tools import ToolSpec, param, tool

_VERSION = param(
    "integer",
    "A past version to read (default: the current head).",
    "要读取的历史版本（默认当前版本）。",
    minimum=1,
)

SKILL_TOOLS: tuple[ToolSpec, ...] = (
    tool(
        "skill_view",
        "The skill's SKILL.md (front matter and instructions) and its resource manifest (path, size, type).",
        "读取 skill 的 SKILL.md（front matter 与操作说明）和资源文件清单（路径、大小、类型）。",
        version=_VERSION,
    ),
    tool(
        "skill_read_file",
        "Read one resource file of the skill by its manifest path (call skill_view first for the paths).",
        "按清单路径读取 skill 的一个资源文件（先调 skill_view 获取路径）。",
        path=param(
            "string",
            "The file's path in the manifest, e.g. scripts/run.sh.",
            "清单中的文件路径，如 scripts/run.sh。",
            required=True,
        ),
        version=_VERSION,
        encoding=param(
            "string",
            "utf-8 for text; base64 for binary files (default utf-8).",
            "文本用 utf-8，二进制文件用 base64（默认 utf-8）。",
            default="utf-8",
            enum=("utf-8", "base64"),
        ),
    ),
)
