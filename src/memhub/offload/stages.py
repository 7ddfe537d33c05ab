"""The three stages of offload, as the service calls them; each has an offline and an LLM implementation.

- summary (L1): each tool pair → a summary of at most 200 characters and a replaceability score 0–10;
- task (L1.5): a new user prompt → is the last task done, is this a long task, does it continue a graph;
- graph (L2): the entries not yet on a graph → the task's Mermaid `flowchart TD`, patched as the work goes on.

A stage never loses its input: the LLM implementations fall back to the offline ones when the model fails
after its retries, so every pair gets a summary and every entry a node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memhub.model.offload import (
    GraphUpdate,
    OffloadEntry,
    PairSummary,
    RecentTurn,
    TaskGraph,
    TaskJudgment,
    ToolPair,
)


@dataclass(frozen=True, slots=True)
class GraphDigest:
    """What the task stage sees of an existing graph: its file, task goal and node counts by status."""

    filename: str
    goal: str
    done: int
    doing: int
    todo: int


class Summarizer(Protocol):
    """L1: one summary per pair, in the pairs' order."""

    def summarize(self, pairs: Sequence[ToolPair], context: Sequence[RecentTurn]) -> list[PairSummary]: ...


class TaskJudge(Protocol):
    """L1.5: what a new user prompt means for the session's tasks."""

    def judge(
        self, prompt: str, recent: Sequence[RecentTurn], graphs: Sequence[GraphDigest], active: str | None
    ) -> TaskJudgment: ...


class GraphBuilder(Protocol):
    """L2: the active task's graph with `entries` placed on it (a new graph when `graph` is None)."""

    def update(self, graph: TaskGraph | None, label: str, entries: Sequence[OffloadEntry]) -> GraphUpdate: ...


@dataclass(frozen=True, slots=True)
class OffloadStages:
    """The stages one gateway runs: all offline, or all through its LLM (with offline fallbacks)."""

    summarizer: Summarizer
    judge: TaskJudge
    graph: GraphBuilder
    mode: str  # "offline" | "llm"
