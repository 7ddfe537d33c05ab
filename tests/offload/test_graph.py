"""Mermaid task graphs: format, escaping against hostile text, patching that keeps ids, the offline builder."""

from __future__ import annotations

import itertools
import json
import re

from hypothesis import given
from hypothesis import strategies as st

from memhub.model.offload import NODE_SUMMARY_MAX_CHARS, OffloadEntry, TaskGraph
from memhub.offload.graph import (
    Flowchart,
    GraphEdge,
    GraphNode,
    SequenceGraphBuilder,
    digest,
    filename_for,
    finish_graph,
    is_graph_filename,
    normalise_status,
    normalise_text,
    parse,
    pause_graph,
    render,
)

NODE_LINE = re.compile(r"^\s+(\w[\w-]*)\[")
EDGE_LINE = re.compile(r"^\s+(\w[\w-]*) -(?:->|\.->)")


def entry(i: int, call: str, summary: str, score: int = 8) -> OffloadEntry:
    return OffloadEntry(f"call_{i}", call, summary, score, f"2024-05-01T10:{i:02d}:00Z", f"refs/call_{i}.md")


EXPLORE = [
    entry(1, 'Grep(pattern="login_user", path="src")', "42 matches in 6 files; src/memhub/auth.py, src/api/routes.py"),
    entry(2, 'Read(file_path="src/memhub/auth.py")', "src/memhub/auth.py: 240 lines; defines login_user, logout"),
    entry(3, 'Bash(command="rg -n redirect src")', "7 matches in 2 files; src/memhub/auth.py"),
]
CHANGE = [entry(4, 'Edit(file_path="src/memhub/auth.py")', "edited src/memhub/auth.py")]
FAILING = [
    entry(
        5,
        'Bash(command="pytest -x tests/test_auth.py")',
        "exit 1; 1 failed, 12 passed; FAILED tests/test_auth.py::test_login_redirect - AssertionError",
        score=2,
    )
]
PASSING = [entry(6, 'Bash(command="pytest -x tests/test_auth.py")', "exit 0; 13 passed", score=8)]
COMMIT = [entry(7, 'Bash(command="git commit -am fix")', "[main 3f2a1b9] Fix the login redirect loop")]


def node_ids(content: str) -> list[str]:
    return [m.group(1) for line in content.splitlines() if (m := NODE_LINE.match(line))]


def build(entries: list[OffloadEntry], graph: TaskGraph | None = None, label: str = "fix the login redirect"):
    update = SequenceGraphBuilder().update(graph, label, entries)
    return update, TaskGraph(update.filename, update.content, 0)


# -- the offline builder -------------------------------------------------------------------------------------------


def test_consecutive_calls_of_one_phase_are_one_step() -> None:
    update, _ = build(EXPLORE + CHANGE + FAILING)
    chart = parse(update.content)
    assert [n.id for n in chart.nodes] == ["n1", "n2", "n3"]
    assert [n.title.split(":")[0] for n in chart.nodes] == ["explore", "change", "verify"]
    assert update.node_of == {"call_1": "n1", "call_2": "n1", "call_3": "n1", "call_4": "n2", "call_5": "n3"}
    assert [(e.source, e.target) for e in chart.edges] == [("n1", "n2"), ("n2", "n3")]
    assert update.filename == "001-fix-the-login-redirect.mmd"


def test_the_latest_step_is_doing_or_blocked_and_earlier_ones_done() -> None:
    chart = parse(build(EXPLORE + CHANGE + FAILING)[0].content)
    assert [n.status for n in chart.nodes] == ["done", "done", "blocked"]
    chart = parse(build(EXPLORE + CHANGE)[0].content)
    assert [n.status for n in chart.nodes] == ["done", "doing"]


def test_node_text_comes_from_the_summaries_and_targets() -> None:
    explore = parse(build(EXPLORE)[0].content).nodes[0]
    assert explore.title == "explore: login_user, src/memhub/auth.py, rg -n redirect src"
    # All three summaries do not fit in 150 characters: the newest are kept.
    assert (
        explore.summary
        == "src/memhub/auth.py: 240 lines; defines login_user, logout · 7 matches in 2 files; src/memhub/auth.py"
    )
    assert len(explore.summary) <= NODE_SUMMARY_MAX_CHARS
    assert explore.timestamp == "2024-05-01T10:03:00Z"


def test_a_step_of_many_entries_keeps_the_newest_summaries_within_150_characters() -> None:
    reads = [
        entry(i, f'Read(file_path="src/m{i}.py")', f"src/m{i}.py: {i * 10} lines; defines f{i}") for i in range(30)
    ]
    node = parse(build(reads)[0].content).nodes[0]
    assert len(node.summary) <= NODE_SUMMARY_MAX_CHARS
    assert "src/m29.py" in node.summary and "src/m0.py" not in node.summary
    assert node.title.endswith("more") and len(node.title) <= 100


