"""Small tree-sitter helpers shared by the extractors (JavaScript/TypeScript, Java, Go)."""

from __future__ import annotations

from tree_sitter import Node


def node_text(node: Node | None) -> str:
    """The source text of a node ("" for none)."""
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def squash(text: str, limit: int = 300) -> str:
    """Source text on one line (signatures span lines when parameters do)."""
    return " ".join(text.split())[:limit]


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
    while previous is not None and "comment" in previous.type and previous.end_point[0] == expected_row:
        raw = node_text(previous).strip()
        if not raw.startswith(marker):
            break
        lines.append(raw.removeprefix(marker).strip())
        expected_row = previous.start_point[0] - 1
        previous = previous.prev_sibling
    return "\n".join(reversed(lines)).strip()[:500]
