"""The offline summary stage on real-looking tool output: what survives into 200 characters, and the scores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memhub.model.offload import SUMMARY_MAX_CHARS, ToolPair
from memhub.offload.summary import ExtractiveSummarizer, flatten_result, outline, reads_as_failure, summarize_pair
from memhub.offload.toolcall import CALL_MAX_CHARS, classify, parse_call, phase_of_call, render_call

TS = "2024-05-01T10:00:00Z"

PYTEST_FAILING = """============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-8.2.0, pluggy-1.5.0
rootdir: /repo
configfile: pyproject.toml
collected 13 items

tests/test_auth.py ........F...                                          [100%]

=================================== FAILURES ===================================
_____________________________ test_login_redirect ______________________________

    def test_login_redirect():
        resp = client.get("/login?next=/home")
>       assert resp.status_code == 302
E       AssertionError: assert 200 == 302
E        +  where 200 = <Response [200]>.status_code

tests/test_auth.py:42: AssertionError
=========================== short test summary info ============================
FAILED tests/test_auth.py::test_login_redirect - AssertionError: assert 200 == 302
========================= 1 failed, 12 passed in 0.53s =========================
"""

PYTEST_PASSING = (
    "============================= test session starts ==============================\n"
    "collected 212 items\n\n"
    + "".join(f"tests/test_mod{i}.py ....................                          [{i * 10}%]\n" for i in range(10))
    + "\n============================= 212 passed in 8.31s ==============================\n"
)

TRACEBACK = (
    """Starting worker pool (4 workers)
Loading configuration from /etc/app/config.toml
Traceback (most recent call last):
  File "/repo/src/app/main.py", line 10, in <module>
    run()
  File "/repo/src/app/worker.py", line 51, in run
    pool = connect(settings.database_url)
  File "/repo/src/app/db.py", line 88, in connect
    raise ConnectionError(f"could not connect to {url}")
