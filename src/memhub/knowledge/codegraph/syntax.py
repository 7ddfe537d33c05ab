"""Small tree-sitter helpers shared by the extractors: grammar loading, parsing within the per-file limits,
the document-order capture list every sweep reads, parents and siblings (`Lineage`), qualified names,
references, and text and doc-comment helpers.

Extraction stays linear in the size of a file however deeply its code nests. Two tree-sitter costs grow
with depth and are avoided: a query pattern that matches a parent with a child (`(a (b) @x)`) keeps
one pending match per open ancestor and checks them all at every node below it, so every capture query
is one pattern per node kind (`kinds_query`); and `Node.parent` and the sibling getters descend from
the root on every call, so parents and siblings come from `Lineage` instead.
"""

from __future__ import annotations

import bisect
import importlib
import threading
from collections.abc import Sequence
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from memhub.model.graph import FileFacts, Reference

# A file whose syntax tree has more nodes than this is not indexed (1 MiB of dense code has fewer).
FILE_MAX_NODES = 1_000_000
# A qualified name longer than this means definitions nested hundreds deep (generated or hostile code):
# every symbol's name repeats its parents', so the names alone would grow with the square of the depth.
QNAME_MAX = 2048


class FileTooComplex(Exception):
    """A file the extractors will not index (too many nodes, definitions nested too deep); the message says
    why and becomes the file's `skipped` reason."""


class _Work(threading.local):
    """Tree nodes an extractor visited on this thread: the captured nodes and every step `Lineage` takes.
    Counted so tests can check that extraction work grows linearly with a file, not with its depth."""

    visits = 0


WORK = _Work()


@cache
def grammar(package: str) -> Language:
    """A grammar from its wheel (`tree_sitter_go`), loaded once per process."""
    return Language(importlib.import_module(package).language())


@cache
def parser(package: str) -> Parser:
    return Parser(grammar(package))


@cache
def kinds_query(language: Language, kinds: tuple[str, ...]) -> Query:
    """One `@node` capture per node kind, so a single pass finds every node an extractor reads."""
    return Query(language, "\n".join(f"({kind}) @node" for kind in kinds))


def parse(package: str, source: bytes) -> Node:
    """The root of the file's syntax tree; FileTooComplex past FILE_MAX_NODES."""
    return within_limits(parser(package).parse(source).root_node)


def within_limits(root: Node) -> Node:
    """The root of a parsed file, or FileTooComplex when its tree has more than FILE_MAX_NODES nodes."""
    nodes = root.descendant_count
    if nodes > FILE_MAX_NODES:
        raise FileTooComplex(f"too complex: {nodes} syntax nodes (limit {FILE_MAX_NODES})")
    return root