def test_patching_extends_the_graph_and_keeps_existing_nodes_and_ids() -> None:
    first, graph = build(EXPLORE + CHANGE + FAILING)
    before = parse(graph.content)
    second, _ = build(PASSING + COMMIT, graph, label="ignored for an existing graph")
    after = parse(second.content)
    assert second.filename == first.filename
    assert [n.id for n in after.nodes] == ["n1", "n2", "n3", "n4"]
    assert after.nodes[:2] == before.nodes[:2]  # untouched
    # The rerun continues the verify step that was blocked; the commit is a new step after it.
    assert second.node_of == {"call_6": "n3", "call_7": "n4"}
    assert [n.status for n in after.nodes] == ["done", "done", "done", "doing"]
    assert "13 passed" in after.nodes[2].summary
    assert after.goal == "fix the login redirect"
    assert after.created == "2024-05-01T10:01:00Z" and after.updated == "2024-05-01T10:07:00Z"


def test_every_entry_is_mapped_to_a_node_of_the_graph() -> None:
    calls = ["Read", "Grep", "Edit", "Bash", "Write", "TodoWrite", "Bash", "Bash", "Glob", "mcp__x__y"]
    commands = ["", "", "", "pytest", "", "", "git push", "make", "", ""]
    entries = [
        entry(i, f'{tool}(command="{command}")' if command else f'{tool}(path="p{i}")', f"result {i}")
        for i, (tool, command) in enumerate(zip(calls, commands, strict=True))
    ]
    update, _ = build(entries)
    ids = set(node_ids(update.content))
    assert set(update.node_of) == {e.tool_call_id for e in entries}
    assert set(update.node_of.values()) <= ids


def test_patching_a_graph_written_elsewhere_keeps_its_nodes() -> None:
    foreign = (
        '%%{ "taskGoal": "迁移数据库", "progress（0-100）": "40", "createdTime": "2024-04-30T09:00:00Z", '
        '"updatedTime": "2024-04-30T09:30:00Z" }%%\n'
        "flowchart TD\n"
        '    001-N1["调研: 阅读迁移脚本<br/>status: done<br/>summary: 找到 3 个脚本'
        '<br/>Timestamp: 2024-04-30T09:10:00Z"]\n'
        '    001-N2("修改: 更新 schema<br/>status: in_progress<br/>summary: 已改 users 表")\n'
        "    001-N1 -->|下一步| 001-N2\n"
        "    classDef done fill:#9f9\n"
    )
    update, _ = build(CHANGE, TaskGraph("001-migrate-db.mmd", foreign, 0))
    chart = parse(update.content)
    assert chart.goal == "迁移数据库"
    assert [n.id for n in chart.nodes] == ["001-N1", "001-N2", "n1"]
    assert chart.nodes[1].status == "done"  # it was the step under way: the work moved on
    assert chart.edges[0] == GraphEdge("001-N1", "001-N2", "下一步")
    assert update.node_of == {"call_4": "n1"}


def test_a_new_graph_without_entries_is_just_its_goal() -> None:
    update, graph = build([], label="refactor the API client")
    assert parse(update.content).nodes == ()
    assert digest(graph).goal == "refactor the API client"


# -- escaping ------------------------------------------------------------------------------------------------------

HOSTILE = [
    '"]) --> X[',
    'evil"]\n    pwned["owned"]\n    n1 --> pwned',
    "<br/>status: done<br/>summary: forged",
    "%%{init: {'theme': 'dark'}}%%",
    "click n1 call alert(1)",
    "line one\r\nline two\u2028three\x00four",
    "`**markdown**` #quot; &lt; #35; |pipe|",
    "}%% after the meta",
]


def test_hostile_summaries_cannot_add_nodes_edges_or_fields() -> None:
    # Reads and edits alternate, so every entry is a step of its own.
    calls = ['Read(file_path="{}")', 'Edit(file_path="{}")']
    entries = [
        entry(i, calls[i % 2].format(text.replace('"', "'")), text, score=9) for i, text in enumerate(HOSTILE, start=1)
    ]
    update, _ = build(entries, label='goal "]) --> X[ }%% <script>')
    lines = update.content.splitlines()
    assert lines[1] == "flowchart TD"
    nodes = [ln for ln in lines[2:] if NODE_LINE.match(ln)]
    edges = [ln for ln in lines[2:] if EDGE_LINE.match(ln)]
    assert len(nodes) == len(HOSTILE) and len(edges) == len(HOSTILE) - 1
    assert len(nodes) + len(edges) == len(lines) - 2  # nothing else
    for line in nodes:
        label = line.split("[", 1)[1]
        assert label.startswith('"') and label.endswith('"]')
        assert '"' not in label[1:-2] and label.count("<br/>") == 3
    meta = json.loads("{" + lines[0][3:-3] + "}")
    assert meta["taskGoal"] == 'goal "]) --> X[ }%% <script>'
    assert "%%" not in lines[0][3:-3]
    assert [n.summary for n in parse(update.content).nodes] == [normalise_text(t) for t in HOSTILE]


def test_hostile_text_round_trips() -> None:
    nodes = tuple(
        GraphNode(f"n{i}", normalise_text(text), "doing", normalise_text(text), normalise_text(text))
        for i, text in enumerate(HOSTILE, start=1)
    )
    chart = Flowchart(normalise_text(HOSTILE[0]), "c", "u", nodes, (GraphEdge("n1", "n2", normalise_text(HOSTILE[7])),))
    assert parse(render(chart)) == chart


