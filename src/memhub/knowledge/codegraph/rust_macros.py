"""Calls written inside the arguments of Rust's standard expression macros.

tree-sitter-rust leaves a macro's arguments as a token tree (`println!("{}", area(&c))` holds the
tokens `area`, `(&c)`), since a macro may give its tokens any meaning. The standard macros below take
expressions, and much of a program's calls sit inside them (`assert_eq!(c.area(), 1.0)`,
`write!(f, "{}", self.name())`). Their arguments are parsed again, as expressions: a copy of the
source keeps only the argument token trees, in place, each after a `;` where its `!` was and blanks
elsewhere (newlines kept), so every node keeps its original line, column and byte offset. A macro
nested in the arguments is read the same way in the next round.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tree_sitter import Node, Parser

from memhub.knowledge.codegraph.syntax import node_text

EXPRESSION_MACROS = frozenset(
    {
        *("print", "println", "eprint", "eprintln", "format", "format_args", "write", "writeln", "panic"),
        *("assert", "assert_eq", "assert_ne", "debug_assert", "debug_assert_eq", "debug_assert_ne"),
        *("vec", "dbg", "todo", "unimplemented", "unreachable"),
    }
)
# Macros inside macros inside macros: deeper nesting is not read.
_ROUNDS = 3
# Every byte but the newline becomes a blank (a translation table: fast on a large file).
_BLANKS = bytes(0x0A if byte == 0x0A else 0x20 for byte in range(256))

Context = TypeVar("Context")


def macro_name(node: Node) -> str:
    """`println` for `println!(…)` and `std::println!(…)`."""
    macro = node.child_by_field_name("macro")
    if macro is not None and macro.type == "scoped_identifier":
        macro = macro.child_by_field_name("name")
    return node_text(macro)


@dataclass(slots=True)
class MacroArguments(Generic[Context]):
    """The expression macros of one file, each with the context (scope) its calls belong to."""

    found: list[tuple[int, int, int, Context]] = field(default_factory=list)  # (start, end, bang, context)

    def add(self, node: Node, context: Context) -> None:
        arguments = next((c for c in node.children if c.type == "token_tree"), None)
        bang = next((c for c in node.children if c.type == "!"), None)
        if arguments is not None and bang is not None and arguments.named_child_count:
            self.found.append((arguments.start_byte, arguments.end_byte, bang.start_byte, context))

    def calls(self, source: bytes, parser: Parser) -> Iterator[tuple[Node, Context]]:
        """The call expressions inside the macros' arguments, each with its macro's context."""
        pending = sorted(self.found, key=lambda f: f[0])
        for _ in range(_ROUNDS):
            if not pending:
                return
            starts = [start for start, _, _, _ in pending]
            root = parser.parse(_masked(source, pending)).root_node
            nested: list[tuple[int, int, int, Context]] = []
            stack = list(reversed(root.children))
            while stack:
                node = stack.pop()
                index = bisect.bisect_right(starts, node.start_byte) - 1
                # Outside every argument list: the `;` separators, or error recovery spanning several.
                inside = index >= 0 and node.end_byte <= pending[index][1]
                if inside and node.type == "call_expression":
                    yield node, pending[index][3]
                elif inside and node.type == "macro_invocation" and macro_name(node) in EXPRESSION_MACROS:
                    inner = MacroArguments[Context]()
                    inner.add(node, pending[index][3])
                    nested.extend(inner.found)
                    continue  # its arguments are tokens again: the next round reads them
                stack.extend(reversed(node.children))
            pending = sorted(nested, key=lambda f: f[0])


def _masked(source: bytes, found: list[tuple[int, int, int, object]]) -> bytes:
    """Blanks except the argument token trees; a `;` where each `!` was keeps the lists apart."""
    masked = bytearray(source.translate(_BLANKS))
    for start, end, bang, _ in found:
        masked[start:end] = source[start:end]
        masked[bang] = ord(";")
    return bytes(masked)
