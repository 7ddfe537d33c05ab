"""What stands in a prompt for a tool result that compaction took out, and how the agent gets it back.

Every stand-in names the result's reference and the tool that reads it (`memhub_read_offloaded`, which the
proxy offers with `result_ref`, `query?`, `start_line?`, `end_line?`), so nothing cut is out of reach.
"""

from __future__ import annotations

from memhub.model.offload import OffloadEntry

READ_TOOL = "memhub_read_offloaded"
# A call is rendered by a model and may quote a long parameter (a file's new content): the stand-in names the
# call, it does not repeat it. The original system caps its renderings at the same length.
TOOL_CALL_MAX_CHARS = 300


def replacement_text(entry: OffloadEntry) -> str:
    """The summary that replaces a whole tool result, with the way back to the full one."""
    call = (
        entry.tool_call if len(entry.tool_call) <= TOOL_CALL_MAX_CHARS else entry.tool_call[:TOOL_CALL_MAX_CHARS] + "…"
    )
    return (
        f"[offloaded tool result] {call} → {entry.summary} "
        f"(full result: {entry.result_ref}; read it with the {READ_TOOL} tool)"
    )


def truncated_text(text: str, entry: OffloadEntry | None, *, head_chars: int, tail_chars: int) -> str | None:
    """`text` cut to its head and tail with a marker saying what was cut, or None when cutting saves nothing.

    The cuts fall on line breaks near the limits, so no line is left half; the marker names the full result's
    reference when the result is offloaded (a result without an entry has no copy to point to).
    """
    head_end = _line_break_before(text, head_chars)
    tail_start = _line_break_after(text, len(text) - tail_chars)
    if tail_start <= head_end:
        return None
    cut = tail_start - head_end
    where = f"; full result: {entry.result_ref}; read it with the {READ_TOOL} tool" if entry else ""
    result = f"{text[:head_end]}\n[… {cut} characters cut from this tool result{where} …]\n{text[tail_start:]}"
    return result if len(result) < len(text) else None


def _line_break_before(text: str, limit: int) -> int:
    """The end of the last whole line within `limit` characters, if it keeps most of them; else `limit`."""
    if limit >= len(text):
        return len(text)
    newline = text.rfind("\n", 0, limit)
    return newline + 1 if newline >= limit * 3 // 4 else limit


def _line_break_after(text: str, start: int) -> int:
    """The start of the first whole line from `start`, if it is near; else `start`."""
    if start <= 0:
        return 0
    newline = text.find("\n", start, start + max(1, (len(text) - start) // 4))
    return newline + 1 if newline >= 0 else start