label_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80).map(normalise_text)
node_ids_st = st.from_regex(r"n[1-9][0-9]{0,2}", fullmatch=True)


@given(
    goal=label_text,
    texts=st.lists(st.tuples(label_text, label_text, label_text), min_size=1, max_size=6),
    statuses=st.lists(st.sampled_from(["done", "doing", "paused", "blocked"]), min_size=6, max_size=6),
    edge_label=label_text,
)
def test_parse_inverts_render(
    goal: str, texts: list[tuple[str, str, str]], statuses: list[str], edge_label: str
) -> None:
    nodes = tuple(
        GraphNode(f"n{i}", title, statuses[i], summary, stamp)  # type: ignore[arg-type]
        for i, (title, summary, stamp) in enumerate(texts)
    )
    edges = tuple(
        GraphEdge(a.id, b.id, edge_label, dotted=i % 2 == 1) for i, (a, b) in enumerate(itertools.pairwise(nodes))
    )
    chart = Flowchart(goal, "2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z", nodes, edges)
    content = render(chart)
    assert parse(content) == chart
    assert len(node_ids(content)) == len(nodes)
    assert render(parse(content)) == content


# -- meta, digest, settling, names ---------------------------------------------------------------------------------


def test_the_meta_line_is_the_originals_shape_with_counts() -> None:
    content = build(EXPLORE + CHANGE + FAILING)[0].content
    first = content.splitlines()[0]
    assert first.startswith("%%{") and first.endswith("}%%")
    meta = json.loads("{" + re.match(r"^%%\{\s*(.*?)\s*\}%%", first).group(1) + "}")  # the original's reading
    assert meta == {
        "taskGoal": "fix the login redirect",
        "done": 2,
        "doing": 0,
        "paused": 0,
        "blocked": 1,
        "createdTime": "2024-05-01T10:01:00Z",
        "updatedTime": "2024-05-01T10:05:00Z",
    }


def test_digest_counts_nodes_by_status() -> None:
    _, graph = build(EXPLORE + CHANGE + FAILING)
    assert digest(graph) == type(digest(graph))("001-fix-the-login-redirect.mmd", "fix the login redirect", 2, 0, 1)
    assert digest(TaskGraph("004-csv-export.mmd", "", 0)).goal == "csv export"


def test_pausing_and_finishing_settle_the_step_under_way() -> None:
    _, graph = build(EXPLORE + CHANGE)
    paused = pause_graph(graph, 1_714_600_000_000)
    assert [n.status for n in parse(paused.content).nodes] == ["done", "paused"]
    assert paused.updated_ms == 1_714_600_000_000
    assert parse(paused.content).updated == "2024-05-01T21:46:40.000Z"
    finished = finish_graph(paused, 1_714_600_000_000)
    assert [n.status for n in parse(finished.content).nodes] == ["done", "done"]
    assert finish_graph(finished, 1) == finished  # nothing to settle: unchanged


def test_finishing_keeps_blocked_steps_as_warnings() -> None:
    _, graph = build(EXPLORE + FAILING)
    assert [n.status for n in parse(finish_graph(graph, 0).content).nodes] == ["done", "blocked"]


def test_a_paused_graph_resumed_in_the_same_phase_continues_its_step() -> None:
    _, graph = build(EXPLORE)
    paused = pause_graph(graph, 0)
    update, _ = build([entry(9, 'Read(file_path="src/more.py")', "src/more.py: 10 lines")], paused)
    assert update.node_of == {"call_9": "n1"}
    assert parse(update.content).nodes[0].status == "doing"


def test_filename_for_is_a_unique_safe_slug() -> None:
    assert (
        filename_for("Fix the login redirect in the auth module, please", []) == "001-fix-the-login-redirect-in-the.mmd"
    )
    assert filename_for("refactor API", ["001-a.mmd", "007-b.mmd", "notes.txt"]) == "008-refactor-api.mmd"
    assert filename_for("修复登录跳转", ["001-task.mmd"]) == "002-task.mmd"
    assert filename_for("../../etc/passwd", []) == "001-etc-passwd.mmd"
    assert filename_for("Café crème", []) == "001-cafe-creme.mmd"
    for label in ("x" * 500, "", "   ", "a/b\\c", "🙂🙂", "DROP TABLE; --"):
        name = filename_for(label, [])
        assert re.fullmatch(r"[a-z0-9-]+\.mmd", name) and is_graph_filename(name)
    assert not is_graph_filename("../x.mmd") and not is_graph_filename("X.mmd") and not is_graph_filename("a.md")


def test_statuses_in_other_words_are_mapped() -> None:
    assert normalise_status("in_progress") == "doing"
    assert normalise_status("In Progress") == "doing"
    assert normalise_status("TODO") == "paused"
    assert normalise_status("failed") == "blocked"
    assert normalise_status("完成") == "done"
    assert normalise_status("whatever") == "done"
