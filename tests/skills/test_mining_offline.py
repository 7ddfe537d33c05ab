"""The offline miner's reading of agent work: successful tool calls as steps, recurring runs, the draft."""

from __future__ import annotations

import json

from memhub.knowledge.skill.mining.draft import (
    MINED_KEY,
    draft_from,
    mask_text,
    seen_again,
    skill_name,
    steps_signature,
)
from memhub.knowledge.skill.mining.trace import (
    Step,
    command_program,
    find_recurrence,
    parse_arguments,
    reads_as_error,
    step_of,
    successful_calls,
)
from tests.skills.traces import chatter, fix_failing_test

EXPECTED = [
    "bash(command)[pytest]",
    "read_file(path)",
    "edit_file(new,old,path)",
    "bash(command)[pytest]",
    "bash(command)[git commit]",
]


def test_command_program_names_what_a_shell_line_runs() -> None:
    assert command_program("pytest -q tests") == "pytest"
    assert command_program("python3 -m pytest -x") == "pytest"
    assert command_program("FOO=1 sudo /usr/bin/git -C repo commit -am 'x' && git push") == "git commit"
    assert command_program("cd repo; make") == "cd"
    assert command_program("") is None


def test_arguments_are_parsed_and_openai_wrappers_unwrapped() -> None:
    assert parse_arguments('{"path": "a"}') == {"path": "a"}
    assert parse_arguments('{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}') == {"command": "ls"}
    assert parse_arguments("ls -la") == "ls -la"
    assert step_of("bash", "pytest -q") == Step("bash", (), "pytest")
    assert step_of("search", {"q": "x", "k": 3}).keys == ("k", "q")


def test_results_that_read_as_errors() -> None:
    assert reads_as_error({"content": "Error: No such file or directory: a.py"})
    assert reads_as_error({"content": "bash: foo: command not found"})
    assert reads_as_error({"content": json.dumps({"error": "timeout"})})
    assert reads_as_error({"content": "ok", "metadata": {"is_error": True}})
    # A test run that finds failures worked as a tool call.
    assert not reads_as_error({"content": "F.\nAssertionError\n1 failed, 1 passed"})
    assert not reads_as_error({"content": json.dumps({"error": None, "rows": 3})})


def test_a_trace_reads_as_its_successful_steps_with_repeats_collapsed() -> None:
    plain = successful_calls(fix_failing_test("s1", "calc"))
    detour = successful_calls(fix_failing_test("s2", "money", detour=True))
    assert [c.step.signature for c in plain] == EXPECTED
    # The failed read is left out, the second edit in a row is the same step.
    assert [c.step.signature for c in detour] == EXPECTED
    assert plain[0].request is not None and "calc" in plain[0].request
    assert plain[2].arguments == {"path": "src/calc.py", "old": "a + b + 1", "new": "a + b"}


def test_tool_name_comes_from_the_result_when_the_call_has_none() -> None:
    messages = [
        {"role": "tool_call", "content": '{"path": "a"}', "tool_call_id": "x"},
        {"role": "tool_result", "content": "text", "tool_call_id": "x", "tool_name": "read_file"},
    ]
    assert [c.step.tool for c in successful_calls(messages)] == ["read_file"]


def test_the_longest_run_shared_with_another_archive_is_found() -> None:
    current = successful_calls(chatter("s3", 2) + fix_failing_test("s3", "calc"))
    other = [c.step for c in successful_calls(fix_failing_test("s1", "money", detour=True) + chatter("s1", 1))]
    unrelated = [c.step for c in successful_calls(chatter("s2", 4))]
    found = find_recurrence("arc-3", current, [("arc-1", other), ("arc-2", unrelated)])
    assert found is not None
    assert [s.signature for s in found.steps] == EXPECTED
    assert found.archive_ids == ("arc-3", "arc-1")
    assert found.calls[0].arguments == {"command": "python -m pytest -q tests/test_calc.py"}


def test_runs_shorter_than_three_steps_do_not_count() -> None:
    current = successful_calls(fix_failing_test("s1", "calc"))
    two = [Step("bash", ("command",), "pytest"), Step("read_file", ("path",))]
    assert find_recurrence("a", current, [("b", two)]) is None
    assert find_recurrence("a", current, []) is None


