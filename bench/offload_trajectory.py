#!/usr/bin/env python3
"""Genuine agent trajectories for the offload benchmark: a scripted coding agent working on this repository.

A deterministic agent loop runs real commands on a private copy of this repository at one commit (a local
`git clone` checked out detached in a fixed directory under the system's temp dir, so the real checkout never
changes and the same commit gives the same commands, paths and answers). Its tasks are the everyday ones: find
where a symbol is defined and how it is used, run a module's tests and look into a failure, read a file's
history, get an overview of a package. The next step often depends on what the last one printed (the file a
search found is the file read next, the failing test is the one read), as an agent's would. Tool outputs are
captured as they are: stdout and stderr interleaved, the exit code, Claude Code's limits (a Bash output is cut
at 30,000 characters, a Read at 2,000 lines, `cat -n` numbering). One failure is real but planted: before the
run, the copy gets a one-character bug (an off-by-one in the tokenizer's query-term cap, or `>=` turned into
`>` in the persona schedule), so `pytest` fails the way it does on a genuine regression.

Each trajectory is what the agent's provider sees, in Anthropic Messages format (user prompts; assistant turns
with `text` and `tool_use` blocks named Bash, Read and Grep; user turns of `tool_result` blocks), with the model
calls along it: the context each call is made with, and what the agent would send to `/v2/offload/ingest` just
before it (the prompt that opened a task, the tool pairs whose results came back).

Retention questions come from the real outputs, fixed per trajectory: a path a search found, the function or
class defined at a line of a file that was read, the test that failed and the assertion it failed on, how many
tests passed, a commit's short hash. Each has one exact answer and a key term, a word of the tool call that
produced it (the search pattern, the file's name), which is how an agent would recognise the pair it needs.
A candidate is kept only if its answer appears in tool results and nowhere else (not in a prompt, the agent's
own text or a tool call's input: those stay in any compacted context and would make the question trivial), and
is at least 6 characters long (a bare number would be found by accident).

    python bench/offload_trajectory.py                 # both trajectories: sizes and questions
    python bench/offload_trajectory.py --quick --out /tmp/t.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BASH_MAX_CHARS = 30_000  # Claude Code's Bash tool cuts its output here
READ_MAX_LINES = 2_000  # ... and its Read tool a file here
READ_MAX_LINE_CHARS = 2_000
CLOCK_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # synthetic timestamps: one tool step every 17 s
STEP_SECONDS = 17
MIN_ANSWER_CHARS = 6
QUESTIONS_PER_RESULT = 2

# -- counting tokens ------------------------------------------------------------------------------------------------

_ENCODING: Any = None


def encoding() -> Any:
    """o200k_base, the vocabulary of current OpenAI models (a fair stand-in for any provider's count)."""
    global _ENCODING
    if _ENCODING is None:
        import bpe_openai

        _ENCODING = bpe_openai.get_encoding("o200k_base")
    return _ENCODING


def text_tokens(text: str) -> int:
    return len(encoding().encode_ordinary(text)) if text else 0


def message_text(message: dict[str, Any]) -> str:
    """What of a message a model reads: its texts, its tool calls' names and inputs, its tool results."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            parts.append(str(block))
        elif block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            parts.append(f"{block.get('name', '')} {json.dumps(block.get('input', {}), ensure_ascii=False)}")
        elif block.get("type") == "tool_result":
            parts.append(result_text(block.get("content")))
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


MESSAGE_OVERHEAD = 4  # a role marker and separators, as chat formats add per message


def message_tokens(message: dict[str, Any]) -> int:
    return text_tokens(message_text(message)) + MESSAGE_OVERHEAD


def context_tokens(messages: Iterable[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)


# -- the trajectory ---------------------------------------------------------------------------------------------------


@dataclass
class ModelCall:
    """One call the agent makes to its model: with `messages[:upto]`, after ingesting `prompt` and `pairs`."""

    upto: int
    prompt: str | None = None
    pairs: list[dict[str, Any]] = field(default_factory=list)  # `/v2/offload/ingest` tool pairs, wire shape


@dataclass(frozen=True)
class Question:
    """A fact from a tool result: `answer` is matched exactly; `key` is the word of the tool call it came from."""

    id: str
    kind: str
    text: str
    key: str
    answer: str
    source: str  # the tool_call_id whose result holds the answer


@dataclass
class Trajectory:
    name: str
    rev: str
    root: str
    tasks: list[str]
    messages: list[dict[str, Any]]
    calls: list[ModelCall]
    questions: list[Question]
    planted_bug: str | None = None

    def context(self, call: ModelCall) -> list[dict[str, Any]]:
        return self.messages[: call.upto]

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Trajectory:
        return cls(
            name=value["name"],
            rev=value["rev"],
            root=value["root"],
            tasks=list(value["tasks"]),
            messages=list(value["messages"]),
            calls=[ModelCall(**c) for c in value["calls"]],
            questions=[Question(**q) for q in value["questions"]],
            planted_bug=value.get("planted_bug"),
        )


@dataclass
class Run:
    """One tool execution as the agent saw it."""

    tool: str
    input: dict[str, Any]
    output: str
    error: str | None
    duration_ms: float
    call_id: str
    timestamp: str


class Agent:
    """Builds the conversation: prompts, assistant turns with tool calls, their real results, the model calls."""

    def __init__(self, name: str, root: Path, env: dict[str, str]) -> None:
        self.name = name
        self.root = root
        self.env = env
        self.messages: list[dict[str, Any]] = []
        self.calls: list[ModelCall] = []
        self.runs: list[Run] = []
        self.tasks: list[str] = []
        self._prompt: str | None = None
        self._pairs: list[dict[str, Any]] = []

    # -- the conversation

    def prompt(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        self.tasks.append(text)
        self._prompt = text

    def _model_call(self) -> None:
        self.calls.append(ModelCall(len(self.messages), self._prompt, self._pairs))
        self._prompt, self._pairs = None, []

    def act(self, thought: str, *tools: tuple[str, dict[str, Any]]) -> list[Run]:
        """A model call that answers with `thought` and these tool calls; they run, their results come back."""
        self._model_call()
        runs = [self._run(tool, params) for tool, params in tools]
        uses = [{"type": "tool_use", "id": r.call_id, "name": r.tool, "input": r.input} for r in runs]
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": thought}, *uses]})
        results = [
            {"type": "tool_result", "tool_use_id": r.call_id, "content": r.output, "is_error": r.error is not None}
            for r in runs
        ]
        self.messages.append({"role": "user", "content": results})
        self._pairs = [pair_of(r) for r in runs]
        return runs

    def say(self, text: str) -> None:
        """A model call that ends the task with a text answer."""
        self._model_call()
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})

    def trajectory(self, rev: str, questions: list[Question], planted: str | None) -> Trajectory:
        return Trajectory(self.name, rev, str(self.root), self.tasks, self.messages, self.calls, questions, planted)

    # -- tools

    def _run(self, tool: str, params: dict[str, Any]) -> Run:
        n = len(self.runs)
        call_id = "toolu_01" + hashlib.sha256(f"{self.name}/{n}".encode()).hexdigest()[:22]
        timestamp = (CLOCK_START + timedelta(seconds=STEP_SECONDS * (n + 1))).isoformat().replace("+00:00", "Z")
        started = time.perf_counter()
        if tool == "Bash":
            output, error = self._bash(params["command"])
        elif tool == "Read":
            output, error = self._read(params)
        elif tool == "Grep":
            output, error = self._grep(params)
        else:
            raise ValueError(f"unknown tool {tool}")
        duration = round((time.perf_counter() - started) * 1000, 1)
        run = Run(tool, params, output, error, duration, call_id, timestamp)
        self.runs.append(run)
        return run

    def _bash(self, command: str) -> tuple[str, str | None]:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        output = cut(done.stdout.decode("utf-8", "replace").rstrip("\n"))
        if done.returncode != 0:
            return f"{output}\nExit code {done.returncode}".lstrip("\n"), f"exit code {done.returncode}"
        return output, None

    def _read(self, params: dict[str, Any]) -> tuple[str, str | None]:
        path = Path(params["file_path"])
        try:
            lines = path.read_text("utf-8", errors="replace").splitlines()
        except OSError as exc:
            return f"<tool_use_error>{exc.strerror}: {path}</tool_use_error>", exc.strerror or "error"
        start = max(int(params.get("offset") or 1), 1)
        limit = int(params.get("limit") or READ_MAX_LINES)
        chosen = lines[start - 1 : start - 1 + limit]
        numbered = [f"{n:>6}\t{line[:READ_MAX_LINE_CHARS]}" for n, line in enumerate(chosen, start)]
        return "\n".join(numbered), None

    def _grep(self, params: dict[str, Any]) -> tuple[str, str | None]:
        """GNU grep behind Claude Code's Grep tool's inputs; results sorted (a directory's order is the disk's)."""
        mode = params.get("output_mode", "files_with_matches")
        command = ["grep", "-rE", "--exclude-dir=.git", "--exclude-dir=__pycache__", "--binary-files=without-match"]
        command += ["-l"] if mode == "files_with_matches" else ["-n"]
        if params.get("-i"):
            command.append("-i")
        if params.get("glob"):
            command.append(f"--include={params['glob']}")
        command += ["--", params["pattern"], params.get("path") or "."]
        done = subprocess.run(command, cwd=self.root, capture_output=True, text=True, check=False, timeout=120)
        found = sorted({line.removeprefix("./") for line in done.stdout.splitlines() if line}, key=_grep_order)
        if mode == "files_with_matches":
            if not found:
                return "No files found", None
            return cut(f"Found {len(found)} file{'s' if len(found) != 1 else ''}\n" + "\n".join(found)), None
        return (cut("\n".join(found)) if found else "No matches found"), None


def _grep_order(line: str) -> tuple[str, int, str]:
    path, _, rest = line.partition(":")
    number, _, text = rest.partition(":")
    return (path, int(number), text) if number.isdigit() else (line, 0, "")


def cut(text: str, limit: int = BASH_MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n... [{len(text) - limit} characters truncated] ..."


def pair_of(run: Run) -> dict[str, Any]:
    pair: dict[str, Any] = {
        "tool_name": run.tool,
        "tool_call_id": run.call_id,
        "params": run.input,
        "result": run.output,
        "timestamp": run.timestamp,
        "duration_ms": run.duration_ms,
    }
    if run.error is not None:
        pair["error"] = run.error
    return pair


def bash(command: str, description: str) -> tuple[str, dict[str, Any]]:
    return "Bash", {"command": command, "description": description}


def grep_lines(output: str) -> list[tuple[str, int, str]]:
    """`path:line:text` lines of a content search."""
    found = []
    for line in output.splitlines():
        path, _, rest = line.partition(":")
        number, _, text = rest.partition(":")
        if number.isdigit():
            found.append((path, int(number), text))
    return found


def grep_files(output: str) -> list[str]:
    lines = output.splitlines()
    return (
        [line for line in lines[1:] if line and not line.startswith("...")] if lines[:1] != ["No files found"] else []
    )


# -- tasks ------------------------------------------------------------------------------------------------------------


class Tasks:
    """The scripted agent's tasks; each step's choice reads the real outputs of the steps before it."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"file_path": str(self.agent.root / path)}
        if offset is not None:
            params |= {"offset": offset, "limit": limit or 80}
        return "Read", params

    @staticmethod
    def grep(pattern: str, mode: str = "content", path: str | None = None, glob: str | None = None) -> Any:
        params: dict[str, Any] = {"pattern": pattern, "output_mode": mode}
        if mode == "content":
            params["-n"] = True
        if path:
            params["path"] = path
        if glob:
            params["glob"] = glob
        return "Grep", params

    def find_usage(self, symbol: str) -> None:
        a = self.agent
        a.prompt(f"Find where `{symbol}` is defined and how it is used across the code base.")
        [found] = a.act(
            "I'll start by searching for its definition.", self.grep(rf"(def|class) {symbol}\b", glob="*.py")
        )
        defined = sorted({p for p, _, _ in grep_lines(found.output)})
        home = defined[0] if defined else None
        if home:
            a.act("Found the definition. Reading the whole module for context.", self.read(home))
        [users] = a.act("Now every file that refers to it.", self.grep(rf"\b{symbol}\b", mode="files_with_matches"))
        others = [p for p in grep_files(users.output) if p != home]
        sources = [p for p in others if p.startswith("src/")][:2]
        tests = [p for p in others if p.startswith("tests/")][:1]
        if sources:
            a.act("Reading the main callers.", *[self.read(p) for p in sources])
        a.act(
            "Let me see the call sites with a little context around each.",
            bash(f"grep -rn -B2 -A8 '{symbol}(' src | head -220", f"Show call sites of {symbol}"),
        )
        if tests:
            a.act("And a test that exercises it.", self.read(tests[0]))
        if home:
            a.act(
                "Who changed the definition recently?",
                bash(f"git log --oneline -n 12 -- {home}", "Recent commits touching the module"),
            )
        a.say(
            f"`{symbol}` is defined in {home or 'no Python file'}; {len(others)} other files refer to it. "
            "The callers pass the request's identity through it before doing any work, and the tests pin its "
            "behaviour for missing and conflicting fields."
        )

    def run_tests(self, test_file: str, neighbours: Sequence[str]) -> None:
        a = self.agent
        a.prompt(f"Run the tests in `{test_file}` and look into any failure.")
        a.act("Listing the test directory first.", bash(f"ls -la {Path(test_file).parent}", "List test files"))
        [run] = a.act("Running the tests.", bash(f"python -m pytest {test_file} -q", "Run the tests"))
        if run.error is not None:
            a.act("There is a failure. Reading the test file.", self.read(test_file))
            modules = sorted(set(re.findall(r"^from (memhub\.[\w.]+) import", read_file(a.root / test_file), re.M)))
            paths = [f"src/{m.replace('.', '/')}.py" for m in modules]
            paths = [p for p in paths if (a.root / p).is_file()][:2]
            if paths:
                a.act("Reading the code under test.", *[self.read(p) for p in paths])
                names = sorted(set(re.findall(r"^(?:def|class) (\w+)", read_file(a.root / paths[0]), re.M)))[:6]
                if names:
                    a.act(
                        "Where are these used inside the package?",
                        self.grep("|".join(rf"\b{n}\b" for n in names), path="src", glob="*.py"),
                    )
            a.act(
                "Re-running only the failed tests, verbosely.",
                bash(f"python -m pytest {test_file} -q --lf -vv", "Re-run the failures"),
            )
            a.act("Is the change in the working tree?", bash("git status --short", "Working tree status"))
        a.act(
            "And the neighbouring tests, to be sure nothing else broke.",
            bash(f"python -m pytest {' '.join(neighbours)} -q", "Run neighbouring tests"),
        )
        a.say(
            "One assertion fails: the code under test disagrees with the expectation at its boundary. The other "
            "tests pass. The fix belongs in the implementation, not the test."
            if run.error is not None
            else "All the tests pass."
        )

    def history(self, path: str) -> None:
        a = self.agent
        a.prompt(f"Read the history of `{path}`: what changed recently and why?")
        a.act("The recent commits with their file stats.", bash(f"git log --stat -n 15 -- {path}", "Commit stats"))
        [log] = a.act(
            "All commits that touched it, one line each.",
            bash(f"git log --format='%h %ad %s' --date=short -- {path}", "One line per commit"),
        )
        hashes = [line.split()[0] for line in log.output.splitlines() if re.match(r"^[0-9a-f]{7,} ", line)]
        if len(hashes) > 1:
            a.act("Looking at one of the earlier changes in full.", bash(f"git show --stat {hashes[1]}", "Show commit"))
        a.act("The last two diffs.", bash(f"git log -p -n 2 -- {path}", "Recent diffs"))
        a.act("Now the file as it is.", self.read(path))
        a.act("Who wrote the top of the file?", bash(f"git blame -L 1,60 {path}", "Blame the first lines"))
        a.say(
            f"{path} changed in {len(hashes)} commits. The recent ones extend it rather than rework it; the "
            "diffs are additive and the top of the file is stable."
        )

    def docs(self, setting: str) -> None:
        a = self.agent
        a.prompt(f"What does the documentation say about `{setting}`, and does the code agree?")
        [pages] = a.act("Which pages mention it?", self.grep(setting, mode="files_with_matches", path="docs"))
        found = grep_files(pages.output)
        if found:
            a.act("Reading the main page about it.", self.read(found[0]))
        [code] = a.act("Now where the code reads it.", self.grep(setting, path="src", glob="*.py"))
        lines = grep_lines(code.output)
        if lines:
            path, line, _ = lines[0]
            a.act("The definition with its neighbours.", self.read(path, max(line - 40, 1), 120))
        a.act(
            "Every place the README and docs name a setting of the same family.",
            bash(f"grep -rn '{setting.rsplit('_', 1)[0]}' README.md docs | head -120", "Related settings in the docs"),
        )
        a.say(
            f"The documentation and the code agree on `{setting}`: the default, the accepted values and what "
            "it switches are described where the setting is defined."
        )

    def overview(self, package: str) -> None:
        a = self.agent
        a.prompt(f"Give me an overview of `{package}`: its modules and how they fit together.")
        a.act("Listing the modules.", bash(f"find {package} -name '*.py' | sort", "List modules"))
        [sizes] = a.act("How big is each?", bash(f"wc -l {package}/*.py | sort -n", "Module sizes"))
        a.act("Every top-level class and function.", self.grep(r"^(class|def) ", path=package, glob="*.py"))
        largest = [
            line.split()[1]
            for line in sizes.output.splitlines()
            if len(line.split()) == 2 and line.split()[1] != "total" and line.split()[0].isdigit()
        ][-2:]
        if largest:
            a.act("Reading the two largest modules.", *[self.read(p) for p in largest])
        a.act("The package's own description.", self.read(f"{package}/__init__.py"))
        a.say(
            f"{package} has a few modules; the two largest carry most of the logic, the rest are small helpers "
            "around them. The package docstring states its purpose."
        )


def read_file(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""


# -- planted bugs -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bug:
    """A one-spot change to the private copy, so that a test fails as it does on a real regression."""

    path: str
    before: str
    after: str

    def plant(self, root: Path) -> bool:
        target = root / self.path
        text = read_file(target)
        if text.count(self.before) != 1:
            return False  # the code moved on; the task then runs passing tests, and asks no failure questions
        target.write_text(text.replace(self.before, self.after), "utf-8")
        return True


@dataclass(frozen=True)
class Plan:
    name: str
    steps: tuple[tuple[str, tuple[Any, ...]], ...]
    bug: Bug | None = None


PLANS: dict[str, Plan] = {
    "gateway": Plan(
        "gateway",
        (
            ("find_usage", ("resolve_isolation",)),
            (
                "run_tests",
                ("tests/unit/test_tokenize.py", ("tests/unit/test_packing.py", "tests/unit/test_speakers.py")),
            ),
            ("history", ("src/memhub/settings.py",)),
            ("overview", ("src/memhub/proxy",)),
            ("find_usage", ("PipelineWorker",)),
            ("history", ("src/memhub/api/app.py",)),
            ("docs", ("MEMHUB_PROXY_CAPTURE",)),
            ("overview", ("src/memhub/api/routes",)),
            ("find_usage", ("ProxyService",)),
            ("history", ("src/memhub/proxy/service.py",)),
            ("overview", ("src/memhub/context",)),
            ("find_usage", ("RecallService",)),
            ("history", ("src/memhub/runtime.py",)),
        ),
        Bug("src/memhub/index/tokenize.py", "[:MAX_QUERY_TERMS]", "[: MAX_QUERY_TERMS + 1]"),
    ),
    "pipeline": Plan(
        "pipeline",
        (
            ("overview", ("src/memhub/pipeline",)),
            ("run_tests", ("tests/pipeline/test_schedule.py", ("tests/unit/test_followup.py",))),
            ("find_usage", ("ChatClient",)),
            ("history", ("src/memhub/store/sqlite/store.py",)),
            ("find_usage", ("build_hub",)),
            ("overview", ("src/memhub/retrieval",)),
            ("docs", ("MEMHUB_PIPELINE_IDLE_SECONDS",)),
            ("find_usage", ("OfflineExtractor",)),
            ("history", ("src/memhub/pipeline/worker.py",)),
            ("overview", ("src/memhub/meta",)),
            ("docs", ("MEMHUB_EMBEDDING_PROVIDER",)),
            ("find_usage", ("ConversationService",)),
            ("history", ("src/memhub/pipeline/llm_stages.py",)),
        ),
        Bug("src/memhub/pipeline/schedule.py", "memories_since_persona >= every", "memories_since_persona > every"),
    ),
}
QUICK_STEPS = 3  # a quick run keeps each plan's first tasks


# -- questions --------------------------------------------------------------------------------------------------------


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def candidates(pair: dict[str, Any], root: str) -> list[Question]:
    """Every question a tool pair's result can answer, before the filters (see the module's docstring)."""
    tool, params, result = pair["tool_name"], pair["params"], str(pair["result"])
    source = pair["tool_call_id"]
    found: list[tuple[str, str, str, str]] = []  # kind, text, key, answer
    if tool == "Grep" and params.get("output_mode") == "content":
        pattern, key = params["pattern"], search_key(params)
        for path, _, text in grep_lines(result):
            snippet = text.strip()[:60]
            if len(snippet) >= 12:
                found.append(
                    ("search_path", f"Which file did the search for `{pattern}` find `{snippet}` in?", key, path)
                )
    elif tool == "Grep":
        pattern, key = params["pattern"], search_key(params)
        files = grep_files(result)
        by_dir: dict[str, list[str]] = {}
        for path in files:
            by_dir.setdefault(path.rsplit("/", 1)[0] if "/" in path else ".", []).append(path)
        for directory, paths in by_dir.items():
            if len(paths) == 1:
                text = f"Which file in `{directory}/` did the search for `{pattern}` list?"
                found.append(("search_path", text, key, paths[0]))
    elif tool == "Read":
        path = str(params["file_path"]).removeprefix(root.rstrip("/") + "/")
        name = _basename(path)
        for line in result.splitlines():
            number, _, code = line.partition("\t")
            m = re.match(r"(?:async )?(def|class) (\w+)", code)
            if m and number.strip().isdigit():
                what = "function" if m.group(1) == "def" else "class"
                text = f"Which {what} is defined at line {number.strip()} of `{path}`?"
                found.append(("defined_name", text, name, m.group(2)))
    elif tool == "Bash":
        command = str(params["command"])
        if "pytest" in command:
            target = next((w for w in command.split() if w.endswith(".py")), "")
            key = _basename(target)
            for m in re.finditer(r"^FAILED [^\s:]+::(\w+)", result, re.M):
                found.append(("failing_test", f"Which test failed when running `{command}`?", key, m.group(1)))
            for m in re.finditer(r"^E\s+(?:AssertionError: )?(assert .{6,80})$", result, re.M):
                text = f"Which assertion failed when running `{command}`?"
                found.append(("assertion", text, key, m.group(1).strip()))
            for m in re.finditer(r"\b(\d+ passed)\b", result):
                found.append(("passed_count", f"How many tests passed when running `{command}`?", key, m.group(1)))
        if command.startswith("git log") and "--" in command.split():
            path = command.split()[-1]
            for line in result.splitlines():
                m = re.match(r"^([0-9a-f]{7,12}) (?:\d{4}-\d\d-\d\d )?(.{12,})$", line)
                if m and ("--oneline" in command or "--format" in command):
                    subject = m.group(2)[-70:]
                    text = f"What is the short hash of the commit “{subject}” in the history of `{path}`?"
                    found.append(("commit_hash", text, _basename(path), m.group(1)))
    return [
        Question(_question_id(source, kind, answer), kind, text, key, answer, source)
        for kind, text, key, answer in found
    ]


_KEYWORDS = frozenset({"class", "def", "async", "import", "from", "return"})


def search_key(params: dict[str, Any]) -> str:
    """The word an agent would know a search by: the pattern's first identifier (4+ characters, not a keyword),
    else the searched directory's name."""
    pattern = re.sub(r"\\[bBdDwWsS]", " ", str(params.get("pattern", "")))
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", pattern):
        if word not in _KEYWORDS:
            return word
    return _basename(str(params.get("path") or "."))


def _question_id(source: str, kind: str, answer: str) -> str:
    return hashlib.sha256(f"{source}\0{kind}\0{answer}".encode()).hexdigest()[:12]


def outside_results(messages: Sequence[dict[str, Any]]) -> str:
    """Everything in the conversation that is not a tool result: prompts, the agent's text, tool-call inputs."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                parts.append(block["text"])
            elif block.get("type") == "tool_use":
                parts.append(json.dumps(block["input"], ensure_ascii=False))
                parts.extend(str(v) for v in block["input"].values())
    return "\n".join(parts)


def choose_questions(
    pairs: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
    root: str,
    per_result: int = QUESTIONS_PER_RESULT,
) -> list[Question]:
    """The kept candidates (answer long enough, only in tool results), at most `per_result` per pair, by a fixed
    hash order so that the choice does not follow the output's order; one question per distinct answer."""
    elsewhere = outside_results(messages)
    chosen: list[Question] = []
    answers: set[str] = set()
    for pair in pairs:
        kept = [
            q
            for q in candidates(pair, root)
            if len(q.answer) >= MIN_ANSWER_CHARS and q.answer not in elsewhere and q.answer not in answers
        ]
        unique = {q.answer: q for q in sorted(kept, key=lambda q: q.id)}
        # One of each kind first, then the rest, so a result with many names still yields a failing test or a count.
        by_kind: dict[str, list[Question]] = {}
        for q in unique.values():
            by_kind.setdefault(q.kind, []).append(q)
        ordered = [qs[0] for qs in by_kind.values()] + [q for qs in by_kind.values() for q in qs[1:]]
        for q in ordered[:per_result]:
            chosen.append(q)
            answers.add(q.answer)
    return chosen


# -- retention ------------------------------------------------------------------------------------------------------

# A reference to an offloaded result, as compaction writes it into the stand-in for a result it took out.
REF = re.compile(r"offload/[^\s;()\[\]\"'`<>]+?/refs/[^\s;()\[\]\"'`<>]+")
REF_CONTEXT_CHARS = 2_000  # a text up to this long is read whole as a ref's context, a longer one around the ref
REF_WINDOW_CHARS = 400


def refs_in(text: str) -> list[str]:
    return [m.group(0).rstrip(".,:") for m in REF.finditer(text)]


def ref_contexts(messages: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Every result_ref in the messages, with what an agent reads about it: the text that names it (the stand-in
    for a result, or the lines around it in a long text such as a task graph) and, for a stand-in, the tool call
    it answers (name and input), when that call is still in the messages."""
    calls: dict[str, str] = {}
    for message in messages:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (
                    f"{block.get('name', '')} {json.dumps(block.get('input'), ensure_ascii=False)}"
                )
    found: dict[str, list[str]] = {}

    def note(text: str, call_id: str | None) -> None:
        for m in REF.finditer(text):
            ref = m.group(0).rstrip(".,:")
            if len(text) <= REF_CONTEXT_CHARS:
                around = text
            else:
                around = text[max(0, m.start() - REF_WINDOW_CHARS) : m.end() + REF_WINDOW_CHARS]
            found.setdefault(ref, []).append(around)
            if call_id is not None and call_id in calls:
                found[ref].append(calls[call_id])

    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            note(content, None)
            continue
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                note(str(block.get("text", "")), None)
            elif block.get("type") == "tool_result":
                note(result_text(block.get("content")), str(block.get("tool_use_id")))
    return {ref: "\n".join(parts) for ref, parts in found.items()}


@dataclass(frozen=True)
class Verdict:
    """Whether a question is answerable from a compacted context: `how` is "context", "read_ref" or "lost"."""

    how: str
    refs_read: int = 0

    @property
    def retained(self) -> bool:
        return self.how != "lost"


def judge(
    question: Question,
    messages: Sequence[dict[str, Any]],
    read_ref: Callable[[str], str],
    contexts: dict[str, str] | None = None,
    text: str | None = None,
) -> Verdict:
    """Retained when the answer is in the compacted messages, or in what read-ref returns for a ref whose context
    (see `ref_contexts`) mentions the question's key term (case-insensitively): the refs an agent looking for
    that pair would read back, one call each."""
    text = context_text(messages) if text is None else text
    if question.answer in text:
        return Verdict("context")
    contexts = ref_contexts(messages) if contexts is None else contexts
    key = question.key.lower()
    read = 0
    for ref, around in contexts.items():
        if key in around.lower():
            read += 1
            if question.answer in read_ref(ref):
                return Verdict("read_ref", read)
    return Verdict("lost", read)


def context_text(messages: Sequence[dict[str, Any]]) -> str:
    return "\n".join(message_text(m) for m in messages)


# -- the run ----------------------------------------------------------------------------------------------------------


def checkout(rev: str, root: Path, source: Path = REPO) -> None:
    """A private clone of `source` at `rev` in `root` (replaced if present), with its history for git log."""
    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    quiet = {"check": True, "capture_output": True}
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(source), str(root)], **quiet)  # type: ignore[call-overload]
    subprocess.run(["git", "-C", str(root), "checkout", "--quiet", "--detach", rev], **quiet)  # type: ignore[call-overload]


def resolve_rev(rev: str, source: Path = REPO) -> str:
    done = subprocess.run(["git", "-C", str(source), "rev-parse", rev], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def tool_env(python: str) -> dict[str, str]:
    """A small, fixed environment: commands print the same way on every machine."""
    path = os.pathsep.join([str(Path(python).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "PATH": path,
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "COLUMNS": "120",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "PYTHONPATH": "src",  # the copy's own code, not the installed package
        "PYTHONDONTWRITEBYTECODE": "1",
        "TZ": "UTC",
    }


def workspace(rev: str, name: str) -> Path:
    """A fixed directory per commit and plan, so that paths in the outputs are the same on every run."""
    return Path(tempfile.gettempdir()) / "memhub-offload-trajectories" / f"{rev[:12]}-{name}"


def generate(plan: Plan, rev: str, python: str = sys.executable, quick: bool = False, keep: bool = False) -> Trajectory:
    """Run `plan`'s tasks on a fresh copy of the repository at `rev`; the copy is removed after unless `keep`."""
    root = workspace(rev, plan.name)
    checkout(rev, root)
    try:
        planted = (
            f"{plan.bug.path}: {plan.bug.before} → {plan.bug.after}" if plan.bug and plan.bug.plant(root) else None
        )
        agent = Agent(plan.name, root, tool_env(python))
        tasks = Tasks(agent)
        for method, args in plan.steps[:QUICK_STEPS] if quick else plan.steps:
            getattr(tasks, method)(*args)
        pairs = [p for call in agent.calls for p in call.pairs]
        questions = choose_questions(pairs, agent.messages, str(root))
        return agent.trajectory(rev, questions, planted)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def generate_all(
    rev: str = "HEAD", python: str = sys.executable, quick: bool = False, plans: Sequence[str] | None = None
) -> list[Trajectory]:
    sha = resolve_rev(rev)
    names = plans or (["gateway"] if quick else list(PLANS))
    return [generate(PLANS[n], sha, python, quick) for n in names]


def load_or_generate(
    path: Path | None, rev: str, python: str, quick: bool, log: Callable[[str], None] = print
) -> list[Trajectory]:
    """Trajectories from `path` when it exists and is of this commit and size, else generated (and saved there)."""
    sha = resolve_rev(rev)
    if path is not None and path.exists():
        saved = json.loads(path.read_text("utf-8"))
        if saved.get("rev") == sha and saved.get("quick") == quick and saved.get("generator") == generator_digest():
            log(f"trajectories: {path} (commit {sha[:12]})")
            return [Trajectory.from_json(t) for t in saved["trajectories"]]
    started = time.monotonic()
    trajectories = generate_all(sha, python, quick)
    log(f"trajectories: generated at {sha[:12]} in {time.monotonic() - started:.0f} s")
    if path is not None:
        save(path, trajectories, sha, quick)
    return trajectories


def generator_digest() -> str:
    """This file's digest: a saved trajectory is reused only when the code that made it is unchanged."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def save(path: Path, trajectories: Sequence[Trajectory], rev: str, quick: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "rev": rev,
        "quick": quick,
        "generator": generator_digest(),
        "trajectories": [asdict(t) for t in trajectories],
    }
    path.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")


def describe(trajectory: Trajectory) -> str:
    kinds: dict[str, int] = {}
    for q in trajectory.questions:
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    pairs = sum(len(c.pairs) for c in trajectory.calls)
    return (
        f"{trajectory.name}: {len(trajectory.tasks)} tasks, {len(trajectory.calls)} model calls, {pairs} tool pairs, "
        f"{len(trajectory.messages)} messages, {context_tokens(trajectory.messages):,} tokens; "
        f"{len(trajectory.questions)} questions {dict(sorted(kinds.items()))}; planted bug: {trajectory.planted_bug}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default="HEAD", help="the commit of this repository the agent works on")
    parser.add_argument("--quick", action="store_true", help="one plan, its first tasks")
    parser.add_argument("--python", default=sys.executable, help="the interpreter the agent's `python` runs")
    parser.add_argument("--out", type=Path, help="write the trajectories as JSON")
    parser.add_argument("--questions", action="store_true", help="print every question")
    args = parser.parse_args(argv)
    sha = resolve_rev(args.rev)
    trajectories = generate_all(sha, args.python, args.quick)
    for trajectory in trajectories:
        print(describe(trajectory))
        if args.questions:
            for q in trajectory.questions:
                print(f"  [{q.kind}] {q.text}  key={q.key!r}  answer={q.answer!r}")
    if args.out:
        save(args.out, trajectories, sha, args.quick)
        print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