def in_document_order(query: Query, root: Node) -> list[Node]:
    """The captured nodes, outer before inner at the same start: the order a byte-range sweep needs."""
    nodes = QueryCursor(query).captures(root).get("node", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    WORK.visits += len(nodes)
    return nodes


class Lineage:
    """Parents and siblings of a file's nodes, found in time that does not grow with nesting depth.

    tree-sitter's `Node.parent` (and the sibling getters, which ask for the parent) walks down from the
    root on every call; asked once per definition, that makes extraction quadratic in depth. Here a
    captured node's parent is found by walking down from its nearest captured ancestor (known from the
    document order in one pass), usually a step or two; each node walked through has its children listed
    once and remembered with their parent, so the walks of a whole file list each node at most once.
    """

    def __init__(self, root: Node, captured: Sequence[Node]) -> None:
        self.root = root
        self._parent: dict[int, Node | None] = {root.id: None}
        self._near: dict[int, Node] = {}  # captured node → the nearest captured node around it
        # node id → its children, their start bytes, and each child's index
        self._family: dict[int, tuple[list[Node], list[int], dict[int, int]]] = {}
        stack: list[Node] = []
        for node in captured:
            while stack and not (stack[-1].end_byte >= node.end_byte and stack[-1].id != node.id):
                stack.pop()
            if stack:
                self._near[node.id] = stack[-1]
            stack.append(node)

    def parent_of(self, node: Node) -> Node | None:
        """The node's parent (None for the root)."""
        if node.id in self._parent:
            return self._parent[node.id]
        near = self._near.get(node.id)
        found = self._descend(near, node) if near is not None else None
        if found is None:  # not captured, or nodes sharing one byte range met in the other order
            found = self._descend(self.root, node)
        return found

    def adopt(self, parent: Node) -> list[Node]:
        """The parent's children (all of them, named or not), remembered as its."""
        return self._children(parent)[0]

    def before(self, node: Node, *, named: bool = False) -> Node | None:
        """The sibling right before the node (the named one, with `named`)."""
        return self._sibling(node, -1, named)

    def after(self, node: Node, *, named: bool = False) -> Node | None:
        """The sibling right after the node (the named one, with `named`)."""
        return self._sibling(node, 1, named)

    def _children(self, parent: Node) -> tuple[list[Node], list[int], dict[int, int]]:
        entry = self._family.get(parent.id)
        if entry is None:
            children = parent.children
            WORK.visits += len(children)
            entry = (children, [child.start_byte for child in children], {c.id: i for i, c in enumerate(children)})
            self._family[parent.id] = entry
            for child in children:
                self._parent[child.id] = parent
        return entry

    def _sibling(self, node: Node, step: int, named: bool) -> Node | None:
        parent = self.parent_of(node)
        if parent is None:
            return None
        children, _, index_of = self._children(parent)
        index = index_of[node.id] + step
        while 0 <= index < len(children):
            if children[index].is_named or not named:
                return children[index]
            index += step
        return None

    def _descend(self, top: Node, node: Node) -> Node | None:
        """Walk from `top` down to `node` by byte range; the node's parent, or None when `top` is not an
        ancestor of it."""
        start, end = node.start_byte, node.end_byte
        current = top
        while True:
            children, starts, _ = self._children(current)
            if node.id in self._parent:
                return self._parent[node.id]
            # The last child starting at or before the node holds it (an empty one may come between).
            index = bisect.bisect_right(starts, start) - 1
            while index >= 0 and children[index].end_byte < end and children[index].end_byte >= start:
                index -= 1
            if index < 0 or children[index].end_byte < end:
                return None
            current = children[index]


def qualified(seen: dict[str, int], parent: str, name: str) -> str:
    """`parent.name`; a name defined again in the same scope (conditional definitions, overloads, a getter
    and its setter) keeps both, the later ones told apart as `name@2`, `name@3`. FileTooComplex past
    QNAME_MAX characters."""
    qname = f"{parent}.{name}" if parent else name
    if len(qname) > QNAME_MAX:
        raise FileTooComplex(f"too complex: definitions nested too deep (a qualified name over {QNAME_MAX} characters)")
    count = seen.get(qname, 0)
    seen[qname] = count + 1
    return qname if count == 0 else f"{qname}@{count + 1}"


def add_reference(facts: FileFacts, kind: str, target: str, scope: str, at: Node) -> None:
    """A reference from `scope`, written where `at` starts (1-based line, 0-based column)."""
    line, col = at.start_point
    facts.references.append(Reference(kind, target, scope, facts.path, line + 1, col))  # type: ignore[arg-type]


def node_text(node: Node | None) -> str:
    """The source text of a node ("" for none)."""
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def squash(text: str, limit: int = 300) -> str:
    """Source text on one line (signatures span lines when parameters do)."""
    return " ".join(text.split())[:limit]


def declared_type_reference(facts: FileFacts, type_expr: str, scope: str, at: Node | None) -> None:
    """A declared type (`Repo r`, `r *Repo`, `r: Repo`, a field's or a result's type) is a reference from the
    declaring scope to the type, written where the declaration is; a call's result (`()f`) is not."""
    if at is not None and type_expr and not type_expr.startswith("()"):
        add_reference(facts, "reference", type_expr, scope, at)


def count_errors(root: Node) -> int:
    """ERROR and MISSING nodes, descending only into subtrees that contain one (an iterative walk)."""
    if not root.has_error:
        return 0
    count = 0
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        pending.extend(child for child in node.children if child.has_error or child.is_missing)
    return max(count, 1)


def block_doc(node: Node, lineage: Lineage, prefix: str = "/**") -> str:
    """The doc comment (`/** … */`) right above a definition, cleaned of its stars."""
    previous = lineage.before(node, named=True)
    while previous is not None and previous.type in ("marker_annotation", "annotation", "modifiers"):
        previous = lineage.before(previous, named=True)
    raw = node_text(previous) if previous is not None and "comment" in previous.type else ""
    if not raw.startswith(prefix):
        return ""
    lines = [line.strip().removeprefix("*").strip() for line in raw[len(prefix) :].removesuffix("*/").splitlines()]
    return "\n".join(line for line in lines if line).strip()[:500]


def line_docs(node: Node, marker: str, lineage: Lineage) -> str:
    """Consecutive line comments right above a definition (`// …` in Go, `/// …` in Rust), joined."""
    lines: list[str] = []
    previous = lineage.before(node)
    expected_row = node.start_point[0] - 1
    while previous is not None and "comment" in previous.type and _last_row(previous) == expected_row:
        raw = node_text(previous).strip()
        if not raw.startswith(marker):
            break
        lines.append(raw.removeprefix(marker).strip())
        expected_row = previous.start_point[0] - 1
        previous = lineage.before(previous)
    return "\n".join(reversed(lines)).strip()[:500]


def _last_row(comment: Node) -> int:
    """The row a line comment's text ends on: tree-sitter-rust's `///` comments include their newline, so
    they end at column 0 of the next row."""
    end = comment.end_point
    return end[0] - 1 if end[1] == 0 and end[0] > comment.start_point[0] else end[0]
