"""Small tree-sitter helpers shared by the extractors: grammar loading, the document-order capture list
every sweep reads, qualified names, references, and text and doc-comment helpers."""

from __future__ import annotations

import importlib
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from memhub.store.graph_records import FileFacts, Reference


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


def in_document_order(query: Query, root: Node) -> list[Node]:
    """The captured nodes, outer before inner at the same start: the order a byte-range sweep needs."""
    nodes = QueryCursor(query).captures(root).get("node", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    return nodes


def qualified(seen: dict[str, int], parent: str, name: str) -> str:
    """`parent.name`; a name defined again in the same scope (conditional definitions, overloads, a getter
    and its setter) keeps both, the later ones told apart as `name@2`, `name@3`."""
    qname = f"{parent}.{name}" if parent else name
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


def block_doc(node: Node, prefix: str = "/**") -> str:
    """The doc comment (`/** … */`) right above a definition, cleaned of its stars."""
    previous = node.prev_named_sibling
    while previous is not None and previous.type in ("marker_annotation", "annotation", "modifiers"):
        previous = previous.prev_named_sibling
    raw = node_text(previous) if previous is not None and "comment" in previous.type else ""
    if not raw.startswith(prefix):
        return ""
    lines = [line.strip().removeprefix("*").strip() for line in raw[len(prefix) :].removesuffix("*/").splitlines()]
    return "\n".join(line for line in lines if line).strip()[:500]


def line_docs(node: Node, marker: str) -> str:
    """Consecutive line comments right above a definition (`// …` in Go, `/// …` in Rust), joined."""
    lines: list[str] = []
    previous = node.prev_sibling
    expected_row = node.start_point[0] - 1
    while previous is not None and "comment" in previous.type and _last_row(previous) == expected_row:
        raw = node_text(previous).strip()
        if not raw.startswith(marker):
            break
        lines.append(raw.removeprefix(marker).strip())
        expected_row = previous.start_point[0] - 1
        previous = previous.prev_sibling
    return "\n".join(reversed(lines)).strip()[:500]


def _last_row(comment: Node) -> int:
    """The row a line comment's text ends on: tree-sitter-rust's `///` comments include their newline, so
    they end at column 0 of the next row."""
    end = comment.end_point
    return end[0] - 1 if end[1] == 0 and end[0] > comment.start_point[0] else end[0]
