"""`<memhub_offload_tools>`: how the model reads back a tool result the proxy's context offload took out.

A compacted context replaces old tool results by their summary and a reference (memhub.offload.replacement);
this block, in the system prompt of every request of a session with offload on, gives the one read-only tool
that returns the full result: a curl recipe for the memory bridge's `offload/read-ref`, with the session token
the other memory tools carry. It is there from the session's first request with offload on, compacted or not,
so the system prompt does not change when compaction starts.
"""

from __future__ import annotations

from memhub.knowledge.tools_block import shell_quote
from memhub.offload.replacement import READ_TOOL
from memhub.proxy.injection.memory_blocks import Language, bridge_url
from memhub.proxy.session_token import SESSION_HEADER

_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "lead": "Long tool results earlier in this conversation may have been offloaded to save context: such a"
        " result reads `[offloaded tool result] <call> → <summary> (full result: <ref>; ...)`. The summary keeps"
        " what matters most; when you need what it left out (an exact line, a number, the full output), read the"
        f" result back with {READ_TOOL} instead of running the tool again.",
        "body": '{"result_ref": "<ref>"}, optionally with "query": "<text to find>" or "start_line": 1,'
        ' "end_line": 200 (numbers), and "max_tokens": 1600 (at most 4096)',
        "use": "Read-only. The whole result, the lines asked for, or the passage around `query`; `truncated`"
        " says whether more is left (ask for further lines).",
        "returns": "{code, data: {result_ref, content, truncated, match_found?}}",
    },
    "zh": {
        "lead": "为节省上下文，本对话中较早的长工具结果可能已被卸载，显示为"
        " `[offloaded tool result] <调用> → <摘要> (full result: <ref>; ...)`。摘要保留了最关键的信息；"
        f"需要其中省略的内容（某一行、某个数字、完整输出）时，用 {READ_TOOL} 读回原文，不要重新执行工具。",
        "body": '{"result_ref": "<ref>"}，可选加 "query": "<要查找的文本>" 或 "start_line": 1,'
        ' "end_line": 200（数字），以及 "max_tokens": 1600（最多 4096）',
        "use": "只读。返回完整结果、指定行，或 `query` 附近的段落；`truncated` 表示是否还有剩余（可再按行读取）。",
        "returns": "{code, data: {result_ref, content, truncated, match_found?}}",
    },
}


def render_offload_tools(proxy_url: str, token: str, language: Language = "en") -> str:
    """The block with the read tool's recipe for this session's token."""
    t = _TEXT[language]
    url = f"{bridge_url(proxy_url)}/offload/read-ref"
    return "\n".join(
        [
            "<memhub_offload_tools>",
            t["lead"],
            "",
            f'  <tool name="{READ_TOOL}">',
            f"    curl: {url}",
            f"    body: {t['body']}",
            f"    use:  {t['use']}",
            f"    returns: {t['returns']}",
            "  </tool>",
            "",
            "```bash",
            f"curl -sS -X POST {url} \\",
            "  -H 'content-type: application/json' \\",
            f"  -H {shell_quote(f'{SESSION_HEADER}: {token}')} \\",
            '  -d \'{"result_ref": "<ref>"}\'',
            "```",
            "</memhub_offload_tools>",
        ]
    )
