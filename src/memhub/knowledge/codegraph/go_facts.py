"""Go source → FileFacts, the same vocabulary as `python_facts`.

A tree-sitter query finds the nodes worth reading and a sweep in document order keeps the scope of
each by byte range (no recursion over the tree).

What Go needs beyond Python:
- The module is the package's directory (`pkg/shop`), shared by every file of the package, so a
  function of a sibling file is found by scope, as the compiler finds it. Symbols read
  `pkg/shop.Checkout`; a method `func (s *Server) Start()` is `pkg/shop.Server.Start` whichever file
  declares it. Files in the repository root use their package name.
- Imports name full paths (`example.com/app/pkg/store`), which the extractor cannot map to a
  directory without go.mod: the resolver matches them by path suffix against the Go packages it
  knows. The alias is the written name or the path's last element.
- The receiver's name (`s`) is a binding of the method to its type: `s.m()` resolves like `self.m()`.
- Every named type is a "class" (methods attach to any); embedded struct fields and embedded
  interfaces are its bases, so promoted methods resolve through them.
- A composite literal `T{}` is not a call; a conversion `T(x)` is written like one and is kept.
- Locals: `x := T{}`, `x := &T{}`, `var x T`, typed parameters; `x := f()` is typed by f's declared
  result (the first one); a function literal's calls belong to the enclosing function.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from tree_sitter import Node

from memhub.knowledge.codegraph.facts import RETURNS, Binding, FileFacts, Import, Symbol
from memhub.knowledge.codegraph.syntax import (
    Lineage,
    add_reference,
    count_errors,
    declared_type_reference,
    grammar,
    in_document_order,
    kinds_query,
    line_docs,
    node_text,
    parse,
    qualified,
    squash,
)

_CAPTURED = (
    "import_spec",
    "function_declaration",
    "method_declaration",
    "type_spec",
    "call_expression",
    "short_var_declaration",
    "var_spec",
)


_GRAMMAR = "tree_sitter_go"


def type_name(node: Node | None) -> str:
    """The named type a Go type expression denotes: `*Server` → Server, `store.Repo`, `Stack[T]` → Stack."""
    while node is not None and node.type in ("pointer_type", "parenthesized_type") and node.named_children:
        node = node.named_children[-1]
    if node is None:
        return ""
    if node.type == "type_identifier":
        return node_text(node)
    if node.type == "qualified_type":
        return f"{node_text(node.child_by_field_name('package'))}.{node_text(node.child_by_field_name('name'))}"
    if node.type == "generic_type":
        return type_name(node.child_by_field_name("type"))
    return ""


def expression_name(node: Node | None) -> str | None:
    """`a`, `a.b.c` as dotted text; None for anything computed (`f().g`, `x[0].y`)."""
    parts: list[str] = []
    while node is not None and node.type == "selector_expression":
        parts.append(node_text(node.child_by_field_name("field")))
        node = node.child_by_field_name("operand")
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node is None or node.type != "identifier":
        return None
    parts.append(node_text(node))
    return ".".join(reversed(parts))


def module_name(path: str, package: str) -> str:
    """The package's directory (`pkg/shop/cart.go` → `pkg/shop`); the package name in the repository root."""
    return posixpath.dirname(path) or package or posixpath.splitext(path)[0]


@dataclass(slots=True)
class _Open:
    end: int
    scope: str


