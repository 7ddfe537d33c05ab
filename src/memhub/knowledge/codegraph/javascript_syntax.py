"""Reading JavaScript and TypeScript syntax: the tree-sitter grammars and what a node says.

Small helpers over single nodes, with no knowledge of scopes or of the facts being collected: the
dotted name of an expression, the class a type annotation names or a value is an instance of, the
names a binding pattern declares, the JSDoc comment above a definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from tree_sitter import Language, Node

from memhub.knowledge.codegraph.syntax import Lineage, node_text

# Values whose type is a global class: calling their methods (`[].push`, `{}.hasOwnProperty`) leaves the repo.
LITERAL_TYPES = {
    "array": "Array",
    "object": "Object",
    "string": "String",
    "template_string": "String",
    "number": "Number",
    "regex": "RegExp",
    "true": "Boolean",
    "false": "Boolean",
}
_PREDEFINED_TYPES = {"string": "String", "number": "Number", "boolean": "Boolean", "symbol": "Symbol"}
_TRANSPARENT = frozenset(
    {"parenthesized_expression", "non_null_expression", "satisfies_expression", "await_expression"}
)
_NOTHING_TYPES = frozenset({"null", "undefined", "void"})
# Statement wrappers between a definition and the JSDoc comment written above it.
_DOC_WRAPPERS = frozenset(
    {
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "variable_declarator",
        "expression_statement",
        "assignment_expression",
    }
)


@cache
def grammar_language(grammar: str) -> Language:
    """The tree-sitter language of a grammar named in `LANGUAGES` ("javascript", "typescript", "tsx")."""
    if grammar == "javascript":
        import tree_sitter_javascript

        return Language(tree_sitter_javascript.language())
    import tree_sitter_typescript

    return Language(
        tree_sitter_typescript.language_tsx() if grammar == "tsx" else tree_sitter_typescript.language_typescript()
    )


def unwrap(node: Node | None) -> Node | None:
    """The expression inside `(x)`, `x!`, `x satisfies T`, `await x`."""
    while node is not None and node.type in _TRANSPARENT and node.named_children:
        node = node.named_children[0]
    return node


def expression_name(node: Node | None) -> str | None:
    """The dotted text of a name expression (`a`, `this.a.b`, `a?.b`); None for anything computed (`f().g`)."""
    parts: list[str] = []
    node = unwrap(node)
    while node is not None and node.type == "member_expression":
        prop = node.child_by_field_name("property")
        if prop is None or prop.type not in ("property_identifier", "private_property_identifier"):
            return None
        parts.append(node_text(prop))
        node = unwrap(node.child_by_field_name("object"))
    if node is None or node.type not in ("identifier", "this", "super", "nested_identifier"):
        return None
    parts.append(node_text(node))
    return ".".join(reversed(parts))


def type_name(node: Node | None) -> str:
    """The class a TS type annotation names (`Repo<T>` → Repo, `ns.Dep`, `C | null` → C); "" if none."""
    if node is not None and node.type == "type_annotation":
        node = node.named_children[0] if node.named_children else None
    if node is None:
        return ""
    kind = node.type
    if kind in ("type_identifier", "identifier"):
        return node_text(node)
    if kind in ("nested_type_identifier", "nested_identifier", "member_expression"):
        return "".join(node_text(node).split())
    if kind == "generic_type":
        return type_name(node.child_by_field_name("name"))
    if kind == "predefined_type":
        return _PREDEFINED_TYPES.get(node_text(node), "")
    if kind in ("array_type", "tuple_type"):
        return "Array"
    if kind == "parenthesized_type" and node.named_children:
        return type_name(node.named_children[0])
    if kind == "union_type":
        # `Client | null | undefined` is a Client where it is used.
        members = [m for m in _union_members(node) if node_text(m) not in _NOTHING_TYPES]
        return type_name(members[0]) if len(members) == 1 else ""
    return ""


def return_type(annotation: Node | None) -> str:
    """The class a declared return type names; `Promise<C>` is C, since callers await it."""
    node = annotation.named_children[0] if annotation is not None and annotation.named_children else None
    if node is not None and node.type == "generic_type" and node_text(node.child_by_field_name("name")) == "Promise":
        arguments = node.child_by_field_name("type_arguments")
        node = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return type_name(node)


def _union_members(node: Node) -> list[Node]:
    out: list[Node] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if current.type == "union_type":
            pending.extend(reversed(current.named_children))
        else:
            out.append(current)
    return out


def value_type(value: Node | None, typed: Mapping[str, str]) -> str:
    """The class expression a value is an instance of: `()C` for `new C()` / `C()`, "" when unknown.

    `typed` holds the locals whose class is declared where the value is read.
    """
    value = unwrap(value)
    if value is None:
        return ""
    kind = value.type
    if kind in ("new_expression", "call_expression"):
        callee_field = "constructor" if kind == "new_expression" else "function"
        callee = expression_name(value.child_by_field_name(callee_field))
        return "()" + callee if callee else ""
    if kind == "as_expression" and len(value.named_children) == 2:
        return type_name(value.named_children[1])
    if kind == "identifier":
        return typed.get(node_text(value), "")
    return LITERAL_TYPES.get(kind, "")


def pattern_names(node: Node | None) -> list[str]:
    """The local names a binding pattern declares (`{a, b: c, ...d}` → a, c, d)."""
    names: list[str] = []
    pending = [node] if node is not None else []
    while pending:
        current = pending.pop()
        kind = current.type
        if kind in ("identifier", "shorthand_property_identifier_pattern"):
            names.append(node_text(current))
        elif kind == "pair_pattern":
            value = current.child_by_field_name("value")
            if value is not None:
                pending.append(value)
        elif kind in ("assignment_pattern", "object_assignment_pattern"):
            left = current.child_by_field_name("left")
            if left is not None:
                pending.append(left)
        elif kind in ("object_pattern", "array_pattern", "rest_pattern"):
            pending.extend(reversed(current.named_children))
    return names


def property_name(node: Node | None) -> str:
    """A method or field name as written: `get`, `#secret`, `"quoted"` → quoted, `[Symbol.iterator]`."""
    if node is None:
        return ""
    text = node_text(node)
    return text[1:-1] if node.type == "string" and len(text) >= 2 else text


def jsdoc(node: Node, lineage: Lineage) -> str:
    """The `/** … */` comment right above a definition (or above the statement wrapping it)."""
    anchor = node
    parent = lineage.parent_of(anchor)
    while parent is not None and parent.type in _DOC_WRAPPERS:
        anchor, parent = parent, lineage.parent_of(parent)
    previous = lineage.before(anchor, named=True)
    while previous is not None and previous.type == "decorator":
        previous = lineage.before(previous, named=True)
    if previous is None or previous.type != "comment":
        return ""
    following = lineage.after(previous, named=True)
    if following is not None and following.start_point[0] - previous.end_point[0] > 1:
        return ""  # a blank line between: the comment is not about this definition
    return _clean_comment(node_text(previous))


def _clean_comment(raw: str) -> str:
    if not raw.startswith("/**"):
        return ""
    lines = [line.strip().removeprefix("*").strip() for line in raw[3:].removesuffix("*/").splitlines()]
    return "\n".join(line for line in lines if line).strip()[:500]


def module_doc(root: Node) -> str:
    """A `/** … */` comment opening the file and separated from what follows by a blank line."""
    named = root.named_children
    first = named[0] if named else None
    if first is None or first.type != "comment":
        return ""
    following = named[1] if len(named) > 1 else None
    if following is not None and following.start_point[0] - first.end_point[0] <= 1:
        return ""  # it documents the definition right below it
    return _clean_comment(node_text(first))


def is_declared(node: Node, depth: int, lineage: Lineage) -> bool:
    """Whether the node's ancestor `depth` levels above its parent is a `declare …` (a signature with no
    implementation to come, unlike an overload's)."""
    ancestor = lineage.parent_of(node)
    for _ in range(depth):
        ancestor = lineage.parent_of(ancestor) if ancestor is not None else None
    return ancestor is not None and ancestor.type == "ambient_declaration"