ConnectionError: could not connect to postgres://db:5432/app
"""
    + "debug: retry scheduled\n" * 30
)

RG_OUTPUT = "\n".join(
    f"src/memhub/{module}.py:{line}:    user = login_user(request.form['name'], request.form['password'])"
    for module in ("auth", "api/routes", "api/session", "cli", "ui/views", "models/user")
    for line in range(10, 80, 10)
)

GIT_LOG = "".join(
    f"commit {sha * 40}\nAuthor: Dev <dev@example.com>\nDate:   Mon May {day} 10:00:00 2024 +0200\n\n    {subject}\n\n"
    for sha, day, subject in [
        ("a", 6, "Fix the login redirect loop"),
        ("b", 5, "Add session expiry"),
        ("c", 4, "Refactor the auth module"),
        ("d", 3, "Bump httpx to 0.27"),
        ("e", 2, "Initial commit"),
    ]
    * 3
)

SOURCE_FILE = "\n".join(
    f"{i:6}\t{line}"
    for i, line in enumerate(
        [
            '"""Session handling."""',
            "from __future__ import annotations",
            "",
            "class SessionStore:",
            "    def __init__(self, path: str) -> None:",
            "        self.path = path",
            "",
            "    def load(self, key: str) -> dict:",
            "        return {}",
            "",
            "def expire_sessions(store: SessionStore, now: float) -> int:",
            "    return 0",
        ]
        * 20,
        start=1,
    )
)


def pair(tool: str, params: Any, result: Any, error: str | None = None, call_id: str = "call_1") -> ToolPair:
    return ToolPair(tool_name=tool, tool_call_id=call_id, params=params, result=result, timestamp=TS, error=error)


def summary_of(tool: str, params: Any, result: Any, error: str | None = None) -> tuple[str, int]:
    s = summarize_pair(pair(tool, params, result, error))
    assert len(s.summary) <= SUMMARY_MAX_CHARS
    return s.summary, s.score


# -- what survives -------------------------------------------------------------------------------------------------


def test_a_failing_pytest_run_keeps_the_exit_status_counts_and_failed_test() -> None:
    text, score = summary_of("Bash", {"command": "pytest -x tests/test_auth.py"}, PYTEST_FAILING + "\nExit code: 1")
    assert text.startswith("exit 1")
    assert "1 failed, 12 passed" in text
    assert "FAILED tests/test_auth.py::test_login_redirect - AssertionError: assert 200 == 302" in text
    assert score <= 3


def test_a_passing_pytest_run_is_its_counts_and_replaceable() -> None:
    result = {"stdout": PYTEST_PASSING, "stderr": "", "exit_code": 0}
    text, score = summary_of("Bash", {"command": "python -m pytest -q"}, result)
    assert text == "exit 0; 212 passed"
    assert score >= 8


def test_a_traceback_leads_with_its_exception_and_where_it_was_raised() -> None:
    text, score = summary_of("Bash", {"command": "python -m app.main"}, TRACEBACK)
    assert text.startswith("ConnectionError: could not connect to postgres://db:5432/app")
    assert "at /repo/src/app/db.py:88 in connect" in text
    assert score <= 3


def test_an_error_field_leads_the_summary() -> None:
    text, _ = summary_of("Bash", {"command": "make build"}, "compiling 12 modules\n" * 40, error="Command timed out")
    assert text.startswith("error: Command timed out")


def test_an_error_field_with_a_traceback_gives_its_last_line() -> None:
    text, score = summary_of("Read", {"file_path": "src/missing.py"}, None, error=TRACEBACK)
    assert text == "error: ConnectionError: could not connect to postgres://db:5432/app"
    assert score == 0  # nothing to replace


def test_search_hits_are_counted_by_file_and_the_files_named() -> None:
    text, score = summary_of("Grep", {"pattern": "login_user", "path": "src", "output_mode": "content"}, RG_OUTPUT)
    assert text.startswith("42 matches in 6 files")
    assert "src/memhub/auth.py" in text and "src/memhub/api/routes.py" in text
    assert score >= 8


def test_a_file_list_from_a_search_tool_is_counted() -> None:
    listing = "Found 40 files\n" + "\n".join(f"src/memhub/offload/module_{i}.py" for i in range(40))
    text, _ = summary_of("Grep", {"pattern": "OffloadEntry", "output_mode": "files_with_matches"}, listing)
    assert text.startswith("40 files; src/memhub/offload/module_0.py")
    assert "(+36 more)" in text


def test_no_matches_says_so() -> None:
    assert summary_of("Grep", {"pattern": "nowhere"}, "No matches found")[0] == "no matches"


def test_git_log_is_the_commit_count_and_the_latest_subject() -> None:
    text, score = summary_of("Bash", {"command": "git log -15"}, GIT_LOG)
    assert text == "15 commits; latest aaaaaaa Fix the login redirect loop"
    assert score >= 8


def test_git_status_names_the_branch_and_changed_files() -> None:
    status = (
        "On branch issue30/stages\nChanges not staged for commit:\n"
        '  (use "git add <file>..." to update what will be committed)\n'
        "\tmodified:   src/memhub/offload/graph.py\n\tmodified:   tests/offload/test_graph.py\n\n"
        "Untracked files:\n\tsrc/memhub/offload/llm.py\n" + "\n" * 400
    )
    text, _ = summary_of("Bash", {"command": "git status"}, status)
    assert text.startswith("branch issue30/stages; modified: src/memhub/offload/graph.py, tests/offload/test_graph.py")
    assert "src/memhub/offload/llm.py" in text


def test_a_file_read_names_the_file_its_length_and_what_it_defines() -> None:
    text, score = summary_of("Read", {"file_path": "src/app/session.py"}, [{"type": "text", "text": SOURCE_FILE}])
    assert text == "src/app/session.py: 240 lines; defines SessionStore, __init__, load, expire_sessions"
    assert 4 <= score <= 6


def test_a_long_path_is_cut_at_its_start_so_the_file_and_its_names_stay() -> None:
    path = "/tmp/memhub-offload-trajectories/7710d8b4bd76-gateway/src/memhub/api/routes/memory_prompt.py"
    text, _ = summary_of("Read", {"file_path": path}, [{"type": "text", "text": SOURCE_FILE}])
    assert text.startswith("…") and text.split(":")[0].endswith("src/memhub/api/routes/memory_prompt.py")
    assert len(text.split(":")[0]) == 48
    assert text.endswith("defines SessionStore, __init__, load, expire_sessions")


def test_an_outline_lists_definitions_with_their_line_numbers() -> None:
    numbered = "     1\timport os\n    12\tdef drop(rows):\n    20\tclass Store:\n    21\t    async def get(self):\n"
    assert outline(numbered, 1_000) == "12 drop, 20 Store, 21 get"
    assert outline("12→def a():\n13→    pass\n", 1_000) == "12 a"
    assert outline("def a():\n    def b():\n", 1_000) == "a, b"  # a read without numbers: names only
    assert outline("# Offload\ntext\n## Ingest\n", 1_000) == "Offload, Ingest"
    assert outline("plain text\nno code\n", 1_000) == ""


def test_a_long_outline_keeps_the_top_level_names_and_says_how_many_are_left_out() -> None:
    lines = [f"{n * 10:>6}\tdef top_{n}():\n{n * 10 + 1:>6}\t    def nested_{n}():" for n in range(1, 60)]
    text = outline("\n".join(lines), 300)
    assert len(text) <= 300
    assert text.startswith("10 top_1, 20 top_2, ") and "nested" not in text
    shown = text.count(", ") + 1
    assert text.endswith(f"(+{118 - shown} more)")


def test_a_markdown_read_lists_its_sections() -> None:
    doc = "# Offload\n\nIntro text.\n\n## Ingest\n\n" + "body line\n" * 100 + "## Compact\n\nmore\n"
    text, _ = summary_of("Read", {"file_path": "docs/offload.md"}, doc)
    assert text.startswith("docs/offload.md: ") and "sections: Offload, Ingest, Compact" in text


def test_a_successful_edit_is_short_and_replaceable() -> None:
    result = (
        "The file /repo/src/app/session.py has been updated. Here's the result of running `cat -n`:\n" + SOURCE_FILE
    )
    text, score = summary_of(
        "Edit", {"file_path": "/repo/src/app/session.py", "old_string": "a", "new_string": "b"}, result
    )
    assert text == "edited /repo/src/app/session.py"
    assert score >= 8


def test_a_failed_edit_reports_the_tool_error() -> None:
    result = {"is_error": True, "content": "<tool_use_error>String to replace not found in file.</tool_use_error>"}
    text, score = summary_of("Edit", {"file_path": "src/a.py", "old_string": "x", "new_string": "y"}, result)
    assert "String to replace not found" in text
    assert score <= 3


def test_compiler_errors_are_kept_with_their_location() -> None:
    output = (
        'src/memhub/offload/graph.py:212: error: Argument 1 has incompatible type "int"; expected "str"  [arg-type]\n'
        + "src/memhub/offload/ok.py: note: checked\n" * 60
        + "Found 1 error in 1 file (checked 41 source files)\n"
    )
    text, score = summary_of("Bash", {"command": "mypy src"}, output)
    assert "src/memhub/offload/graph.py:212: error: Argument 1 has incompatible type" in text
    assert score <= 3


def test_a_listing_counts_its_entries() -> None:
    ls = "total 96\n" + "\n".join(f"-rw-r--r--  1 dev dev  1204 May  1 10:00 module_{i}.py" for i in range(30))
    text, score = summary_of("Bash", {"command": "ls -la src/memhub/offload"}, ls)
    assert text.startswith("30 entries; module_0.py, module_1.py")
    assert score >= 8


def test_a_json_object_result_shows_its_fields() -> None:
    result = {"status": "ok", "id": "issue-30", "labels": ["offload", "stages"], "body": {"x": 1}, "count": 3}
    text, _ = summary_of("mcp__tracker__get_issue", {"id": "issue-30"}, result)
    assert text == "status=ok, id=issue-30, labels=[2], body={…}, count=3"


def test_a_list_of_json_objects_is_counted() -> None:
    rows = [{"id": i, "name": f"user{i}", "active": True} for i in range(50)]
    text, _ = summary_of("mcp__db__query", {"sql": "select * from users"}, rows)
    assert text.startswith("50 items; first: id=0, name=user0, active=true")


def test_chinese_output_is_kept_in_its_language() -> None:
    page = (
        "# 部署指南\n\n"
        + "本节说明如何在生产环境部署服务，并配置数据库连接。\n" * 80
        + "## 常见问题\n\n连接超时请检查防火墙。\n"
    )
    text, _ = summary_of("WebFetch", {"url": "https://example.com/zh/deploy"}, page)
    assert "部署指南" in text and "常见问题" in text


def test_empty_output_says_so_and_saves_nothing() -> None:
    text, score = summary_of("Bash", {"command": "touch a.txt"}, "")
    assert text == "no output" and score == 0


# -- results of any shape ------------------------------------------------------------------------------------------


def test_flatten_reads_content_blocks_strings_and_output_objects() -> None:
    blocks = [{"type": "text", "text": "first"}, {"type": "image", "source": {}}, {"type": "text", "text": "second"}]
    assert flatten_result(blocks) == "first\n[image]\nsecond"
    assert flatten_result({"stdout": "out", "stderr": "warn", "exit_code": 2}) == "out\nstderr: warn"
    assert flatten_result({"error": "boom"}) == "error: boom"
    assert flatten_result(["a", "b"]) == "a\nb"
    assert flatten_result({"a": 1}) == '{"a": 1}'
    assert flatten_result(None) == ""
    assert flatten_result({"content": [{"type": "text", "text": "nested"}]}) == "nested"


def test_an_exit_code_field_is_read_from_a_result_object() -> None:
    text, score = summary_of(
        "Bash", {"command": "npm test"}, {"stdout": "x\n" * 400 + "Tests: 2 failed, 30 passed", "exit_code": 1}
    )
    assert text.startswith("exit 1; 2 failed, 30 passed")
    assert score <= 3


@pytest.mark.parametrize("marker", ["Exit code: 1", "Process exited with code 1", "returncode=1", "[exit status 1]"])
def test_exit_status_markers_in_command_output(marker: str) -> None:
    text, _ = summary_of("Bash", {"command": "./build.sh"}, "building…\n" * 60 + marker)
    assert text.startswith("exit 1")


# -- limits, scores, determinism -----------------------------------------------------------------------------------


def test_every_summary_fits_in_200_characters_even_for_long_lines() -> None:
    long_line = "E   " + "AssertionError: " + "x" * 5000
    for result in (
        long_line,
        "y" * 10_000,
        json.dumps({"k" * 300: "v" * 3000}),
        [{"type": "text", "text": "z" * 9000}],
    ):
        text, _ = summary_of("Bash", {"command": "pytest"}, result)
        assert 0 < len(text) <= SUMMARY_MAX_CHARS


def test_a_megabyte_result_is_summarised_from_its_ends() -> None:
    big = "INFO request served\n" * 55_000 + "ERROR worker crashed: OutOfMemoryError in src/worker/pool.py\n"
    assert len(big) > 1_000_000
    s = summarize_pair(pair("Bash", {"command": "python -m worker"}, big))
    assert "ERROR worker crashed: OutOfMemoryError in src/worker/pool.py" in s.summary
    assert len(s.summary) <= SUMMARY_MAX_CHARS


def test_scores_order_the_cases_by_how_safely_they_can_be_replaced() -> None:
    search = summary_of("Grep", {"pattern": "login_user"}, RG_OUTPUT)[1]
    passing = summary_of("Bash", {"command": "pytest"}, PYTEST_PASSING)[1]
    read = summary_of("Read", {"file_path": "src/app/session.py"}, SOURCE_FILE)[1]
    failing = summary_of("Bash", {"command": "pytest"}, PYTEST_FAILING)[1]
    short = summary_of("Bash", {"command": "echo hi"}, "hi")[1]
    assert min(search, passing) >= 8
    assert 4 <= read <= 6
    assert failing <= 3 and short <= 1
    assert min(search, passing) > read > failing >= short


def test_a_longer_result_of_the_same_kind_scores_at_least_as_high() -> None:
    small = summary_of("Grep", {"pattern": "x"}, RG_OUTPUT[:1500])[1]
    large = summary_of("Grep", {"pattern": "x"}, RG_OUTPUT * 10)[1]
    assert large >= small


def test_summaries_are_deterministic() -> None:
    pairs = [
        pair("Bash", {"command": "pytest"}, PYTEST_FAILING, call_id="a"),
        pair("Grep", {"pattern": "x"}, RG_OUTPUT, call_id="b"),
        pair("Read", {"file_path": "s.py"}, SOURCE_FILE, call_id="c"),
    ]
    first = ExtractiveSummarizer().summarize(pairs, [])
    assert first == ExtractiveSummarizer().summarize(pairs, [])
    assert [s.tool_call_id for s in first] == ["a", "b", "c"]
    assert all(s.timestamp == TS for s in first)


def test_reads_as_failure() -> None:
    assert reads_as_failure("exit 1; 1 failed, 12 passed")
    assert reads_as_failure("ConnectionError: could not connect")
    assert reads_as_failure("测试失败：登录跳转错误")
    assert not reads_as_failure("exit 0; 212 passed")
    assert not reads_as_failure("0 errors, 0 failed; build ok")


# -- tool calls ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "params", "rendered"),
    [
        (
            "Bash",
            {"command": "pytest -x tests/x.py", "description": "Run tests"},
            'Bash(command="pytest -x tests/x.py")',
        ),
        ("Read", {"file_path": "src/a.py", "offset": 10, "limit": 50}, 'Read(file_path="src/a.py")'),
        ("Grep", {"path": "src", "pattern": "def login"}, 'Grep(pattern="def login", path="src")'),
        ("Write", {"file_path": "a.py", "content": "x" * 5000}, 'Write(file_path="a.py")'),
        ("exec", "ls -la", 'exec("ls -la")'),
        ("custom", {"depth": 2, "verbose": True}, "custom(depth=2, verbose=true)"),
        ("Bash", {"command": "echo 'a\nb'"}, "Bash(command=\"echo 'a b'\")"),
    ],
)
def test_render_call(tool: str, params: Any, rendered: str) -> None:
    assert render_call(tool, params) == rendered


def test_a_long_call_is_cut_to_120_characters_and_still_parses() -> None:
    rendered = render_call("Bash", {"command": 'python -c "' + 'print(\\"x\\"); ' * 100 + '"'})
    assert len(rendered) <= CALL_MAX_CHARS and rendered.endswith('…")')
    name, params = parse_call(rendered)
    assert name == "Bash" and params["command"].startswith('python -c "print(')


@pytest.mark.parametrize(
    ("tool", "params", "action"),
    [
        ("Bash", {"command": "cd repo && pytest -x"}, "test"),
        ("Bash", {"command": "FOO=1 uv run pytest tests"}, "test"),
        ("Bash", {"command": "npm run test:unit"}, "test"),
        ("Bash", {"command": "cargo test --all"}, "test"),
        ("Bash", {"command": "cargo build --release"}, "run"),
        ("Bash", {"command": "git diff HEAD~1"}, "vcs"),
        ("Bash", {"command": "rg -n login src"}, "search"),
        ("Bash", {"command": "sed -i 's/a/b/' f.py"}, "edit"),
        ("Bash", {"command": "sed -n 1,20p f.py"}, "read"),
        ("Bash", {"command": "echo hi > notes.txt"}, "edit"),
        ("Bash", {"command": "ls -la"}, "list"),
        ("Read", {"file_path": "a"}, "read"),
        ("MultiEdit", {}, "edit"),
        ("mcp__filesystem__read_file", {}, "read"),
        ("TodoWrite", {"todos": []}, "other"),
        ("Task", {"prompt": "x"}, "other"),
    ],
)
def test_classify(tool: str, params: Any, action: str) -> None:
    assert classify(tool, params) == action


def test_the_phase_of_a_rendered_call() -> None:
    assert phase_of_call('Bash(command="git commit -m x")') == "vcs"
    assert phase_of_call('Edit(file_path="a.py")') == "change"
    assert phase_of_call("not a call at all") == "other"
