"""Mermaid task graphs: one `flowchart TD` per task, read and written here, and the offline graph stage (L2).

The format is the original system's, so what reads its graphs reads ours:

    %%{"taskGoal": "fix the login redirect", "done": 1, "doing": 1, "paused": 0, "blocked": 0, …}%%
    flowchart TD
        n1["explore: src/auth.py, login_user<br/>status: done<br/>summary: …<br/>Timestamp: 2024-05-01T10:02:00Z"]
        n2["change: src/auth.py<br/>status: doing<br/>summary: edited src/auth.py<br/>Timestamp: …"]
        n1 --> n2

The first line is a meta comment (a JSON object's members between `%%{` and `}%%`: the task goal, node counts
by status, created and updated times). Label text is put on one line and escaped with Mermaid's entity codes
(`#quot;`, `#lt;`, `#gt;`, `#35;`, `#96;`; `#124;` in an edge label), so no tool output can close a label, add
a field, a node or an edge; `parse` undoes exactly that, and `parse(render(chart)) == chart` for normalised text.

The offline builder places entries from the sequence of calls: consecutive entries of one phase (explore,
change, verify, vcs, other; see `toolcall`) are one step. Steps are appended to the graph (its nodes and ids
are kept, new ids are `n<k>`); the step the work is on is `doing`, or `blocked` when its last result is a
failure (a summary that reports one and a score of at most 3, which the summary stage gives failures), and the
step before it becomes `done`. When the task ends or is left, `finish_graph` / `pause_graph` settle the open
step.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from memhub.llm.jsonrepair import parse_json_loose
from memhub.model.offload import (
    NODE_STATUSES,
    NODE_SUMMARY_MAX_CHARS,
    GraphUpdate,
    NodeStatus,
    OffloadEntry,
    TaskGraph,
)
from memhub.offload.stages import GraphDigest
from memhub.offload.summary import reads_as_failure
from memhub.offload.toolcall import PHASE_OF, Phase, phase_of_call, target_of_call
from memhub.timeutil import ms_to_iso, parse_iso_ms

__all__ = [
    "Flowchart",
    "GraphEdge",
    "GraphNode",
    "SequenceGraphBuilder",
    "digest",
    "extend_chart",
    "filename_for",
    "finish_graph",
    "is_graph_filename",
    "later_instant",
    "normalise_status",
    "normalise_text",
    "parse",
    "pause_graph",
    "render",
]

TITLE_MAX_CHARS = 100
GOAL_MAX_CHARS = 200
TARGET_MAX_CHARS = 40
SLUG_MAX_CHARS = 30
FAILURE_SCORE_MAX = 3  # the summary stage scores a failure the agent is still working on 0–3

_PHASES: frozenset[str] = frozenset(PHASE_OF.values())
# What models and other writers call a status, in our four words.
_STATUS_WORDS: dict[str, NodeStatus] = {
    **{s: s for s in NODE_STATUSES},
    **dict.fromkeys(("completed", "complete", "finished", "success", "succeeded", "ok", "resolved"), "done"),
    **dict.fromkeys(("in_progress", "in-progress", "active", "running", "current", "wip", "started"), "doing"),
    **dict.fromkeys(("todo", "pending", "waiting", "on_hold", "on-hold", "planned", "suspended"), "paused"),
    **dict.fromkeys(("failed", "failure", "error", "stuck", "abandoned", "dead_end", "dead-end"), "blocked"),
    **dict.fromkeys(("完成", "已完成"), "done"),
    **dict.fromkeys(("进行中",), "doing"),
    **dict.fromkeys(("暂停", "待办"), "paused"),
    **dict.fromkeys(("阻塞", "失败"), "blocked"),
}

_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;", "|": "#124;"}
_ESCAPABLE = re.compile(r'[#"<>`]')
_ESCAPABLE_IN_EDGE = re.compile(r'[#"<>`|]')  # an edge label ends at a bar
_ENTITY = re.compile(r"#(quot|lt|gt|amp|\d{1,7});")
_NAMED_ENTITIES = {"quot": '"', "lt": "<", "gt": ">", "amp": "&"}
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_SPACES = re.compile(r"\s+")

_META = re.compile(r"^%%\{(.*)\}%%\s*$")
_HEADER = re.compile(r"^(?:flowchart|graph)\s+\w+\s*;?$", re.IGNORECASE)
_NODE = re.compile(
    r"^(\w[\w-]*)\s*(\(\[|\[\[|\[\(|\(\(|\{\{|\[|\(|\{|>)\s*(\"?)(.*?)\3\s*(\]\)|\]\]|\)\]|\)\)|\}\}|\]|\)|\})\s*;?$"
)
_EDGE = re.compile(r"^(\w[\w-]*)\s*(-->|-\.->|==>|---)\s*(?:\|([^|]*)\|\s*)?(\w[\w-]*)\s*;?$")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_FIELD = re.compile(r"^(status|summary|timestamp|time)\s*:\s*(.*)$", re.IGNORECASE | re.DOTALL)
_OUR_ID = re.compile(r"^n(\d+)$")
_JOINER = " · "  # between the summaries of one step's entries (";" and "," are used inside them)
_MORE = re.compile(r" \+(\d+) more$")
_SEQUENCE = re.compile(r"^(\d+)-")
_GRAPH_FILENAME = re.compile(r"^[a-z0-9-]{1,96}\.mmd$")


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One step of a task: `title` says what was done (`phase: targets`), `summary` what came of it."""

    id: str
    title: str
    status: NodeStatus
    summary: str = ""
    timestamp: str = ""


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """`source --> target` (dotted: `-.->`, a reference rather than a sequence), with an optional label."""

    source: str
    target: str
    label: str = ""
    dotted: bool = False


