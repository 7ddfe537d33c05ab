"""The code-graph store interface: one repository's symbols, edges and file facts, written by an indexer
and read by the code-graph tools.

A graph is written as a whole generation (a build or a sync) and then only read, so the interface is
a writer that replaces the contents of changed files and the resolved graph, and a reader whose
queries are the ones the tools need. Closures (impact, call hierarchies) are recursive queries with a
depth cap, so a hub with thousands of callers cannot run away.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any

from memhub.model.graph import Direction, Edge, FileFacts, FileRecord, Reached, Symbol, Unresolved


class GraphReader(ABC):
    """Queries over one built graph."""

    @abstractmethod
    def files(self) -> list[FileRecord]:
        """Every indexed file, by path."""

    @abstractmethod
    def file_facts(self, paths: Iterable[str] | None = None) -> list[FileFacts]:
        """The stored facts of some (or all) files, for re-resolution without re-parsing."""

    @abstractmethod
    def symbols_named(self, name: str, *, limit: int = 50) -> list[Symbol]:
        """Symbols whose qualified name is `name`, or whose name is `name` (exact)."""

    @abstractmethod
    def search_symbols(self, query: str, *, kind: str | None = None, limit: int = 10) -> list[Symbol]:
        """Full-text search over names, qualified names and docs."""

    @abstractmethod
    def edges_of(self, qnames: Sequence[str], direction: Direction, *, kinds: Sequence[str], limit: int) -> list[Edge]:
        """Edges into (`callers`) or out of (`callees`) these symbols."""

    @abstractmethod
    def closure(
        self, qnames: Sequence[str], direction: Direction, *, kinds: Sequence[str], depth: int, limit: int
    ) -> tuple[list[Reached], bool]:
        """Symbols reachable within `depth` edges, nearest first; True when `limit` cut the result."""

    @abstractmethod
    def unresolved_for(self, qnames: Sequence[str], *, limit: int) -> list[Unresolved]:
        """Unresolved references made from these symbols, or naming them as a candidate."""

    @abstractmethod
    def count_edges(self, qnames: Sequence[str], direction: Direction, *, kinds: Sequence[str]) -> int:
        """How many edges `edges_of` would return without a limit."""

    @abstractmethod
    def symbols_per_file(self) -> dict[str, int]:
        """How many symbols each file defines."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """files, symbols, edges, unresolved, parse_errors."""

    @abstractmethod
    def meta(self) -> dict[str, Any]:
        """Build metadata (commit, counts of external calls, when it was built)."""

    @abstractmethod
    def graph_format(self) -> int:
        """The format version this generation was written in; another version's facts are rebuilt."""

    @abstractmethod
    def close(self) -> None:
        """Release the generation's file."""


class GraphWriter(GraphReader):
    """A graph being built: replace files, then write the resolved graph in one go."""

    @abstractmethod
    def put_files(self, records: Sequence[tuple[FileRecord, str]]) -> None:
        """Insert or replace these files and their facts, as `graph_codec.encode_facts` wrote them."""

    @abstractmethod
    def drop_files(self, paths: Sequence[str]) -> None:
        """Forget deleted files."""

    @abstractmethod
    def put_graph(
        self, symbols: Iterable[Symbol], edges: Iterable[Edge], unresolved: Iterable[Unresolved], meta: dict[str, Any]
    ) -> None:
        """Replace the resolved graph (symbols, edges, unresolved references) and its metadata."""

    @abstractmethod
    def patch_graph(
        self,
        files: Sequence[str],
        qnames: Sequence[str],
        symbols: Iterable[Symbol],
        edges: Iterable[Edge],
        unresolved: Iterable[Unresolved],
        meta: dict[str, Any],
    ) -> None:
        """Replace only what a change affected: the edges and unresolved references written in `files`,
        the symbols defined in them or named in `qnames`; `symbols` are those rows as they now are."""

    @abstractmethod
    def commit(self) -> None:
        """Make everything durable."""
