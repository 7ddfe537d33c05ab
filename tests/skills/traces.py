"""Realistic agent work as `/v3/skill/conversation/add` messages: a coding agent fixing a failing test."""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def _call(cid: str, tool: str, arguments: dict[str, Any]) -> Message:
    return {"role": "tool_call", "content": json.dumps(arguments), "tool_name": tool, "tool_call_id": cid}


def _result(cid: str, content: str, tool: str | None = None) -> Message:
    message: Message = {"role": "tool_result", "content": content, "tool_call_id": cid}
    if tool:
        message["tool_name"] = tool
    return message


def fix_failing_test(session: str, module: str, detour: bool = False) -> list[Message]:
    """Run the tests, read the failure, edit, rerun, commit; `detour` adds a failed read and a double edit."""
    p = f"{session}-"
    messages: list[Message] = [
        {"role": "user", "content": f"The tests for {module} fail since this morning, please fix and commit."},
        {"role": "assistant", "content": "I'll run the test suite first."},
        _call(p + "1", "bash", {"command": f"python -m pytest -q tests/test_{module}.py"}),
        _result(
            p + "1",
            f"F.\n=== FAILURES ===\nAssertionError: assert 3 == 4\nFAILED tests/test_{module}.py::test_add\n"
            "1 failed, 1 passed in 0.02s",
        ),
    ]
    if detour:
        messages += [
            _call(p + "1b", "read_file", {"path": f"src/{module}_old.py"}),
            _result(p + "1b", f"Error: No such file or directory: src/{module}_old.py"),
        ]
    messages += [
        _call(p + "2", "read_file", {"path": f"src/{module}.py"}),
        _result(p + "2", "def add(a, b):\n    return a + b + 1\n"),
        {"role": "assistant", "content": "The off-by-one is in add(); fixing it."},
        _call(p + "3", "edit_file", {"path": f"src/{module}.py", "old": "a + b + 1", "new": "a + b"}),
        _result(p + "3", "edited 1 line"),
    ]
    if detour:
        messages += [
            _call(p + "3b", "edit_file", {"path": f"src/{module}.py", "old": "def add", "new": "def add"}),
            _result(p + "3b", "edited 0 lines"),
        ]
    messages += [
        _call(p + "4", "bash", {"command": f"pytest -q tests/test_{module}.py"}),
        _result(p + "4", "..\n2 passed in 0.01s"),
        _call(p + "5", "bash", {"command": f"git commit -am 'Fix off-by-one in {module}.add'"}),
        _result(p + "5", f"[main 1a2b3c4] Fix off-by-one in {module}.add\n 1 file changed"),
        {"role": "assistant", "content": "Fixed and committed."},
    ]
    return messages


def chatter(session: str, calls: int) -> list[Message]:
    """Unrelated tool use: `calls` web searches."""
    out: list[Message] = [{"role": "user", "content": "Find me the release notes."}]
    for i in range(calls):
        cid = f"{session}-w{i}"
        out += [_call(cid, "web_search", {"query": f"release notes {i}"}), _result(cid, "3 results")]
    return out