@dataclass(frozen=True, slots=True)
class Flowchart:
    """A task graph as data: its meta line's goal and times, its nodes in order, its edges."""

    goal: str
    created: str = ""
    updated: str = ""
    nodes: tuple[GraphNode, ...] = ()
    edges: tuple[GraphEdge, ...] = ()

    def node(self, node_id: str) -> GraphNode | None:
        """The node with this id, if any."""
        return next((n for n in self.nodes if n.id == node_id), None)

    def with_node(self, node: GraphNode) -> Flowchart:
        """This chart with `node` replacing the node of its id, or appended when the id is new."""
        if self.node(node.id) is None:
            return replace(self, nodes=(*self.nodes, node))
        return replace(self, nodes=tuple(node if n.id == node.id else n for n in self.nodes))

    def next_id(self) -> str:
        """A fresh node id, `n<k>` one past the highest `n<k>` in use."""
        taken = {n.id for n in self.nodes}
        k = 1 + max((int(m.group(1)) for n in self.nodes if (m := _OUR_ID.match(n.id))), default=0)
        while f"n{k}" in taken:
            k += 1
        return f"n{k}"


# -- text ----------------------------------------------------------------------------------------------------------


def normalise_text(text: str) -> str:
    """Text as a label holds it: one line, single spaces, no control characters."""
    return _SPACES.sub(" ", _CONTROL.sub(" ", text)).strip()


def normalise_status(value: object) -> NodeStatus:
    """One of the four statuses for whatever a writer called it (unknown words: done, the safest claim)."""
    word = _SPACES.sub("_", str(value).strip().lower())
    return _STATUS_WORDS.get(word, _STATUS_WORDS.get(word.replace("_", "-"), "done"))


def _escape(text: str, pattern: re.Pattern[str] = _ESCAPABLE) -> str:
    return pattern.sub(lambda m: _ESCAPES[m.group()], normalise_text(text))


