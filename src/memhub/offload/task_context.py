"""The active task graph as a `<current_task_context>` block in the prompt, within a token budget.

Dropping old turns loses the thread of a long task; the task graph keeps it: what was done, what is in hand.
The graph's text comes from a model, so it is escaped: nothing in it can close the block and speak outside.
"""

from __future__ import annotations

import re

from memhub.model.offload import TaskGraph
from memhub.offload.tokens import TokenCounter

OPEN_TAG = "<current_task_context>"
CLOSE_TAG = "</current_task_context>"
# Any spelling of the block's own tags inside the graph, however spaced or cased.
_TAG = re.compile(r"<(?=\s*/?\s*current_task_context)", re.IGNORECASE)


def task_context_block(graph: TaskGraph, budget_tokens: int, counter: TokenCounter) -> str | None:
    """The graph's block in at most `budget_tokens`, cut after a whole line when larger; None when empty.

    A cut keeps the graph's first lines (its header and the earliest nodes) and says how many lines went.
    None too when even the block's frame does not fit.
    """
    lines = graph.content.strip("\n").splitlines()
    if not any(line.strip() for line in lines):
        return None
    filename = _escape(graph.filename)
    whole = _block(filename, lines, cut=0)
    if counter.count(whole) <= budget_tokens:
        return whole
    fits, too_many = 0, len(lines)  # the largest count of kept lines that fits lies in [fits, too_many)
    while too_many - fits > 1:
        middle = (fits + too_many) // 2
        if counter.count(_block(filename, lines[:middle], cut=len(lines) - middle)) <= budget_tokens:
            fits = middle
        else:
            too_many = middle
    block = _block(filename, lines[:fits], cut=len(lines) - fits)
    return block if counter.count(block) <= budget_tokens else None


def is_task_context(text: str) -> bool:
    """Whether `text` is a block this module made (an earlier compaction's, sent back by the client)."""
    return text.startswith(OPEN_TAG) and text.endswith(CLOSE_TAG)


def _block(filename: str, lines: list[str], cut: int) -> str:
    graph = "\n".join(_escape(line) for line in lines)
    if cut:
        graph += f"\n%% … {cut} more lines of the graph cut to fit the context"
    return (
        f"{OPEN_TAG}\n"
        f'The task graph of the work in progress ({filename}): nodes marked "doing" are the current focus and '
        '"done" ones are finished. Use it to keep your direction and not to redo finished work.\n'
        f"```mermaid\n{graph}\n```\n"
        f"{CLOSE_TAG}"
    )


def _escape(text: str) -> str:
    return _TAG.sub("&lt;", text)
