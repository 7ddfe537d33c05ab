"""The offline summary stage (L1): each tool result in at most 200 characters, and how safely that can stand in.

A summary keeps what the agent needs later and drops how the tool said it: the error first (an `error` field,
the last line of a traceback, `FAILED …` and `error:` lines), the exit status of a command, counts ("12 passed,
1 failed", "43 matches in 12 files", "8 commits"), file paths, and the names a file defines. What is read
depends on the call's action (`toolcall.classify`): hits and files for a search, entries for a listing,
commits / changed files for git, definitions for a file read, the first and last lines of anything else.

Score, replaceability 0–10 (how safely the summary can replace the result in a prompt), the first rule that
applies:
- 0 when the result is no longer than its summary, 1 when it is short (≤ 500 characters): nothing to save;
- 2 for a failure the agent is still working on (an `error`, a non-zero exit status, a traceback, failing
  tests, error lines from a command or an edit), 3 when that output is long (> 4,000 characters);
- 5 for a file read, 6 past 20,000 characters: the agent may need lines verbatim, but can read them back;
- 8 for search hits, listings, git output, passing tests, successful edits and commands, 6 for other tools'
  results; one more past 4,000 characters and one more past 20,000, at most 10.

Work is bounded: a long result is read in a window of its first and last 32,000 characters (its size and line
count are still of the whole), with a handful of compiled patterns, so a megabyte costs about what 64 KB does.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memhub.model.offload import SUMMARY_MAX_CHARS, PairSummary, RecentTurn, ToolPair
from memhub.offload.toolcall import Action, classify, render_call

__all__ = ["ExtractiveSummarizer", "flatten_result", "outline", "reads_as_failure", "score_of", "summarize_pair"]

SHORT_RESULT_CHARS = 500
LONG_RESULT_CHARS = 4_000
HUGE_RESULT_CHARS = 20_000
WINDOW_CHARS = 32_000  # read from each end of a long result
_MAX_DEPTH = 6  # nesting followed when flattening a JSON result
_LINE_CHARS = 120  # one quoted line (an error, a headline) in a summary
_END_CHARS = 4_000  # where the first and last lines of an output are looked for
_FAILURE_LINES = 4
_MAX_SCANNED_LINES = 64  # matches looked at for counts and paths
_LISTED = 4  # names listed after a count
_READ_PATH_CHARS = 48  # a read's path in its summary, so that the names it defines have room

# Failures matter in the output of commands and edits; in a search hit or a file an "Error:" is just content.
_FAILURE_SCANNED: frozenset[Action] = frozenset({"test", "run", "vcs", "edit", "other"})
# The fields of a result object that hold its output (text or content blocks); other objects are data.
_TEXT_KEYS = ("stdout", "output", "content", "text", "result", "message")
_STATUS_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "exit_status", "status_code")

_SPACES = re.compile(r"\s+")
_SEPARATOR = re.compile(r"^[\s=\-_*#~.+|`]*$")
_EXIT = re.compile(
    r"\b(?:exit(?:ed)?(?:[ _]with)?[ _]?(?:code|status)?|return[ _]?code|returncode)\s*[:=]?\s*\(?(-?\d{1,3})\b",
    re.IGNORECASE,
)
_TRACEBACK = "Traceback (most recent call last):"
_FRAME_LINES = (_TRACEBACK, 'File "')  # a traceback is read whole by _failure_lines
_FRAME = re.compile(r'^[ \t]*File "([^"]+)", line (\d+)(?:, in (\S+))?', re.MULTILINE)
# Patterns for a word on a line, not the whole line: `^[^\n]*word` backtracks over every line of a long log.
_FAILED_WORD = re.compile(r"\bFAILED\b|\bFAIL\b|--- FAIL|✗|✘")
_ERROR_WORD = re.compile(r"(?:[Ee]rror|Exception)(?:\[[\w-]+\])?:|\bERROR\b|fatal:|panic:|npm ERR!")
_PYTEST_DETAIL = re.compile(r"^E\s+")  # pytest's prefix of an assertion's explanation
_COUNTS_WORD = re.compile(r"\b\d+ (?:passed|failed)\b")
_COUNTS_TAIL_CHARS = 8_000  # test runners print their counts last
_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b")
_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_HIT = re.compile(r"^([^\s:][^:\n]*):(\d+):", re.MULTILINE)
_NO_MATCHES = re.compile(r"^\s*(?:no (?:matches|files|results)(?: found)?|found 0 \w+)", re.IGNORECASE)
_LOOKS_LIKE_PATH = re.compile(r"^\.{0,2}/?[\w@+.-]+(?:/[\w@+.-]+)*/?$")
_COMMIT = re.compile(r"^commit ([0-9a-f]{7,40})\b", re.MULTILINE)
_ONELINE_COMMIT = re.compile(r"^(?:[*|\\/ ]+)?([0-9a-f]{7,12}) (?:\([^)]*\) )?(.+)$", re.MULTILINE)
_COMMITTED = re.compile(r"^\[[\w./-]+(?: \(root-commit\))? ([0-9a-f]{7,12})\] .+$", re.MULTILINE)
_BRANCH = re.compile(r"^On branch (\S+)", re.MULTILINE)
_STATUS_ENTRY = re.compile(r"^[ \t]*(modified|new file|deleted|renamed):\s+(.+)$", re.MULTILINE)
_DIFF_FILE = re.compile(r"^diff --git a/(\S+)", re.MULTILINE)
_LINE_NUMBER = re.compile(r"^[ \t]*\d+(?:\t|→|:\s|\|\s?)", re.MULTILINE)
_DEFINITION_BODY = (
    r"(?:export\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:public\s+|private\s+|protected\s+|static\s+|abstract\s+)*"
    r"(?:async\s+)?(?:def|class|function|func|fn|interface|struct|enum|trait|type|impl)\s+([A-Za-z_$][\w$]*)"
)
_DEFINITION = re.compile(r"^[ \t]*" + _DEFINITION_BODY, re.MULTILINE)
_LONG_LISTING = re.compile(r"^[dlcbps-][rwxsStT-]{9}[@+.]?\s")
_HEADING = re.compile(r"^#{1,3}\s+(.+)$", re.MULTILINE)
# A definition or a heading on a line of a file read, with the line's number when the reader printed one
# (`cat -n` and Claude Code's Read: "  12\t…", "12→…").
_NUMBERED = r"^(?:[ \t]*(\d+)(?:\t|→))?"
_OUTLINE_DEFINITION = re.compile(_NUMBERED + r"([ \t]*)" + _DEFINITION_BODY, re.MULTILINE)
_OUTLINE_HEADING = re.compile(_NUMBERED + r"#{1,3}\s+(\S.*)$", re.MULTILINE)
_OUTLINE_NAME_CHARS = 60
_PATH = re.compile(
    r"(?<![\w/.:-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]*\w"
    r"|(?<![\w/.:-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|md|rst|txt|"
    r"json|ya?ml|toml|ini|cfg|sh|sql|html|css|vue|lock)\b"
)
_FAILURE_WORDS = re.compile(
    r"\w*(?:error|exception)s?\b|\b(?:failed|failing|failures?|traceback|fatal|panic|blocked)\b|\bexit (?:code )?[1-9]|"
    r"失败|错误|报错|异常",
    re.IGNORECASE,
)
_NOT_FAILURE = re.compile(r"\b(?:0|no|zero|without) (?:errors?|failed|failures?)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Result:
    """What one result reads as: the window analysed, with the size and line count of the whole."""

    text: str
    size: int
    lines: int
    windowed: bool
    exit_status: int | None


class ExtractiveSummarizer:
    """Summarizer without a model: reads each result by its call's action (see the module docstring)."""

    def summarize(self, pairs: Sequence[ToolPair], context: Sequence[RecentTurn]) -> list[PairSummary]:
        """One summary per pair, in order (the recent turns are not needed offline)."""
        return [summarize_pair(pair) for pair in pairs]