@dataclass(slots=True)
class _Walker:
    facts: FileFacts
    lineage: Lineage
    seen: dict[str, int] = field(default_factory=dict)
    open: list[_Open] = field(default_factory=list)
    at: Node | None = None  # the node being read: where a declared type is referenced

    def qualify(self, parent: str, name: str) -> str:
        return qualified(self.seen, parent, name)

    def run(self, nodes: list[Node]) -> None:
        module = self.facts.module
        for node in nodes:
            while self.open and self.open[-1].end <= node.start_byte:
                self.open.pop()
            self.visit(node, self.open[-1].scope if self.open else module)

    def visit(self, node: Node, scope: str) -> None:
        kind = node.type
        self.at = node
        if kind == "import_spec":
            self.import_spec(node, scope)
        elif kind in ("function_declaration", "method_declaration"):
            self.function(node)
        elif kind == "type_spec":
            self.type_spec(node, scope)
        elif kind == "call_expression":
            self.call(node, scope)
        elif kind == "short_var_declaration":
            self.short_var(node, scope)
        elif kind == "var_spec":
            self.var_spec(node, scope)

    def ref(self, kind: str, target: str, scope: str, node: Node) -> None:
        add_reference(self.facts, kind, target, scope, node)

    def bind(self, scope: str, name: str, type_expr: str) -> None:
        if name and name != "_":
            self.facts.bindings.append(Binding(scope, name, type_expr))
            declared_type_reference(self.facts, type_expr, scope, self.at)

    # -- definitions ---------------------------------------------------------------------------------

    def function(self, node: Node) -> None:
        module = self.facts.module
        name = node_text(node.child_by_field_name("name"))
        receiver = node.child_by_field_name("receiver")
        receiver_param = (
            next((p for p in receiver.named_children if p.type == "parameter_declaration"), None)
            if receiver is not None
            else None
        )
        owner_type = type_name(receiver_param.child_by_field_name("type")) if receiver_param is not None else ""
        parent = f"{module}.{owner_type}" if owner_type else module
        qname = self.qualify(parent, name)
        body = node.child_by_field_name("body")
        start, end = node.start_point, node.end_point
        header = node_text(node)[: (body.start_byte - node.start_byte) if body is not None else None]
        self.facts.symbols.append(
            Symbol(
                "method" if owner_type else "function",
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                parent,
                line_docs(node, "//", self.lineage),
                squash(header),
            )
        )
        if receiver_param is not None:
            # `func (s *Server) Start()`: `s` is the Server inside, as `self` is in Python.
            self.bind(qname, node_text(receiver_param.child_by_field_name("name")), owner_type)
        parameters = node.child_by_field_name("parameters")
        for param in parameters.named_children if parameters is not None else []:
            declared = type_name(param.child_by_field_name("type"))
            for name_node in param.children_by_field_name("name"):
                self.bind(qname, node_text(name_node), declared)
        result = node.child_by_field_name("result")
        if result is not None and result.type == "parameter_list":
            first = result.named_children[0] if result.named_children else None
            result = first.child_by_field_name("type") if first is not None else None
        returned = type_name(result)
        if returned:
            self.bind(qname, RETURNS, returned)
        self.open.append(_Open(node.end_byte, qname))

    def type_spec(self, node: Node, scope: str) -> None:
        name = node_text(node.child_by_field_name("name"))
        if not name or scope != self.facts.module:
            return  # a type local to a function body has no methods: nothing resolves into it
        qname = self.qualify(scope, name)
        definition = node.child_by_field_name("type")
        bases: list[str] = []
        if definition is not None and definition.type == "struct_type":
            fields = next((c for c in definition.named_children if c.type == "field_declaration_list"), None)
            for declaration in fields.named_children if fields is not None else []:
                if declaration.type != "field_declaration":
                    continue
                declared = type_name(declaration.child_by_field_name("type"))
                names = declaration.children_by_field_name("name")
                if not names and declared:
                    bases.append(declared)  # an embedded field: its methods are promoted
                    self.bind(qname, declared.rpartition(".")[2], declared)
                for name_node in names:
                    self.bind(qname, node_text(name_node), declared)
        elif definition is not None and definition.type == "interface_type":
            for element in self.lineage.adopt(definition):
                if element.type == "type_elem":
                    embedded = type_name(element.named_children[0]) if element.named_children else ""
                    if embedded:
                        bases.append(embedded)
                elif element.type == "method_elem":
                    self.interface_method(element, qname)
        for base in bases:
            self.ref("inherits", base, scope, node)
        parent = self.lineage.parent_of(node)
        declaration = parent if parent is not None and parent.type == "type_declaration" else node
        start, end = node.start_point, node.end_point
        self.facts.symbols.append(
            Symbol(
                "class",
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                scope,
                line_docs(declaration, "//", self.lineage),
                squash(f"type {node_text(node)}", 120),
                tuple(bases),
                {"struct_type": "struct", "interface_type": "interface"}.get(definition.type, "")
                if definition is not None
                else "",
            )
        )

    def interface_method(self, element: Node, interface: str) -> None:
        name = node_text(element.child_by_field_name("name"))
        start, end = element.start_point, element.end_point
        self.facts.symbols.append(
            Symbol(
                "method",
                name,
                self.qualify(interface, name),
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                interface,
                line_docs(element, "//", self.lineage),
                squash(node_text(element)),
            )
        )

    # -- locals --------------------------------------------------------------------------------------

    def value_type(self, value: Node | None) -> str:
        """The type a right-hand side gives: `T{}`, `&T{}`, `f()` (typed by f's declared result)."""
        if value is not None and value.type == "unary_expression" and node_text(value).startswith("&"):
            value = value.child_by_field_name("operand")
        if value is None:
            return ""
        if value.type == "composite_literal":
            return type_name(value.child_by_field_name("type"))
        if value.type == "call_expression":
            callee = expression_name(value.child_by_field_name("function"))
            return f"(){callee}" if callee else ""
        return ""

    def short_var(self, node: Node, scope: str) -> None:
        if scope == self.facts.module:
            return
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        names = [n for n in left.named_children if n.type == "identifier"] if left is not None else []
        values = right.named_children if right is not None else []
        for index, name_node in enumerate(names):
            # `a, err := f()`: only the first result's type is known (f's first declared result).
            value = values[index] if len(values) == len(names) else (values[0] if index == 0 and values else None)
            # Unknown types are recorded empty, so calling through the local is not guessed by name.
            self.bind(scope, node_text(name_node), self.value_type(value))

    def var_spec(self, node: Node, scope: str) -> None:
        if scope == self.facts.module:
            return
        declared = type_name(node.child_by_field_name("type"))
        value_list = node.child_by_field_name("value")
        values = value_list.named_children if value_list is not None else []
        for index, name_node in enumerate(node.children_by_field_name("name")):
            value = values[index] if index < len(values) else None
            self.bind(scope, node_text(name_node), declared or self.value_type(value))

    # -- references ----------------------------------------------------------------------------------

    def call(self, node: Node, scope: str) -> None:
        function = node.child_by_field_name("function")
        if function is not None and function.type == "generic_type":  # `Map[int](xs)`: a generic call
            function = function.child_by_field_name("type")
        name = expression_name(function)
        if name:
            self.ref("call", name, scope, function or node)
        elif function is not None and function.type == "selector_expression":
            operand = function.child_by_field_name("operand")
            method = node_text(function.child_by_field_name("field"))
            literal = self.value_type(operand) if operand is not None and operand.type != "call_expression" else ""
            # `Server{}.Start()` names its type; `make().run()` has a computed receiver: the name alone.
            self.ref("call", f"{literal}.{method}" if literal else f"?.{method}", scope, function)

    def import_spec(self, node: Node, scope: str) -> None:
        raw = node_text(node.child_by_field_name("path"))
        path = raw.strip('"`')
        alias_node = node.child_by_field_name("name")
        alias = node_text(alias_node) if alias_node is not None else path.rpartition("/")[2]
        if alias in ("_", "."):
            alias = f"{alias}{path}"  # side-effect and dot imports bind no usable name
        self.facts.imports.append(Import(path, None, alias, scope, node.start_point[0] + 1))


def extract_go(path: str, source: bytes) -> FileFacts:
    """Symbols, references, imports and bindings of one Go file (path relative to the repository root)."""
    root = parse(_GRAMMAR, source)
    clause = next((c for c in root.named_children if c.type == "package_clause"), None)
    package = node_text(clause.named_children[0]) if clause is not None and clause.named_children else ""
    module = module_name(path, package)
    facts = FileFacts(path, "go", module)
    facts.parse_errors = count_errors(root)
    nodes = in_document_order(kinds_query(grammar(_GRAMMAR), _CAPTURED), root)
    lineage = Lineage(root, nodes)
    doc = line_docs(clause, "//", lineage) if clause is not None else ""
    facts.symbols.append(
        Symbol("module", module.rpartition("/")[2], module, path, 1, 0, root.end_point[0] + 1, None, doc)
    )
    walker = _Walker(facts, lineage)
    walker.seen[module] = 1
    walker.run(nodes)
    return facts
