"""What stands in a prompt for a tool result that compaction took out, and how the agent gets it back.

Every stand-in names the result's reference and the tool that reads it (`memhub_read_offloaded`, which the
proxy offers with `result_ref`, `query?`, `start_line?`, `end_line?`), so nothing cut is out of reach. The
stand-in for a file read also carries the file's outline (what it defines, at which lines): a summary of 200
characters names a few definitions, and one read back returns the file's first lines only, so without it
the rest of a long file could be found again only by guessing line ranges.
"""

from __future__ import annotations

import hashlib

from memhub.model.offload import OffloadEntry
from memhub.offload.summary import outline
from memhub.offload.toolcall import classify, parse_call

READ_TOOL = "memhub_read_offloaded"
TOOL_NAME_MAX_CHARS = 64
OUTLINE_MAX_CHARS = 1_200  # about 300 tokens: a file of 40 definitions, where the file itself takes thousands
STAND_IN_MARK = "[offloaded tool result]"
# Every turn re-applies the session's replacements to the same results: their outlines are kept by the result's
# digest (reading a long file's definitions again costs more than the rest of a compaction).
_OUTLINES: dict[bytes, str] = {}
_OUTLINES_MAX = 4_096


def replacement_text(entry: OffloadEntry, result: str | None = None) -> str:
    """The summary that replaces a whole tool result (`result`, the text as sent), with the way back to it.

    The stand-in names the tool, not the whole call: a result is never kept without its call, which the message
    before it still holds in full. A result that already is this entry's stand-in (a client that sent the
    compacted text back) is kept as it is, so that the decision reads the same on every turn.
    """
    if result is not None and result.startswith(STAND_IN_MARK) and entry.result_ref in result:
        return result
    name, params = parse_call(entry.tool_call)
    shape = ""
    if classify(name, params) == "read":
        # Made by the summary stage; a pair summarised before it made them gets its outline here, once.
        lines = entry.outline if entry.outline is not None else _outline(result) if result else ""
        shape = f"; outline (line name): {lines}" if lines else ""
    return (
        f"{STAND_IN_MARK} {name[:TOOL_NAME_MAX_CHARS]} → {entry.summary}{shape} "
        f"(full result: {entry.result_ref}; read it with the {READ_TOOL} tool)"
    )


def file_outline(tool_name: str, params: object, result: str) -> str | None:
    """What a stand-in lists of a file read's result (None for a call that reads no file)."""
    return outline(result, OUTLINE_MAX_CHARS) if classify(tool_name, params) == "read" else None


def _outline(result: str) -> str:
    key = hashlib.blake2b(result.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    found = _OUTLINES.get(key)
    if found is None:
        found = outline(result, OUTLINE_MAX_CHARS)
        if len(_OUTLINES) >= _OUTLINES_MAX:
            _OUTLINES.clear()  # a bound, not a policy: the next turns fill it again with what they use
        _OUTLINES[key] = found
    return found


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