def summarize_pair(pair: ToolPair) -> PairSummary:
    """The offline summary of one tool pair."""
    action = classify(pair.tool_name, pair.params)
    result = _read(pair.result, action)
    facts, failed = _facts(pair, action, result)
    summary = _pack(facts) or "(no output)"
    return PairSummary(
        tool_call_id=pair.tool_call_id,
        tool_call=render_call(pair.tool_name, pair.params),
        summary=summary,
        score=score_of(action, result.size, len(summary), failed),
        timestamp=pair.timestamp,
    )


def score_of(action: Action, size: int, summary_chars: int, failed: bool) -> int:
    """Replaceability 0–10 of a result of `size` characters (the rule is in the module docstring)."""
    if size <= summary_chars:
        return 0
    if size <= SHORT_RESULT_CHARS:
        return 1
    if failed:
        return 3 if size > LONG_RESULT_CHARS else 2
    if action == "read":
        return 6 if size > HUGE_RESULT_CHARS else 5
    base = 6 if action == "other" else 8
    return min(10, base + (size > LONG_RESULT_CHARS) + (size > HUGE_RESULT_CHARS))


def outline(result: str, max_chars: int) -> str:
    """A file read's definitions (else its headings) with their line numbers, in at most `max_chars`.

    "12 _pick, 30 resolve_isolation, …": what the file holds and where, so that an agent whose summary stands in
    for the file knows which lines to read back. When not all fit, nested definitions (methods) go first, then
    the tail of the list. "" when the text defines nothing.
    """
    text = result if len(result) <= 2 * WINDOW_CHARS else f"{result[:WINDOW_CHARS]}\n{result[-WINDOW_CHARS:]}"
    found = [(m.group(1), m.group(3), not m.group(2)) for m in _OUTLINE_DEFINITION.finditer(text)]
    if not found:
        found = [(m.group(1), m.group(2).strip(), True) for m in _OUTLINE_HEADING.finditer(text)]
    items = [f"{number} {_cut(name, _OUTLINE_NAME_CHARS)}" if number else name for number, name, _ in found]
    shown = ", ".join(items)
    if len(shown) > max_chars:
        top = [item for item, (_, _, top_level) in zip(items, found, strict=True) if top_level]
        shown = _listed_within(top or items, len(items), max_chars)
    return shown


