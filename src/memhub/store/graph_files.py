"""Open code-graph generations: one file per built generation of a repository, written once by a build and then
read by the code-graph tools. The only way services reach the graph backend (SQLite files today)."""

from __future__ import annotations

from pathlib import Path

from memhub.store.graph import GraphReader, GraphWriter
from memhub.store.sqlite.graph import GRAPH_FORMAT, SQLiteGraph

__all__ = ["GRAPH_FORMAT", "copy_graph", "new_graph", "open_graph"]


def open_graph(path: Path) -> GraphReader:
    """A built generation, read-only; a missing or unreadable file fails here rather than mid-query."""
    graph = SQLiteGraph(path, readonly=True)
    try:
        graph.graph_format()  # opening is lazy: touch the file now
    except BaseException:
        graph.close()
        raise
    return graph


def new_graph(path: Path) -> GraphWriter:
    """An empty generation to build into."""
    return SQLiteGraph(path)


def copy_graph(previous: Path, path: Path) -> GraphWriter:
    """A new generation that starts as a copy of `previous` (a sync rewrites only what changed)."""
    return SQLiteGraph.copy_from(previous, path)
