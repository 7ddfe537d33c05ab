"""What a tool call was: a short deterministic rendering of it, and the kind of work it did.

The rendering (`Bash(command="pytest -x")`, `Read(file_path="src/a.py")`) is the `tool_call` of a summary and
of an offload entry: the tool's name and the parameters that identify the call, never bulky ones (file
contents, patches). The graph stage reads it back with `parse_call` to place an entry by its action, so the
rendering always starts with `Name(`.

Actions: read / search / list (exploring), edit (changing), test / run (verifying), vcs (git and friends),
other. Shell tools are classified by the program their command runs.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

Action = Literal["read", "search", "list", "edit", "test", "run", "vcs", "other"]
Phase = Literal["explore", "change", "verify", "vcs", "other"]

CALL_MAX_CHARS = 120
PHASE_OF: dict[Action, Phase] = {
    "read": "explore",
    "search": "explore",
    "list": "explore",
    "edit": "change",
    "test": "verify",
    "run": "verify",
    "vcs": "vcs",
    "other": "other",
}

# The parameters that identify a call, most telling first; at most two are shown.
_IDENTIFYING = (
    "command",
    "cmd",
    "file_path",
    "filePath",
    "notebook_path",
    "pattern",
    "query",
    "q",
    "regex",
    "url",
    "glob",
    "path",
    "filename",
    "file",
    "symbol",
    "name",
    "directory",
    "dir",
    "target",
    "id",
)
# Parameters that carry content rather than say which call it was.
_BULKY = frozenset(
    {"content", "new_string", "old_string", "text", "body", "data", "patch", "diff", "code", "edits", "input"}
)
_SHOWN_PARAMS = 2

_TOOL_ACTIONS: dict[str, Action] = {}
for _action, _names in (
    ("read", "read read_file readfile view view_file cat open_file get_file notebookread webfetch fetch"),
    ("search", "grep search rg ripgrep glob find find_files codebase_search grep_search file_search websearch"),
    ("list", "ls list list_dir list_directory listdir tree list_files"),
    ("edit", "edit multiedit write write_file create_file str_replace str_replace_editor apply_patch notebookedit"),
    ("test", "test run_tests pytest"),
    ("vcs", "git"),
):
    for _name in _names.split():
        _TOOL_ACTIONS[_name] = _action  # type: ignore[assignment]
_SHELL_TOOLS = frozenset({"bash", "shell", "exec", "sh", "terminal", "run_terminal_cmd", "run_command", "execute"})

_PROGRAM_ACTIONS: dict[str, Action] = {}
for _action, _names in (
    ("read", "cat head tail less more bat sed awk nl wc jq"),
    ("search", "grep rg ag ack find fd locate git-grep"),
    ("list", "ls tree du dir"),
    ("edit", "mv cp rm mkdir touch tee patch chmod ln rmdir"),
    ("test", "pytest tox nox jest vitest mocha unittest ctest phpunit rspec"),
    ("vcs", "git gh hg svn"),
):
    for _name in _names.split():
        _PROGRAM_ACTIONS[_name] = _action  # type: ignore[assignment]
# Build and package tools whose sub-command says whether they test.
_BUILD_TOOLS = frozenset({"npm", "yarn", "pnpm", "bun", "cargo", "go", "make", "mvn", "gradle", "dotnet", "bazel"})
_TEST_SUBCOMMANDS = frozenset({"test", "tests", "check", "vet"})
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "command", "uv", "poetry", "pipenv", "npx", "pnpx"})
_SKIPPED_SEGMENTS = frozenset({"cd", "export", "source", ".", "set", "pushd", "popd"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEGMENT_SPLIT = re.compile(r"&&|\|\||;|\n")
_CALL = re.compile(r"^\s*([^\s(]+)\((.*)\)\s*$", re.DOTALL)
_SPACES = re.compile(r"\s+")


def render_call(tool_name: str, params: Any) -> str:
    """`Name(key="value", …)` with the parameters that identify the call, at most 120 characters."""
    name = _one_line(tool_name) or "tool"
    if len(name) > CALL_MAX_CHARS - 2:
        return name[: CALL_MAX_CHARS - 3] + "…()"
    shown = _identifying(params)
    budget = CALL_MAX_CHARS - len(name) - 2
    parts: list[str] = []
    for key, value in shown:
        prefix = f"{key}=" if key else ""
        separator = 2 if parts else 0
        room = budget - separator - len(prefix)
        if room < 8:  # not even a few characters of the value fit: leave it out
            break
        text = _quoted(value, room)
        parts.append(prefix + text)
        budget -= separator + len(prefix) + len(text)
    return f"{name}({', '.join(parts)})"


def parse_call(rendered: str) -> tuple[str, dict[str, str]]:
    """The tool name and shown parameters of a `render_call` result (lenient: other text gives its name only)."""
    match = _CALL.match(rendered)
    if not match:
        return _one_line(rendered).split(" ", 1)[0].rstrip(":"), {}
    name, inside = match.groups()
    params: dict[str, str] = {}
    for key, value in re.findall(r'(?:^|,\s*)(\w+)=("(?:[^"\\]|\\.)*"?|[^,]*)', inside):
        params[key] = _unquoted(value)
    if not params and inside.startswith('"'):
        params[""] = _unquoted(inside)
    return name, params


def classify(tool_name: str, params: Any) -> Action:
    """The kind of work a call did, from its tool name and (for shell tools) the program its command runs."""
    key = _tool_key(tool_name)
    if key in _SHELL_TOOLS or key.endswith(("bash", "shell", "terminal")):
        command = _param(params, "command", "cmd")
        return classify_command(command) if command else "run"
    if key in _TOOL_ACTIONS:
        return _TOOL_ACTIONS[key]
    # MCP and namespaced tools (`mcp__fs__read_file`, `fs.read`): the last part names the operation.
    tail = re.split(r"__|\.|/|:", key)[-1]
    if "todo" in tail:
        return "other"  # a plan the agent keeps for itself, not work on the project
    if tail in _TOOL_ACTIONS:
        return _TOOL_ACTIONS[tail]
    for word, action in (("read", "read"), ("search", "search"), ("grep", "search"), ("list", "list")):
        if word in tail:
            return action  # type: ignore[return-value]
    for word in ("write", "edit", "replace", "create", "delete", "patch"):
        if word in tail:
            return "edit"
    return "other"


def classify_command(command: str) -> Action:
    """The action of a shell command: that of the first segment doing real work (`cd x && pytest` tests)."""
    for segment in _SEGMENT_SPLIT.split(command):
        words = segment.strip().split()
        program, rest = _program(words)
        if not program or program in _SKIPPED_SEGMENTS:
            continue
        return _program_action(program, rest, segment)
    return "run"


def phase_of_call(rendered: str) -> Phase:
    """The phase of a rendered call (`render_call`'s output), as the graph stage groups steps."""
    name, params = parse_call(rendered)
    return PHASE_OF[classify(name, params)]


def target_of_call(rendered: str) -> str:
    """What a rendered call worked on: its first shown parameter, else its tool name."""
    name, params = parse_call(rendered)
    for value in params.values():
        if value:
            return value
    return name


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a command's words run, past assignments and wrappers (`sudo`, `uv run`, `python -m`)."""
    i = 0
    while i < len(words):
        word = words[i]
        base = word.rsplit("/", 1)[-1].lower()
        if _ASSIGNMENT.match(word):
            i += 1
        elif base in _WRAPPERS:
            i += 2 if i + 1 < len(words) and words[i + 1] == "run" else 1
        elif base == "timeout":
            i += 2
        elif re.fullmatch(r"python[\d.]*", base) and i + 2 < len(words) and words[i + 1] == "-m":
            return words[i + 2].lower(), words[i + 3 :]
        else:
            return base, words[i + 1 :]
    return "", []


def _program_action(program: str, rest: list[str], segment: str) -> Action:
    if program in {"echo", "printf", "cat"} and re.search(r"(^|\s)>>?\s*\S", segment):
        return "edit"  # writing a file through a redirect
    if program == "sed" and any(w.startswith("-i") for w in rest):
        return "edit"
    if program in _PROGRAM_ACTIONS:
        return _PROGRAM_ACTIONS[program]
    sub = rest[0].lower() if rest else ""
    if program in _BUILD_TOOLS and (
        sub in _TEST_SUBCOMMANDS or (sub == "run" and len(rest) > 1 and "test" in rest[1].lower())
    ):
        return "test"
    return "run"


def _identifying(params: Any) -> list[tuple[str, Any]]:
    """(key, value) of the parameters to show, in the order shown; key "" for a bare positional value."""
    if isinstance(params, str):
        return [("", params)] if params.strip() else []
    if not isinstance(params, dict):
        return [] if params is None else [("", params)]
    scalars = {k: v for k, v in params.items() if isinstance(k, str) and _is_scalar(v) and v != ""}
    picked = [(k, scalars[k]) for k in _IDENTIFYING if k in scalars][:_SHOWN_PARAMS]
    if not picked:
        picked = [(k, v) for k, v in scalars.items() if k not in _BULKY][:_SHOWN_PARAMS]
    return picked


def _quoted(value: Any, room: int) -> str:
    """`value` as JSON (strings on one line), cut to `room` characters with an ellipsis inside the quotes."""
    if not isinstance(value, str):
        encoded = json.dumps(value)
        return encoded if len(encoded) <= room else encoded[: room - 1] + "…"
    text = _one_line(value)
    encoded = json.dumps(text, ensure_ascii=False)
    if len(encoded) <= room:
        return encoded
    cut = room - 3  # two quotes and the ellipsis
    while cut > 0:
        # Escapes make the encoded text longer than the raw cut: shorten until it fits.
        inner = json.dumps(text[:cut], ensure_ascii=False)[1:-1]
        if len(inner) + 3 <= room:
            return f'"{inner}…"'
        cut -= len(inner) + 3 - room
    return '"…"'


def _unquoted(value: str) -> str:
    value = value.strip()
    if value.startswith('"'):
        body = value[1:-1] if value.endswith('"') and len(value) > 1 else value[1:]
        try:
            return json.loads(f'"{body}"')
        except ValueError:
            return body
    return value


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _param(params: Any, *keys: str) -> str:
    if isinstance(params, str):
        return params
    if isinstance(params, dict):
        for key in keys:
            if isinstance(params.get(key), str):
                return params[key]
    return ""


def _tool_key(tool_name: str) -> str:
    return _one_line(tool_name).lower().replace("-", "_")


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", str(text)).strip()