def _unescape(text: str) -> str:
    def entity(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in _NAMED_ENTITIES:
            return _NAMED_ENTITIES[name]
        code = int(name)
        return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code < 0xE000 else match.group()

    return _ENTITY.sub(entity, text)


# -- render and parse ----------------------------------------------------------------------------------------------


def render(chart: Flowchart) -> str:
    """The Mermaid text of a chart (meta line first)."""
    counts = {status: sum(1 for n in chart.nodes if n.status == status) for status in NODE_STATUSES}
    meta = {"taskGoal": normalise_text(chart.goal), **counts, "createdTime": chart.created}
    meta["updatedTime"] = chart.updated
    # "%%" inside a value would end the comment early for readers that look for the first "}%%".
    members = json.dumps(meta, ensure_ascii=False)[1:-1].replace("%%", "%\\u0025")
    lines = [f"%%{{{members}}}%%", "flowchart TD"]
    for node in chart.nodes:
        fields = [
            _escape(node.title),
            f"status: {node.status}",
            f"summary: {_escape(node.summary)}",
            f"Timestamp: {_escape(node.timestamp)}",
        ]
        lines.append(f'    {node.id}["{"<br/>".join(fields)}"]')
    for edge in chart.edges:
        arrow = "-.->" if edge.dotted else "-->"
        label = f"|{_escape(edge.label, _ESCAPABLE_IN_EDGE)}|" if edge.label else ""
        lines.append(f"    {edge.source} {arrow}{label} {edge.target}")
    return "\n".join(lines) + "\n"


def parse(content: str) -> Flowchart:
    """A chart from Mermaid text: ours, or a similar flowchart (other node shapes, fields missing, statuses in
    other words); lines it does not understand are left out, edges to unknown nodes too."""
    lines = content.splitlines()
    goal = created = updated = ""
    if lines and (meta := _read_meta(lines[0])) is not None:
        goal = _text(meta.get("taskGoal"))
        created, updated = _text(meta.get("createdTime")), _text(meta.get("updatedTime"))
        lines = lines[1:]
    nodes: dict[str, GraphNode] = {}
    edges: list[GraphEdge] = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("%%") or _HEADER.match(line):
            continue
        if edge := _EDGE.match(line):
            source, arrow, label, target = edge.groups()
            edges.append(GraphEdge(source, target, _unescape(label or "").strip(), arrow == "-.->"))
        elif node := _NODE.match(line):
            nodes[node.group(1)] = _read_node(node.group(1), node.group(4))
    known = [e for e in dict.fromkeys(edges) if e.source in nodes and e.target in nodes]
    return Flowchart(goal, created, updated, tuple(nodes.values()), tuple(known))


def _read_meta(line: str) -> dict[str, object] | None:
    match = _META.match(line.strip())
    if not match:
        return None
    text = "{" + match.group(1) + "}"
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = parse_json_loose(text)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _read_node(node_id: str, label: str) -> GraphNode:
    title: list[str] = []
    fields: dict[str, str] = {}
    for part in _BREAK.split(label):
        text = normalise_text(_unescape(part))
        field = _FIELD.match(text)
        if field:
            name = field.group(1).lower()
            fields["timestamp" if name == "time" else name] = field.group(2).strip()
        elif text:
            title.append(text)
    return GraphNode(
        id=node_id,
        title=" ".join(title),
        status=normalise_status(fields.get("status", "done")),
        summary=fields.get("summary", ""),
        timestamp=fields.get("timestamp", ""),
    )


def _text(value: object) -> str:
    return normalise_text(value) if isinstance(value, str) else ""


# -- graphs as the stages see them ---------------------------------------------------------------------------------


def digest(graph: TaskGraph) -> GraphDigest:
    """What the task stage sees of a graph; `todo` counts paused and blocked steps (unfinished, not under way)."""
    chart = parse(graph.content)
    statuses = [n.status for n in chart.nodes]
    return GraphDigest(
        filename=graph.filename,
        goal=chart.goal or _label_of(graph.filename),
        done=statuses.count("done"),
        doing=statuses.count("doing"),
        todo=statuses.count("paused") + statuses.count("blocked"),
    )


def pause_graph(graph: TaskGraph, now_ms: int) -> TaskGraph:
    """The graph of a task the session left: its step under way becomes `paused`."""
    return _settle(graph, {"doing": "paused"}, now_ms)


def finish_graph(graph: TaskGraph, now_ms: int) -> TaskGraph:
    """The graph of a finished task: steps under way or paused become `done` (blocked ones stay, as warnings)."""
    return _settle(graph, {"doing": "done", "paused": "done"}, now_ms)


def _settle(graph: TaskGraph, changes: dict[str, NodeStatus], now_ms: int) -> TaskGraph:
    if not graph.content.strip():
        return graph
    chart = parse(graph.content)
    nodes = tuple(replace(n, status=changes.get(n.status, n.status)) for n in chart.nodes)
    if nodes == chart.nodes:
        return graph
    settled = replace(chart, nodes=nodes, updated=ms_to_iso(now_ms))
    return TaskGraph(graph.filename, render(settled), now_ms)


def filename_for(label: str, existing: Collection[str]) -> str:
    """A new graph's file name, `<seq>-<slug>.mmd` (`[a-z0-9-]+\\.mmd`), after the highest sequence in use."""
    sequence = 1 + max((int(m.group(1)) for name in existing if (m := _SEQUENCE.match(name))), default=0)
    slug = _slug(label)
    while f"{sequence:03d}-{slug}.mmd" in existing:
        sequence += 1
    return f"{sequence:03d}-{slug}.mmd"


def is_graph_filename(name: str) -> bool:
    """Whether `name` is a graph file name this module could have made (safe as a path component)."""
    return bool(_GRAPH_FILENAME.match(name))


def _slug(label: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode("ascii").lower()
    words = re.findall(r"[a-z0-9]+", ascii_text)
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > SLUG_MAX_CHARS:
            break
        slug = candidate
    return slug or (words[0][:SLUG_MAX_CHARS] if words else "task")


def _label_of(filename: str) -> str:
    return _SEQUENCE.sub("", filename.removesuffix(".mmd")).replace("-", " ")


# -- the offline graph stage ---------------------------------------------------------------------------------------


class SequenceGraphBuilder:
    """GraphBuilder without a model: one node per run of same-phase calls, appended in order."""

    def update(self, graph: TaskGraph | None, label: str, entries: Sequence[OffloadEntry]) -> GraphUpdate:
        """`graph` (a new one named `filename_for(label, ())` when None) with `entries` placed on it."""
        filename = graph.filename if graph is not None else filename_for(label, ())
        chart = parse(graph.content) if graph is not None else Flowchart(goal="")
        if not chart.goal:
            chart = replace(chart, goal=normalise_text(label)[:GOAL_MAX_CHARS])
        chart, node_of = extend_chart(chart, entries)
        return GraphUpdate(filename=filename, content=render(chart), node_of=node_of)


def extend_chart(chart: Flowchart, entries: Sequence[OffloadEntry]) -> tuple[Flowchart, dict[str, str]]:
    """`chart` with `entries` placed as steps after its last node, and the node of every entry."""
    node_of: dict[str, str] = {}
    for phase, group in _steps(entries):
        last = chart.nodes[-1] if chart.nodes else None
        if last is not None and last.status != "done" and _phase_of_node(last) == phase:
            node = _grown(last, group)
        else:
            if last is not None and last.status != "done":
                chart = chart.with_node(replace(last, status="done"))  # the work moved on to a new step
            node = _grown(GraphNode(chart.next_id(), f"{phase}:", "doing"), group)
            if last is not None:
                chart = replace(chart, edges=(*chart.edges, GraphEdge(last.id, node.id)))
        chart = chart.with_node(node)
        node_of.update((entry.tool_call_id, node.id) for entry in group)
        chart = replace(
            chart, created=chart.created or group[0].timestamp, updated=later_instant(chart.updated, node.timestamp)
        )
    return chart, node_of


def _steps(entries: Sequence[OffloadEntry]) -> list[tuple[Phase, list[OffloadEntry]]]:
    steps: list[tuple[Phase, list[OffloadEntry]]] = []
    for entry in entries:
        phase = phase_of_call(entry.tool_call)
        if steps and steps[-1][0] == phase:
            steps[-1][1].append(entry)
        else:
            steps.append((phase, [entry]))
    return steps


def _phase_of_node(node: GraphNode) -> str | None:
    head = node.title.split(":", 1)[0]
    return head if head in _PHASES and ":" in node.title else None


def _grown(node: GraphNode, group: Sequence[OffloadEntry]) -> GraphNode:
    """`node` with a step's entries added: their targets in the title, their summaries, the latest time."""
    phase, _, listed = node.title.partition(":")
    targets = [_cut(normalise_text(target_of_call(e.tool_call)), TARGET_MAX_CHARS) for e in group]
    failing = reads_as_failure(group[-1].summary) and group[-1].score <= FAILURE_SCORE_MAX
    timestamp = node.timestamp
    for entry in group:
        timestamp = later_instant(timestamp, entry.timestamp)
    return GraphNode(
        id=node.id,
        title=_title(phase, listed.strip(), targets),
        status="blocked" if failing else "doing",
        summary=_node_summary(node.summary, [e.summary for e in group]),
        timestamp=timestamp,
    )


def _title(phase: str, listed: str, targets: Sequence[str]) -> str:
    """`phase: a, b, c +N more` within TITLE_MAX_CHARS, the previously listed targets kept in front."""
    hidden = 0
    if more := _MORE.search(listed):
        hidden, listed = int(more.group(1)), listed[: more.start()]
    shown = listed.split(", ") if listed else []
    for target in targets:
        if not target or target in shown:
            continue
        if len(phase) + 2 + len(", ".join([*shown, target])) + len(" +999 more") <= TITLE_MAX_CHARS:
            shown.append(target)
        else:
            hidden += 1
    return f"{phase}: {', '.join(shown)}" + (f" +{hidden} more" if hidden else "")


def _node_summary(previous: str, summaries: Sequence[str]) -> str:
    """The summaries of a step's entries, newest kept first when they do not all fit NODE_SUMMARY_MAX_CHARS."""
    parts = [previous] if previous else []
    for summary in summaries:
        text = normalise_text(summary)
        if text and text not in parts:
            parts.append(text)
    kept: list[str] = []
    used = 0
    for part in reversed(parts):
        cost = len(part) + (len(_JOINER) if kept else 0)
        if used + cost > NODE_SUMMARY_MAX_CHARS:
            if not kept:
                kept.append(_cut(part, NODE_SUMMARY_MAX_CHARS))
            break
        kept.append(part)
        used += cost
    return _JOINER.join(reversed(kept))


def later_instant(current: str, candidate: str) -> str:
    """The later of two ISO instants; an instant that does not parse loses to one that does."""
    if not current:
        return candidate
    new, old = parse_iso_ms(candidate), parse_iso_ms(current)
    if new is None:
        return current
    return candidate if old is None or new >= old else current


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
