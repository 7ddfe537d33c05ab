"""Small tree-sitter helpers shared by the extractors (JavaScript/TypeScript, Java, Go)."""

from __future__ import annotations

from tree_sitter import Node

from memhub.store.graph_records import FileFacts, Reference


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
        line, col = at.start_point
        facts.references.append(Reference("reference", type_expr, scope, facts.path, line + 1, col))


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
