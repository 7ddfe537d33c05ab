"""The offload stages over an LLM: summaries (L1), task judgment (L1.5) and task graphs (L2).

Each call goes through `ChatClient` (which retries transport failures within its budget), the answer is read
with `parse_json_loose` and every field is validated against the contracts in `llm_prompts`: summaries cut to
200 characters, scores clamped to whole numbers 0–10, unknown statuses mapped, unknown tool_call_ids, graph
files and node ids ignored. An answer with nothing usable gets one re-ask. Whatever the model still did not
cover — the client gave up, the re-ask was unusable too, an item was left out — is done by the offline stage,
so a pair always gets a summary, a prompt a judgment and an entry a node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from memhub.llm.client import ChatClient, LLMError
from memhub.llm.jsonrepair import parse_json_loose
from memhub.model.offload import (
    NODE_SUMMARY_MAX_CHARS,
    SCORE_MAX,
    SCORE_MIN,
    SUMMARY_MAX_CHARS,
    GraphUpdate,
    OffloadEntry,
    PairSummary,
    RecentTurn,
    TaskGraph,
    TaskJudgment,
    ToolPair,
)
from memhub.offload.graph import (
    GOAL_MAX_CHARS,
    TITLE_MAX_CHARS,
    Flowchart,
    GraphEdge,
    GraphNode,
    SequenceGraphBuilder,
    extend_chart,
    filename_for,
    later_instant,
    normalise_status,
    normalise_text,
    parse,
    render,
)
from memhub.offload.llm_prompts import (
    MAX_BATCH_CHARS,
    MAX_ENTRIES_PER_CALL,
    MAX_PAIRS_PER_CALL,
    build_graph_prompt,
    build_judge_prompt,
    build_summary_prompt,
    pair_line,
)
from memhub.offload.stages import GraphDigest, Summarizer, TaskJudge
from memhub.offload.summary import ExtractiveSummarizer, summarize_pair
from memhub.offload.tasks import LABEL_MAX_CHARS, HeuristicTaskJudge, task_label
from memhub.offload.toolcall import render_call

__all__ = ["LLMGraphBuilder", "LLMSummarizer", "LLMTaskJudge"]

log = logging.getLogger("memhub.offload.llm")

T = TypeVar("T")

_REASK_CHARS = 4_000  # how much of a bad answer is echoed back in the re-ask
_REASK = (
    "Your previous answer was not usable: it was not valid JSON in the required shape, or it covered none of the "
    "items. Reply again with ONLY the JSON object described in the system message: no Markdown fences, no "
    "explanations, no text before or after it."
)
_MAX_NODES_PER_ANSWER = 20


class _Model:
    """One client, JSON calls with one re-ask; None (never an exception) when the model cannot be used."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def ask(self, system: str, user: str, accept: Callable[[Any], T | None], what: str) -> T | None:
        """The accepted reading of the model's answer; None after a client failure or two unusable answers."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        for attempt in range(2):
            try:
                result = self.client.complete(messages, json_mode=True)
            except LLMError as exc:
                log.warning("%s: the model failed (%s); the offline stage takes over", what, exc)
                return None
            try:
                value = accept(parse_json_loose(result.text))
            except ValueError:
                value = None
            if value is not None:
                return value
            if attempt == 0:
                log.info("%s: unusable model output (%d chars); asking again", what, len(result.text))
                messages += [
                    {"role": "assistant", "content": result.text[:_REASK_CHARS]},
                    {"role": "user", "content": _REASK},
                ]
        log.warning("%s: the model's answer was unusable twice; the offline stage takes over", what)
        return None


# -- L1 summaries --------------------------------------------------------------------------------------------------


class LLMSummarizer:
    """Summarizer over an LLM, in batches of at most 20 pairs and 48,000 prompt characters."""

    def __init__(self, client: ChatClient, fallback: Summarizer | None = None) -> None:
        self._model = _Model(client)
        self.fallback = fallback if fallback is not None else ExtractiveSummarizer()

    def summarize(self, pairs: Sequence[ToolPair], context: Sequence[RecentTurn]) -> list[PairSummary]:
        """One summary per pair, in order; what the model did not summarise is summarised offline."""
        found: dict[str, PairSummary] = {}
        for batch in _batches(pairs):
            system, user = build_summary_prompt(batch, context)
            read = self._model.ask(system, user, lambda value, b=batch: _read_summaries(value, b), "offload summary")
            found.update(read or {})
        missing = [p for p in pairs if p.tool_call_id not in found]
        if missing:
            found.update((s.tool_call_id, s) for s in self.fallback.summarize(missing, context))
        return [found[p.tool_call_id] for p in pairs]


def _batches(pairs: Sequence[ToolPair]) -> Iterator[list[ToolPair]]:
    batch: list[ToolPair] = []
    chars = 0
    for pair in pairs:
        size = len(pair_line(pair))
        if batch and (len(batch) >= MAX_PAIRS_PER_CALL or chars + size > MAX_BATCH_CHARS):
            yield batch
            batch, chars = [], 0
        batch.append(pair)
        chars += size
    if batch:
        yield batch


def _read_summaries(value: Any, batch: Sequence[ToolPair]) -> dict[str, PairSummary] | None:
    """The valid summaries of an answer by tool_call_id; None when it has none (worth a re-ask)."""
    by_id = {p.tool_call_id: p for p in batch}
    found: dict[str, PairSummary] = {}
    for item in _items(value, ("summaries", "results", "items", "data")):
        pair = by_id.get(str(item.get("tool_call_id", item.get("id", ""))).strip())
        summary = _clean(item.get("summary"), SUMMARY_MAX_CHARS)
        if pair is None or not summary or pair.tool_call_id in found:
            continue
        score = _score(item.get("score"))
        found[pair.tool_call_id] = PairSummary(
            tool_call_id=pair.tool_call_id,
            # Our rendering, not the model's: it is deterministic and the graph stage reads it back.
            tool_call=render_call(pair.tool_name, pair.params),
            summary=summary,
            score=score if score is not None else summarize_pair(pair).score,
            timestamp=pair.timestamp,
        )
    return found or None


def _score(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or value != value:  # NaN
        return None
    return max(SCORE_MIN, min(SCORE_MAX, round(value)))


# -- L1.5 task judgment --------------------------------------------------------------------------------------------


class LLMTaskJudge:
    """TaskJudge over an LLM; the heuristic judge answers when the model cannot."""

    def __init__(self, client: ChatClient, fallback: TaskJudge | None = None) -> None:
        self._model = _Model(client)
        self.fallback = fallback if fallback is not None else HeuristicTaskJudge()

    def judge(
        self, prompt: str, recent: Sequence[RecentTurn], graphs: Sequence[GraphDigest], active: str | None
    ) -> TaskJudgment:
        """The model's judgment of `prompt`, made consistent with the session's graphs."""
        system, user = build_judge_prompt(prompt, recent, graphs, active)
        known = {g.filename for g in graphs} | ({active} if active else set())
        judgment = self._model.ask(
            system, user, lambda value: _read_judgment(value, prompt, known, active), "offload task judgment"
        )
        return judgment if judgment is not None else self.fallback.judge(prompt, recent, graphs, active)


_JUDGMENT_KEYS = {
    "task_completed": ("task_completed", "taskCompleted"),
    "is_long_task": ("is_long_task", "isLongTask"),
    "is_continuation": ("is_continuation", "isContinuation"),
    "continuation_graph": ("continuation_graph", "continuationMmdFile", "continuation_mmd_file"),
    "new_task_label": ("new_task_label", "newTaskLabel"),
}


def _read_judgment(value: Any, prompt: str, known: set[str], active: str | None) -> TaskJudgment | None:
    """A consistent judgment from an answer (the original's camelCase names accepted); None without any flag.

    Made consistent: without an active graph the task before is completed; a task that goes on continues the
    active graph; a continuation names a known graph or is none; only a new long task has a label.
    """
    if not isinstance(value, dict):
        return None
    field = {name: next((value[k] for k in keys if k in value), None) for name, keys in _JUDGMENT_KEYS.items()}
    if all(field[name] is None for name in ("task_completed", "is_long_task", "is_continuation")):
        return None
    completed = _flag(field["task_completed"]) or active is None
    long_task = _flag(field["is_long_task"])
    graph = field["continuation_graph"]
    graph = graph.strip() if isinstance(graph, str) and graph.strip() in known else None
    continues = _flag(field["is_continuation"]) and graph is not None
    if not completed or (continues and graph == active):
        return TaskJudgment(False, True, True, continuation_graph=active)
    if continues:
        return TaskJudgment(True, True, True, continuation_graph=graph)
    label = (_clean(field["new_task_label"], LABEL_MAX_CHARS) or task_label(prompt)) if long_task else None
    return TaskJudgment(True, long_task, False, new_task_label=label)


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0", "no", "null", "none")
    return bool(value)


# -- L2 task graph -------------------------------------------------------------------------------------------------


class LLMGraphBuilder:
    """GraphBuilder over an LLM: the model says which nodes to add or change and where each entry goes; the
    graph is rendered (and escaped) by `graph`, and entries the model did not place are placed offline."""

    def __init__(self, client: ChatClient, fallback: SequenceGraphBuilder | None = None) -> None:
        self._model = _Model(client)
        self.fallback = fallback if fallback is not None else SequenceGraphBuilder()

    def update(self, graph: TaskGraph | None, label: str, entries: Sequence[OffloadEntry]) -> GraphUpdate:
        """`graph` (a new one named `filename_for(label, ())` when None) with `entries` placed on it."""
        filename = graph.filename if graph is not None else filename_for(label, ())
        chart = parse(graph.content) if graph is not None else Flowchart(goal="")
        if not chart.goal:
            chart = replace(chart, goal=normalise_text(label)[:GOAL_MAX_CHARS])
        node_of: dict[str, str] = {}
        for start in range(0, len(entries), MAX_ENTRIES_PER_CALL):
            chunk = entries[start : start + MAX_ENTRIES_PER_CALL]
            system, user = build_graph_prompt(render(chart) if chart.nodes else "", chart.goal, chunk)
            patched = self._model.ask(
                system, user, lambda value, c=chart, e=chunk: _read_patch(value, c, e), "offload task graph"
            )
            mapped: dict[str, str] = {}
            if patched is not None:
                chart, mapped = patched
            chart, placed = extend_chart(chart, [e for e in chunk if e.tool_call_id not in mapped])
            node_of.update(mapped)
            node_of.update(placed)
        return GraphUpdate(filename=filename, content=render(chart), node_of=node_of)


def _read_patch(
    value: Any, chart: Flowchart, entries: Sequence[OffloadEntry]
) -> tuple[Flowchart, dict[str, str]] | None:
    """`chart` with the answer's node changes applied and the entries it mapped; None when it maps nothing.

    New nodes get our ids (`n<k>`, whatever the model called them) and are kept only when an entry is mapped
    to them: the graph records what happened, so a node without a source is the model's invention.
    """
    if not isinstance(value, dict):
        return None
    mapping = value.get("node_of", value.get("node_mapping"))
    mapping = mapping if isinstance(mapping, Mapping) else {}
    by_id = {e.tool_call_id: e for e in entries}
    existing = {n.id for n in chart.nodes}
    items = [i for i in _items(value.get("nodes"), ()) if isinstance(i.get("id"), str)][:_MAX_NODES_PER_ANSWER]
    new_refs = [i["id"].strip() for i in items if i["id"].strip() not in existing]
    targets: dict[str, list[OffloadEntry]] = {}
    for call_id, ref in mapping.items():
        ref = str(ref).strip()
        if call_id in by_id and (ref in existing or ref in new_refs):
            targets.setdefault(ref, []).append(by_id[call_id])
    if not targets:
        return None
    ids: dict[str, str] = {}  # model ref -> node id, for every node kept
    follows: dict[str, str | None] = {}  # a dropped new node's predecessor, so later nodes can follow that
    last = chart.nodes[-1].id if chart.nodes else None
    for item in items:
        ref = item["id"].strip()
        after = _resolve(item.get("after"), existing, ids, follows) or last
        if (current := chart.node(ref)) is not None:
            chart = chart.with_node(_changed(current, item))
        elif ref in targets and ref not in ids:
            node = _changed(GraphNode(chart.next_id(), "step", "doing"), item)
            chart = chart.with_node(node)
            if after is not None:
                chart = replace(chart, edges=(*chart.edges, GraphEdge(after, node.id)))
            ids[ref] = last = node.id
        else:
            follows[ref] = after
    node_of: dict[str, str] = {}
    for ref, group in targets.items():
        node_id = ref if ref in existing else ids[ref]
        stamp = ""
        for entry in group:
            stamp = later_instant(stamp, entry.timestamp)
        node = next(n for n in chart.nodes if n.id == node_id)
        chart = chart.with_node(replace(node, timestamp=later_instant(node.timestamp, stamp)))
        chart = replace(chart, created=chart.created or group[0].timestamp, updated=later_instant(chart.updated, stamp))
        node_of.update((e.tool_call_id, node_id) for e in group)
    goal = _clean(value.get("goal"), GOAL_MAX_CHARS)
    return (replace(chart, goal=goal) if goal else chart), node_of


def _changed(node: GraphNode, item: Mapping[str, Any]) -> GraphNode:
    """`node` with the fields an answer gave for it (validated and cut)."""
    return replace(
        node,
        title=_clean(item.get("title"), TITLE_MAX_CHARS) or node.title,
        summary=_clean(item.get("summary"), NODE_SUMMARY_MAX_CHARS) or node.summary,
        status=normalise_status(item["status"]) if item.get("status") is not None else node.status,
    )


def _resolve(ref: Any, existing: set[str], ids: dict[str, str], follows: dict[str, str | None]) -> str | None:
    """The node id an answer's `after` points at, following dropped new nodes back to what they followed."""
    seen: set[str] = set()
    while isinstance(ref, str) and ref.strip() not in seen:
        ref = ref.strip()
        if ref in existing:
            return ref
        if ref in ids:
            return ids[ref]
        seen.add(ref)
        ref = follows.get(ref)
    return None


# -- shared readers ------------------------------------------------------------------------------------------------


def _items(value: Any, wrapper_keys: Sequence[str]) -> list[dict[str, Any]]:
    """The objects of a list answer: a bare list, or a list under one of `wrapper_keys`."""
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        wrapped = next((value[k] for k in wrapper_keys if isinstance(value.get(k), list)), None)
        value = wrapped if wrapped is not None else lists[0] if len(lists) == 1 and wrapper_keys else [value]
    return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def _clean(value: Any, limit: int) -> str:
    """A model's text on one line, cut to `limit` characters ("" when it is not text)."""
    if not isinstance(value, str):
        return ""
    text = normalise_text(value)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
