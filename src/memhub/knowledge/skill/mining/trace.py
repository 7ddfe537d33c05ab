"""An archive read as the work it shows: the sequence of successful tool calls, each reduced to a step.

A step is what stays the same when the same work is done again: the tool's name, the shape of its arguments
(their keys, not their values) and, for a shell command, the program it runs (`pytest`, `git commit`). Two
calls with the same step did the same kind of thing with different inputs. A call whose result reads as an
error did not work and is left out, and a step repeated back to back counts once (an agent that edits twice in
a row did one edit step), so the same procedure done twice gives the same step sequence.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Tools that take one shell command line; their step includes the program the command runs.
_COMMAND_KEYS = ("command", "cmd", "script", "shell", "commandline", "command_line")
# Programs whose first word alone says little: the subcommand is part of the step (`git commit` vs `git push`).
_WITH_SUBCOMMAND = frozenset(
    {"git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "kubectl", "pip", "pip3", "uv", "poetry", "gh", "make"}
)
_OPTIONS_WITH_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--prefix", "--manifest-path", "-f", "--file", "-n", "--namespace"}
)
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec"})
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# The start of a tool result that says the call itself failed (not, say, a test run that found failures).
_ERROR_START = re.compile(
    r"^\s*(error\b|exception\b|fatal\b|traceback \(most recent call last\)|command not found|permission denied"
    r"|no such file or directory|tool (call )?failed|failed to\b)",
    re.IGNORECASE,
)
_ERROR_ANYWHERE = re.compile(r"command not found|no such file or directory|exit (code|status):? *(12[67])\b", re.I)


@dataclass(frozen=True, slots=True)
class Step:
    """One kind of tool call: tool, argument keys, and the program of a shell command."""

    tool: str
    keys: tuple[str, ...]
    program: str | None = None

    @property
    def signature(self) -> str:
        """A stable text form: `bash(command)[pytest]`."""
        program = f"[{self.program}]" if self.program else ""
        return f"{self.tool}({','.join(self.keys)}){program}"

    @property
    def slug(self) -> str:
        """The step in a skill name: `run-pytest`, `git-commit`, `read-file`."""
        if self.program:
            words = self.program.split()
            text = "-".join(words) if len(words) > 1 else f"run-{words[0]}"
        else:
            text = self.tool
        return _slug(text)


@dataclass(frozen=True, slots=True)
class Call:
    """A successful tool call in an archive: its step, its arguments and the request it served."""

    step: Step
    arguments: Any  # the parsed JSON arguments, or the raw text when they are not JSON
    request: str | None  # the latest user message before the call


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "tool"


def parse_arguments(content: str) -> Any:
    """A tool call's arguments: its JSON when the content is JSON, else the text; an OpenAI-style
    `{"name", "arguments"}` wrapper is unwrapped."""
    try:
        value = json.loads(content)
    except ValueError:
        return content
    if isinstance(value, dict) and set(value) <= {"name", "arguments", "id", "type"} and "arguments" in value:
        inner = value["arguments"]
        if isinstance(inner, str):
            try:
                return json.loads(inner)
            except ValueError:
                return inner
        return inner
    return value


def command_program(command: str) -> str | None:
    """The program a shell command line runs: `pytest`, `git commit`, `python -m pytest` → `pytest`."""
    first = re.split(r"&&|\|\||;|\|", command, maxsplit=1)[0]
    try:
        words = shlex.split(first)
    except ValueError:
        words = first.split()
    words = [w for w in words if not _ENV_ASSIGNMENT.match(w)]
    while words and words[0] in _WRAPPERS:
        words = words[1:]
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1].lower()
    rest = words[1:]
    if re.fullmatch(r"python[0-9.]*", program) and len(rest) >= 2 and rest[0] == "-m":
        program, rest = rest[1].lower(), rest[2:]
    if program in _WITH_SUBCOMMAND:
        sub = _subcommand(rest)
        if sub and re.fullmatch(r"[a-z][a-z0-9-]*", sub):
            return f"{program} {sub}"
    return program if re.fullmatch(r"[a-z0-9][a-z0-9._+-]*", program) else None


def _subcommand(words: Sequence[str]) -> str | None:
    """The first word that is neither an option nor the value of one (`git -C repo commit` → `commit`)."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _OPTIONS_WITH_VALUE:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def step_of(tool: str, arguments: Any) -> Step:
    """The step a call with these arguments is."""
    if isinstance(arguments, Mapping):
        keys = tuple(sorted(str(k) for k in arguments))
        command = next((arguments[k] for k in _COMMAND_KEYS if isinstance(arguments.get(k), str)), None)
        return Step(tool, keys, command_program(command) if command else None)
    if isinstance(arguments, str) and tool.lower() in ("bash", "shell", "sh", "terminal", "exec", "run"):
        return Step(tool, (), command_program(arguments))
    return Step(tool, ())


