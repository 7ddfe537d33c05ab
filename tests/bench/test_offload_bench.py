"""The offload benchmark's trajectories and retention rule (bench/offload_trajectory.py): questions come from tool
results only, a question is retained by the compacted text or by a ref an agent would read, and a trajectory
is the same on every run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


ot = _load("offload_trajectory")
if str(BENCH) not in sys.path:
    sys.path.append(str(BENCH))  # bench/offload.py imports its siblings (common) by name, as when run from bench/
ob = _load("offload")
ROOT = "/tmp/work"


def pair(tool: str, params: dict[str, Any], result: str, call_id: str = "toolu_1") -> dict[str, Any]:
    return {"tool_name": tool, "tool_call_id": call_id, "params": params, "result": result, "timestamp": "t"}


def call_and_result(call_id: str, tool: str, params: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": params}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]},
    ]


PYTEST_OUTPUT = """\
..F.
=================================== FAILURES ===================================
E       AssertionError: assert 49 == 48
FAILED tests/unit/test_tokenize.py::test_query_terms_are_capped - AssertionError: assert 49 == 48
1 failed, 7 passed in 0.45s
Exit code 1"""


def test_each_kind_of_result_yields_its_questions() -> None:
    grep = pair(
        "Grep",
        {"pattern": r"\bresolve_isolation\b", "output_mode": "content", "-n": True},
        "src/memhub/api/isolation.py:28:def resolve_isolation(\nsrc/memhub/api/dataplane.py:97:    ok = x",
    )
    read = pair("Read", {"file_path": f"{ROOT}/src/a/mod.py"}, "     1\timport x\n     2\t\n     3\tclass Thing:\n")
    tests = pair("Bash", {"command": "python -m pytest tests/unit/test_tokenize.py -q"}, PYTEST_OUTPUT)
    log = pair("Bash", {"command": "git log --oneline -n 5 -- src/a/mod.py"}, "85774c5 Strict ids and bounded keys")

    found = {(q.kind, q.key, q.answer) for p in (grep, read, tests, log) for q in ot.candidates(p, ROOT)}

    assert ("search_path", "resolve_isolation", "src/memhub/api/isolation.py") in found
    assert ("search_path", "resolve_isolation", "src/memhub/api/dataplane.py") not in found  # snippet too short
    assert ("defined_name", "mod.py", "Thing") in found
    assert ("failing_test", "test_tokenize.py", "test_query_terms_are_capped") in found
    assert ("assertion", "test_tokenize.py", "assert 49 == 48") in found
    assert ("passed_count", "test_tokenize.py", "7 passed") in found
    assert ("commit_hash", "mod.py", "85774c5") in found


def test_a_search_is_known_by_its_pattern_word_or_else_its_directory() -> None:
    assert ot.search_key({"pattern": r"(def|class) build_hub\b"}) == "build_hub"
    assert ot.search_key({"pattern": r"^(class|def) ", "path": "src/memhub/proxy"}) == "proxy"


def test_questions_keep_answers_found_only_in_tool_results() -> None:
    read = pair(
        "Read",
        {"file_path": f"{ROOT}/src/a/mod.py"},
        "     1\tdef visible_elsewhere():\n     2\t    pass\n     3\tdef only_in_the_file():\n     4\tdef ab():\n",
    )
    messages = [
        {"role": "user", "content": "Why does visible_elsewhere fail?"},
        *call_and_result("toolu_1", "Read", read["params"], read["result"]),
    ]

    chosen = ot.choose_questions([read], messages, ROOT, per_result=5)

    # The prompt names the first function (it stays in any context) and `ab` is too short to be a fair answer.
    assert [q.answer for q in chosen] == ["only_in_the_file"]
    assert chosen[0].text == "Which function is defined at line 3 of `src/a/mod.py`?"


def stand_in(call_id: str, ref: str, summary: str) -> dict[str, Any]:
    text = f"[offloaded tool result] {summary} (full result: {ref}; read it with the memhub_read_offloaded tool)"
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]}


REF_A = "offload/bench-s1/refs/toolu_a.md"
REF_B = "offload/bench-s1/refs/toolu_b.md"
QUESTION = ot.Question(
    "q1", "defined_name", "Which class is defined at line 3 of `src/a/mod.py`?", "mod.py", "Thing", "a"
)


def compacted() -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "Read", "input": {"file_path": "/w/src/a/mod.py"}}],
        },
        stand_in("a", REF_A, "a Python module, 3 lines"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "ls"}}]},
        stand_in("b", REF_B, "12 entries"),
    ]


def test_an_answer_in_the_compacted_text_is_retained_without_reading_refs() -> None:
    messages = [*compacted(), {"role": "user", "content": "the Thing class"}]
    verdict = ot.judge(QUESTION, messages, lambda ref: pytest.fail("no ref should be read"))
    assert verdict.how == "context" and verdict.retained


def test_only_refs_whose_call_or_summary_mention_the_key_are_read_back() -> None:
    read: list[str] = []

    def read_ref(ref: str) -> str:
        read.append(ref)
        return "     3\tclass Thing:" if ref == REF_A else "class Thing: (listed, but not the file asked about)"

    verdict = ot.judge(QUESTION, compacted(), read_ref)

    assert verdict.how == "read_ref" and verdict.refs_read == 1
    assert read == [REF_A]  # the ls result's stand-in and call do not mention mod.py


def test_a_question_whose_refs_are_gone_is_lost() -> None:
    messages = [{"role": "user", "content": "Only the task graph is left: Read src/other.py (offload/s/refs/x.md)"}]
    verdict = ot.judge(QUESTION, messages, lambda ref: "class Thing:")
    assert verdict.how == "lost" and verdict.refs_read == 0


def test_refs_are_found_with_their_context_in_long_texts() -> None:
    graph = "flowchart TD\n" + "x" * 3000 + f"\n  n1[Read mod.py: class Thing ({REF_A})]\n" + "y" * 3000
    contexts = ot.ref_contexts([{"role": "user", "content": [{"type": "text", "text": graph}]}])
    assert list(contexts) == [REF_A]
    assert "Read mod.py" in contexts[REF_A] and len(contexts[REF_A]) < 1000
    assert ot.refs_in(f"see {REF_B}.") == [REF_B]


def test_a_trajectory_is_the_same_on_every_run_and_leaves_the_checkout_alone() -> None:
    rev = ot.resolve_rev("HEAD")
    # One task (its searches, reads and git log): most of a generation's time is the private clone, made twice.
    plan = ot.Plan("unit-test", (("find_usage", ("resolve_isolation",)),))
    status = ["git", "status", "--porcelain"]
    before = subprocess.run(status, cwd=BENCH.parent, capture_output=True, text=True, check=True).stdout

    first, second = (ot.generate(plan, rev, sys.executable) for _ in range(2))

    def stable(t: Any) -> Any:
        calls = [(c.upto, c.prompt, [{**p, "duration_ms": 0} for p in c.pairs]) for c in t.calls]
        return t.messages, calls, t.questions

    assert stable(first) == stable(second)
    assert [c.prompt for c in first.calls if c.prompt] == first.tasks
    assert all(first.messages[c.upto - 1]["role"] == "user" for c in first.calls)  # a call answers the user side
    assert first.questions
    for q in first.questions:
        assert q.answer in ot.context_text(first.messages) and q.answer not in ot.outside_results(first.messages)
    assert not ot.workspace(rev, plan.name).exists()
    assert subprocess.run(status, cwd=BENCH.parent, capture_output=True, text=True, check=True).stdout == before


def test_the_proxy_runs_with_offload_switched_on_and_off_and_takes_overrides() -> None:
    assert ob.proxy_envs([], []) == ({"MEMHUB_PROXY_OFFLOAD": "on"}, {"MEMHUB_PROXY_OFFLOAD": "off"})
    on, off = ob.proxy_envs(["MEMHUB_PROXY_OFFLOAD=auto", "X=a=b"], ["MEMHUB_PROXY_OFFLOAD=0"])
    assert on == {"MEMHUB_PROXY_OFFLOAD": "auto", "X": "a=b"}
    assert off == {"MEMHUB_PROXY_OFFLOAD": "0"}
    with pytest.raises(SystemExit):
        ob.proxy_envs(["MEMHUB_PROXY_OFFLOAD"], [])


def test_summaries_are_done_only_when_no_pair_waits_and_no_summary_job_is_open() -> None:
    idle = {"queued": 0, "running": 0, "dead": 0}
    status = {"offload": {"summary": idle, "task": idle, "graph": {**idle, "queued": 1}, "pairs_pending": 0}}
    assert ob.summaries_done(status)  # the graph's work does not hold the replay back
    assert not ob.summaries_done({"offload": {**status["offload"], "pairs_pending": 2}})
    assert not ob.summaries_done({"offload": {**status["offload"], "summary": {**idle, "running": 1}}})
    assert not ob.summaries_done({"offload": {**status["offload"], "summary": {**idle, "queued": 1}}})