def _listed_within(items: Sequence[str], total: int, max_chars: int) -> str:
    """`items` joined while they fit `max_chars`, with how many of the `total` are left out."""
    out: list[str] = []
    used = 0
    for item in items:
        rest = f" (+{total - len(out) - 1} more)" if len(out) + 1 < total else ""
        if used + len(item) + 2 + len(rest) > max_chars:
            break
        out.append(item)
        used += len(item) + 2
    left = total - len(out)
    return ", ".join(out) + (f" (+{left} more)" if left else "")


def reads_as_failure(summary: str) -> bool:
    """Whether a summary (ours or a model's) reports an error or a failing check."""
    return _FAILURE_WORDS.search(_NOT_FAILURE.sub("", summary)) is not None


def flatten_result(result: Any, depth: int = 0) -> str:
    """A tool result (any JSON) as text: strings as they are, the text of content blocks, the output fields of
    an object (stdout, stderr, content …), anything else as compact JSON."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if depth >= _MAX_DEPTH:
        return _json(result)
    if isinstance(result, list):
        if result and all(isinstance(item, dict) and isinstance(item.get("type"), str) for item in result):
            return "\n".join(_block_text(block, depth) for block in result)
        if all(isinstance(item, str) for item in result):
            return "\n".join(result)
        return _json(result)
    if isinstance(result, dict):
        parts = [flatten_result(result[k], depth + 1) for k in _output_keys(result)]
        stderr = result.get("stderr")
        if isinstance(stderr, str) and stderr.strip():
            parts.append(f"stderr: {stderr}")
        error = result.get("error")
        if isinstance(error, str) and error.strip():
            parts.insert(0, f"error: {error}")
        return "\n".join(parts) if parts else _json(result)
    return _json(result)


# -- reading a result ----------------------------------------------------------------------------------------------


def _read(result: Any, action: Action) -> _Result:
    text = flatten_result(result)
    size = len(text)
    windowed = size > 2 * WINDOW_CHARS
    window = f"{text[:WINDOW_CHARS]}\n{text[-WINDOW_CHARS:]}" if windowed else text
    status = _status_field(result)
    if status is None and action in ("test", "run", "vcs"):
        tail = window[-2_000:]
        matches = list(_EXIT.finditer(tail))
        status = int(matches[-1].group(1)) if matches else None
    return _Result(window, size, text.count("\n") + 1 if text else 0, windowed, status)


def _status_field(result: Any) -> int | None:
    if isinstance(result, dict):
        for key in _STATUS_KEYS:
            value = result.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _facts(pair: ToolPair, action: Action, result: _Result) -> tuple[list[str], bool]:
    """The summary's facts, most important first, and whether the result is a failure."""
    text = result.text
    facts: list[str] = []
    if pair.error:
        facts.append("error: " + _headline(pair.error))
    status = result.exit_status
    failed = bool(pair.error) or (status is not None and status != 0) or _error_object(pair.result)
    if status is not None:
        facts.append(f"exit {status}")
    counts, failing = _test_counts(text)
    if counts and action in ("test", "run", "other"):
        facts.append(counts)
        failed = failed or failing
    if action in _FAILURE_SCANNED:
        errors = _failure_lines(text)
        failed = failed or bool(errors)
        facts.extend(errors)
    if not text.strip():
        if not pair.error:
            facts.append("no output")
        return facts, failed
    facts.extend(_ACTION_FACTS[action](pair, result))
    if action in _FAILURE_SCANNED and action != "test":  # a test log names every test file it ran
        said = " ".join(facts)
        facts.append(_paths(text, said))
    return facts, failed