def test_the_draft_names_its_steps_and_masks_secrets() -> None:
    calls = successful_calls(fix_failing_test("s1", "calc"))
    found = find_recurrence("a1", calls, [("a0", [c.step for c in calls])])
    assert found is not None
    name = skill_name(found.steps)
    assert name == "run-pytest-then-git-commit"
    draft = draft_from(found, name)
    assert draft.content.startswith("---\nname: run-pytest-then-git-commit\ndescription: ")
    assert "1. `bash`: run `pytest`" in draft.content and "5. `bash`: run `git commit`" in draft.content
    assert "> The tests for calc fail since this morning" in draft.content
    assert draft.metadata[MINED_KEY]["seen"] == 2
    assert draft.metadata[MINED_KEY]["signature"] == steps_signature(found.steps)
    assert "2 sessions" in draft.description

    secret = [
        {
            "role": "tool_call",
            "content": json.dumps({"url": "u", "api_key": "sk-123"}),
            "tool_name": "http",
            "tool_call_id": f"k{i}",
        }
        for i in range(1)
    ] + fix_failing_test("s9", "calc")
    calls = successful_calls(secret)
    found = find_recurrence("a", calls, [("b", [c.step for c in calls])])
    assert found is not None and "sk-123" not in draft_from(found, "x").content


def test_seen_again_counts_new_archives_only() -> None:
    metadata = {MINED_KEY: {"archives": ["a", "b"], "seen": 2}, "other": 1}
    again = seen_again(metadata, ["c", "a"])
    assert again == {MINED_KEY: {"archives": ["a", "b", "c"], "seen": 3}, "other": 1}
    assert seen_again(again, ["a", "c"]) is None


def test_secrets_written_inside_commands_and_requests_are_masked() -> None:
    spelled_out = {
        "psql --password=hunter2 -h db": "psql --password=*** -h db",
        "export API_KEY=abc123; make": "export API_KEY=***; make",
        "(the token is in TWINE_PASSWORD=pypi-AgE), thanks": "(the token is in TWINE_PASSWORD=***), thanks",
        'curl -H "Authorization: Bearer eyJhbGciOi.xyz" https://x': 'curl -H "Authorization: Bearer ***" https://x',
        'deploy --token "a b c" now': "deploy --token *** now",
        "mysql -u root --password --verbose": "mysql -u root --password --verbose",
        "token: 'a b c' rest": "token: *** rest",
        "use sk-proj-ABCDEFGHIJKLMNOPQRST now": "use *** now",
        "aws s3 ls # AKIAABCDEFGHIJKLMNOP": "aws s3 ls # ***",
        "git commit -m 'fix the parser'": "git commit -m 'fix the parser'",
    }
    for text, masked in spelled_out.items():
        assert mask_text(text) == masked, text

    trace = fix_failing_test("s1", "calc")
    trace[0] = {**trace[0], "content": trace[0]["content"] + " (the db password=hunter2)"}
    calls = successful_calls(trace)
    found = find_recurrence("a1", calls, [("a0", [c.step for c in calls])])
    assert found is not None
    content = draft_from(found, "x").content
    assert "hunter2" not in content and "password=***" in content


def _side_trip(session: str, tools: list[str]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i, tool in enumerate(tools):
        cid = f"{session}-side{i}"
        out += [
            {"role": "tool_call", "content": json.dumps({"query": f"q{i}"}), "tool_name": tool, "tool_call_id": cid},
            {"role": "tool_result", "content": "2 results", "tool_call_id": cid},
        ]
    return out


def _with_side_trip(session: str, tools: list[str]) -> list[dict[str, object]]:
    """The same fix, with side trips between running the tests and reading the code."""
    work = fix_failing_test(session, "calc")
    at = next(i for i, m in enumerate(work) if m.get("tool_name") == "read_file")
    return work[:at] + _side_trip(session, tools) + work[at:]


def test_side_trips_between_the_steps_do_not_split_the_procedure() -> None:
    calls = successful_calls(fix_failing_test("s1", "calc"))
    full = [c.step.signature for c in calls]
    for tools in (["web_search"], ["web_search", "fetch_url", "web_search"]):
        other = [c.step for c in successful_calls(_with_side_trip("s2", tools))]
        found = find_recurrence("a1", calls, [("a2", other)])
        assert found is not None and [s.signature for s in found.steps] == full, tools
    # More side trips than MAX_GAP in a row: the two halves are no longer one procedure.
    other = [c.step for c in successful_calls(_with_side_trip("s3", ["web_search", "fetch_url"] * 2))]
    found = find_recurrence("a1", calls, [("a3", other)])
    assert found is not None and len(found.steps) < len(full)