def reads_as_error(message: Mapping[str, Any]) -> bool:
    """Whether a tool result says the call failed."""
    metadata = message.get("metadata")
    if isinstance(metadata, Mapping) and (metadata.get("is_error") is True or metadata.get("status") == "error"):
        return True
    content = message.get("content")
    if not isinstance(content, str):
        return False
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    if isinstance(value, Mapping):
        if value.get("error") or value.get("is_error") is True:
            return True
        if value.get("ok") is False or value.get("success") is False:
            return True
    head = content[:400]
    return bool(_ERROR_START.match(head) or _ERROR_ANYWHERE.search(head))


def successful_calls(messages: Sequence[Mapping[str, Any]]) -> list[Call]:
    """The archive's tool calls whose result did not read as an error, in order, repeats collapsed."""
    failed = {
        m.get("tool_call_id")
        for m in messages
        if m.get("role") == "tool_result" and m.get("tool_call_id") and reads_as_error(m)
    }
    names = {m.get("tool_call_id"): m.get("tool_name") for m in messages if m.get("role") == "tool_result"}
    calls: list[Call] = []
    request: str | None = None
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user" and isinstance(content, str) and content.strip():
            request = content.strip()
        if role != "tool_call" or message.get("tool_call_id") in failed:
            continue
        arguments = parse_arguments(content if isinstance(content, str) else "")
        tool = message.get("tool_name") or names.get(message.get("tool_call_id")) or "tool"
        call = Call(step_of(str(tool), arguments), arguments, request)
        if calls and calls[-1].step == call.step:
            continue  # the same step again at once: one step of the procedure
        calls.append(call)
    return calls


@dataclass(frozen=True, slots=True)
class Recurrence:
    """A step sequence found in the current archive and in others."""

    calls: tuple[Call, ...]  # as the current archive made them (example arguments)
    archive_ids: tuple[str, ...]  # every archive that contains it, the current one first

    @property
    def steps(self) -> tuple[Step, ...]:
        """The sequence's steps."""
        return tuple(c.step for c in self.calls)


def _longest_common_run(a: Sequence[Step], b: Sequence[Step]) -> tuple[int, int]:
    """(start in `a`, length) of the longest run of steps that `a` and `b` share (earliest on ties)."""
    best = (0, 0)
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                current[j] = previous[j - 1] + 1
                if current[j] > best[1]:
                    best = (i - current[j], current[j])
        previous = current
    return best


def _contains(haystack: Sequence[Step], needle: Sequence[Step]) -> bool:
    n = len(needle)
    return any(tuple(haystack[i : i + n]) == tuple(needle) for i in range(len(haystack) - n + 1))


def find_recurrence(
    archive_id: str, calls: Sequence[Call], others: Sequence[tuple[str, Sequence[Step]]], min_steps: int = 3
) -> Recurrence | None:
    """The longest run of at least `min_steps` steps of this archive that another archive repeats, or None.

    Ties go to the run more archives share, then to the earlier one in this archive.
    """
    steps = [c.step for c in calls]
    best: tuple[int, int, int] | None = None  # (length, archives sharing it, -start)
    chosen: tuple[int, int] | None = None
    for _, other in others:
        start, length = _longest_common_run(steps, other)
        if length < min_steps:
            continue
        shared = sum(1 for _, o in others if _contains(o, steps[start : start + length]))
        rank = (length, shared, -start)
        if best is None or rank > best:
            best, chosen = rank, (start, length)
    if chosen is None:
        return None
    start, length = chosen
    run = steps[start : start + length]
    ids = [archive_id] + [other_id for other_id, o in others if _contains(o, run)]
    return Recurrence(tuple(calls[start : start + length]), tuple(dict.fromkeys(ids)))