def _failure_lines(text: str) -> list[str]:
    """The lines that say what failed: a traceback's exception and frame, FAILED lines, then error lines."""
    found: list[str] = []
    start = text.rfind(_TRACEBACK)
    if start >= 0:
        block = text[start + len(_TRACEBACK) :]
        frames = list(_FRAME.finditer(block[:20_000]))
        after = block[frames[-1].end() :] if frames else block
        exception = next((ln.strip() for ln in after.splitlines() if ln[:1].strip()), "")
        if exception:
            found.append(_cut(exception, _LINE_CHARS))
        if frames:
            path, line, func = frames[-1].groups()
            found.append(f"at {path}:{line}" + (f" in {func}" if func else ""))
    found.extend(_lines_with(_FAILED_WORD, text, _FAILURE_LINES))
    found.extend(_PYTEST_DETAIL.sub("", line) for line in _lines_with(_ERROR_WORD, text, _FAILURE_LINES))
    return list(dict.fromkeys(_cut(line, _LINE_CHARS) for line in found if line))[:_FAILURE_LINES]


def _test_counts(text: str) -> tuple[str | None, bool]:
    """("12 passed, 1 failed", failing) from the last line that counts tests; (None, False) without one."""
    tail = text[-_COUNTS_TAIL_CHARS:]
    lines = _lines_with(_COUNTS_WORD, tail, _MAX_SCANNED_LINES)
    if lines:
        counts = _COUNT.findall(lines[-1])
        failing = any(int(n) > 0 and word.startswith(("failed", "error")) for n, word in counts)
        return ", ".join(f"{n} {word}" for n, word in counts), failing
    ran = _RAN.findall(text)
    return (f"ran {ran[-1]} tests", False) if ran else (None, False)


def _search_facts(pair: ToolPair, result: _Result) -> list[str]:
    text = result.text
    if _NO_MATCHES.match(text):
        return ["no matches"]
    hits = _HIT.findall(text)
    more = "≥" if result.windowed else ""
    if hits:
        files = list(dict.fromkeys(path for path, _ in hits))
        plural = "es" if len(hits) != 1 else ""
        return [f"{more}{len(hits)} match{plural} in {more}{len(files)} file{_s(files)}", _listed(files)]
    lines = _meaningful(text)
    paths = [ln for ln in lines if _LOOKS_LIKE_PATH.match(ln)]
    if paths and len(paths) * 2 >= len(lines):
        return [f"{more}{len(paths)} file{_s(paths)}", _listed(paths)]
    return [f"{result.lines} lines", *_ends(text)]


def _list_facts(pair: ToolPair, result: _Result) -> list[str]:
    lines = [ln for ln in _meaningful(result.text) if not ln.startswith("total ")]
    if len(lines) == 1:
        lines = lines[0].split()
    names = [_entry_name(ln) for ln in lines]
    names = [n for n in names if n]
    more = "≥" if result.windowed else ""
    return [f"{more}{len(names)} entr{'y' if len(names) == 1 else 'ies'}", _listed(names)]


