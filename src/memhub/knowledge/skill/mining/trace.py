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


# Steps another archive may interleave between two steps of one procedure (a web search, a look at a file): the
# same work done twice is rarely done in exactly the same order of side trips.
MAX_GAP = 3


def _longest_common_chain(a: Sequence[Step], b: Sequence[Step], gap: int = MAX_GAP) -> list[int]:
    """Positions in `a` of the longest sequence of steps `a` and `b` both make in that order, with at most `gap`
    other steps between two consecutive ones in either (the earliest such sequence on ties)."""
    length = [[0] * len(b) for _ in a]
    back: dict[tuple[int, int], tuple[int, int] | None] = {}
    end: tuple[int, int] | None = None
    for i, step in enumerate(a):
        for j, other in enumerate(b):
            if step != other:
                continue
            best, before = 1, None
            for pi in range(max(0, i - gap - 1), i):
                for pj in range(max(0, j - gap - 1), j):
                    if length[pi][pj] + 1 > best:
                        best, before = length[pi][pj] + 1, (pi, pj)
            length[i][j], back[(i, j)] = best, before
            if end is None or best > length[end[0]][end[1]]:
                end = (i, j)
    chain: list[int] = []
    while end is not None:
        chain.append(end[0])
        end = back[end]
    return chain[::-1]


def _contains(haystack: Sequence[Step], needle: Sequence[Step], gap: int = MAX_GAP) -> bool:
    """Whether `haystack` makes the steps of `needle` in order, at most `gap` other steps apart."""
    if not needle:
        return True
    ends = [i for i, step in enumerate(haystack) if step == needle[0]]
    for wanted in needle[1:]:
        ends = [i for i, step in enumerate(haystack) if step == wanted and any(0 < i - e <= gap + 1 for e in ends)]
        if not ends:
            return False
    return True


def find_recurrence(
    archive_id: str, calls: Sequence[Call], others: Sequence[tuple[str, Sequence[Step]]], min_steps: int = 3
) -> Recurrence | None:
    """The longest sequence of at least `min_steps` steps of this archive that another archive repeats in the same
    order (side trips of up to MAX_GAP steps allowed in either), or None.

    Ties go to the sequence more archives share, then to the earlier one in this archive.
    """
    steps = [c.step for c in calls]
    best: tuple[int, int, int] | None = None  # (length, archives sharing it, -start)
    chosen: list[int] = []
    for _, other in others:
        chain = _longest_common_chain(steps, other)
        if len(chain) < min_steps:
            continue
        run = [steps[p] for p in chain]
        shared = sum(1 for _, o in others if _contains(o, run))
        rank = (len(chain), shared, -chain[0])
        if best is None or rank > best:
            best, chosen = rank, chain
    if not chosen:
        return None
    run = [steps[p] for p in chosen]
    ids = [archive_id] + [other_id for other_id, o in others if _contains(o, run)]
    return Recurrence(tuple(calls[p] for p in chosen), tuple(dict.fromkeys(ids)))