def _vcs_facts(pair: ToolPair, result: _Result) -> list[str]:
    text = result.text
    commits = _COMMIT.findall(text)
    if commits:
        subject = next((ln.strip() for ln in text.splitlines() if ln.startswith("    ") and ln.strip()), "")
        return [f"{len(commits)} commit{_s(commits)}", f"latest {commits[0][:7]} {subject}".strip()]
    committed = _COMMITTED.search(text)
    if committed:
        return [committed.group()]
    lines = _meaningful(text)
    oneline = [m for m in _ONELINE_COMMIT.finditer(text)]
    if lines and len(oneline) * 2 >= len(lines):
        first = oneline[0]
        return [f"{len(oneline)} commit{_s(oneline)}", f"latest {first.group(1)} {first.group(2)}"]
    facts: list[str] = []
    branch = _BRANCH.search(text)
    if branch:
        facts.append(f"branch {branch.group(1)}")
    changes: dict[str, list[str]] = {}
    for kind, path in _STATUS_ENTRY.findall(text):
        changes.setdefault(kind, []).append(path.strip())
    facts.extend(f"{kind}: {_listed(list(dict.fromkeys(paths)))}" for kind, paths in changes.items())
    diffed = _DIFF_FILE.findall(text)
    if diffed:
        added = sum(1 for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(1 for ln in text.splitlines() if ln.startswith("-") and not ln.startswith("---"))
        facts += [f"diff of {len(diffed)} file{_s(diffed)} (+{added} -{removed})", _listed(diffed)]
    return facts or _ends(text)


def _read_facts(pair: ToolPair, result: _Result) -> list[str]:
    text = _LINE_NUMBER.sub("", result.text)
    # A path's end names the file; its start is the same checkout in every read.
    keys = ("file_path", "filePath", "path", "notebook_path", "filename", "file", "url")
    path = _param_text(pair.params, *keys, limit=0)
    if len(path) > _READ_PATH_CHARS:
        path = "…" + path[-(_READ_PATH_CHARS - 1) :]
    count = f"{result.lines} line{'' if result.lines == 1 else 's'}"
    facts = [f"{path}: {count}" if path else count]
    names = list(dict.fromkeys(_DEFINITION.findall(text)))
    headings = _HEADING.findall(text)
    if names:
        facts.append("defines " + _listed(names, 6))
    elif headings:
        facts.append("sections: " + _listed([h.strip() for h in headings]))
    else:
        facts.extend(_ends(text))
    return facts


def _edit_facts(pair: ToolPair, result: _Result) -> list[str]:
    path = _param_text(pair.params, "file_path", "filePath", "path", "notebook_path", "filename", "file")
    verb = "wrote" if "write" in pair.tool_name.lower() or "create" in pair.tool_name.lower() else "edited"
    said = _first_sentence(result.text)
    if path and path in said:
        said = ""  # the tool's confirmation ("The file … has been updated") says nothing more
    return [f"{verb} {path}" if path else "", said]


def _test_facts(pair: ToolPair, result: _Result) -> list[str]:
    # The counts and failing tests are already facts; without counts, the output's ends are what is left.
    return [] if _test_counts(result.text)[0] else _ends(result.text)


def _run_facts(pair: ToolPair, result: _Result) -> list[str]:
    return _ends(result.text)


def _other_facts(pair: ToolPair, result: _Result) -> list[str]:
    value = pair.result
    if isinstance(value, dict) and not _output_keys(value):
        return [_fields(value)]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [f"{len(value)} item{_s(value)}", "first: " + _fields(value[0])]
    return _ends(result.text)


_ACTION_FACTS = {
    "read": _read_facts,
    "search": _search_facts,
    "list": _list_facts,
    "edit": _edit_facts,
    "test": _test_facts,
    "run": _run_facts,
    "vcs": _vcs_facts,
    "other": _other_facts,
}


# -- small helpers -------------------------------------------------------------------------------------------------


def _pack(facts: Sequence[str], limit: int = SUMMARY_MAX_CHARS) -> str:
    """Facts joined with "; " in order while they fit; the one that does not fit is cut if enough room is left."""
    out = ""
    for raw in facts:
        fact = _one_line(raw)
        if not fact or fact in out:
            continue
        separator = "; " if out else ""
        room = limit - len(out) - len(separator)
        if len(fact) <= room:
            out += separator + fact
            continue
        if room >= 24 or not out:
            out += separator + _cut(fact, room)
        break
    return out


def _headline(text: str) -> str:
    """The line of an error text that says what went wrong: a traceback's exception, else its first line."""
    if _TRACEBACK in text:
        failure = _failure_lines(text[-2 * WINDOW_CHARS :])
        if failure:
            return failure[0]
    lines = _meaningful(text[:WINDOW_CHARS])
    return _cut(lines[0], _LINE_CHARS) if lines else ""


def _output_keys(result: dict[str, Any]) -> list[str]:
    return [k for k in _TEXT_KEYS if isinstance(result.get(k), str | list) and result[k]]


def _error_object(result: Any) -> bool:
    return isinstance(result, dict) and (result.get("is_error") is True or bool(result.get("error")))


def _meaningful(text: str) -> list[str]:
    """The lines that say something, without the rules (`=====`, `_____`) that frame them in test output."""
    return [s for s in (ln.strip().strip("=_").strip() for ln in text.splitlines()) if s and not _SEPARATOR.match(s)]


def _ends(text: str) -> list[str]:
    """The first and the last meaningful line (where output says what it is and how it ended)."""
    head = [ln for ln in _meaningful(text[:_END_CHARS]) if not ln.startswith(_FRAME_LINES)]
    tail = [ln for ln in _meaningful(text[-_END_CHARS:]) if not ln.startswith(_FRAME_LINES)]
    if not head:
        return []
    first, last = _cut(head[0], _LINE_CHARS), _cut(tail[-1], _LINE_CHARS)
    return [first] if first == last else [first, last]


def _lines_with(pattern: re.Pattern[str], text: str, limit: int) -> list[str]:
    """The distinct lines, in order and at most `limit`, on which `pattern` matches."""
    found: list[str] = []
    position = 0
    while len(found) < limit:
        match = pattern.search(text, position)
        if match is None:
            break
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        line = text[start:end].strip()
        if line and line not in found:
            found.append(line)
        position = end + 1
    return found


def _first_sentence(text: str) -> str:
    lines = _meaningful(text[:4_000])
    return _cut(re.split(r"(?<=[.!?。])\s", lines[0], maxsplit=1)[0], _LINE_CHARS) if lines else ""


def _paths(text: str, said: str) -> str:
    """The paths a result mentions that the summary does not name yet."""
    # Paths are looked for where output names its subject and its outcome (a path pattern is slow per character).
    ends = text if len(text) <= 2 * _END_CHARS else f"{text[:_END_CHARS]}\n{text[-_END_CHARS:]}"
    matches = itertools.islice(_PATH.finditer(ends), _MAX_SCANNED_LINES)
    found = [p for p in dict.fromkeys(m.group() for m in matches) if p not in said]
    return "paths: " + _listed(found) if found else ""


def _entry_name(line: str) -> str:
    """The name on one line of a listing: the last field of `ls -l`, else the line without tree drawing."""
    if _LONG_LISTING.match(line):
        return line.split()[-1]
    return line.lstrip("-*|`├└─│ ").strip()


def _fields(value: dict[str, Any]) -> str:
    """`key=value` for an object's fields (scalars shortened, containers by size)."""
    parts = []
    for key, item in list(value.items())[:8]:
        if isinstance(item, dict):
            shown = "{…}"
        elif isinstance(item, list):
            shown = f"[{len(item)}]"
        else:
            shown = _cut(_one_line(item if isinstance(item, str) else _json(item)), 40)
        parts.append(f"{key}={shown}")
    return ", ".join(parts)


def _listed(names: Sequence[str], count: int = _LISTED) -> str:
    shown = ", ".join(_cut(n, 60) for n in names[:count])
    return shown + (f" (+{len(names) - count} more)" if len(names) > count else "")


def _block_text(block: dict[str, Any], depth: int) -> str:
    kind = block["type"]
    if isinstance(block.get("text"), str):
        return block["text"]
    if "content" in block:
        return flatten_result(block["content"], depth + 1)
    return f"[{kind}]"


def _param_text(params: Any, *keys: str, limit: int = 80) -> str:
    """The first of `keys` that holds text, on one line and cut to `limit` characters (0: whole)."""
    if isinstance(params, dict):
        for key in keys:
            if isinstance(params.get(key), str) and params[key].strip():
                text = _one_line(params[key])
                return _cut(text, limit) if limit else text
    return ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _s(items: Sequence[Any]) -> str:
    return "" if len(items) == 1 else "s"
