"""Java source → FileFacts, the same vocabulary as `python_facts`.

A tree-sitter query finds the nodes worth reading and a sweep in document order keeps the scope of
each by byte range (no recursion over the tree), as in the Python and JavaScript extractors.

What Java needs beyond them:
- The module is the package (`package com.acme;`), so every file of a package shares it and a class
  of the same package is found by scope without an import, as javac finds it. Symbols read
  `com.acme.Shop.checkout`; nested classes `com.acme.Shop.Line`. A file without a package
  declaration uses its directory (dots for slashes).
- Constructors are methods named `<init>` (the resolver's constructor name for Java), so `new C()`
  is `instantiates` C plus a call of `C.<init>`; `super(…)` calls the base's `<init>`.
- A bare `m()` or `field.m()` inside a class means `this.m()` / `this.field.m()` (Java has no
  nested functions, and a local shadows a field): the extractor writes the receiver out, after a
  first pass that learns every class's methods, fields and nested types (fields are often declared
  after the methods using them). A member of an outer class is written as `Outer.m`.
- Declared types of parameters, locals and fields are bindings; `var x = new C()` binds C.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node

from memhub.knowledge.codegraph.facts import Binding, FileFacts, Import, Symbol
from memhub.knowledge.codegraph.syntax import (
    Lineage,
    add_reference,
    block_doc,
    count_errors,
    declared_type_reference,
    grammar,
    in_document_order,
    kinds_query,
    node_text,
    parse,
    qualified,
    squash,
)

CONSTRUCTOR = "<init>"
# What each declaration kind is, beyond a class (an interface base makes an `implements` edge).
_FLAVORS = {
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "record_declaration": "record",
    "annotation_type_declaration": "annotation",
}
_TYPE_DECLARATIONS = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    }
)
_BODIES = frozenset({"class_body", "interface_body", "enum_body", "enum_body_declarations", "annotation_type_body"})
_CAPTURED = (
    *sorted(_TYPE_DECLARATIONS),
    "package_declaration",
    "import_declaration",
    "method_declaration",
    "constructor_declaration",
    "compact_constructor_declaration",
    "field_declaration",
    "local_variable_declaration",
    "formal_parameter",
    "enhanced_for_statement",
    "method_invocation",
    "object_creation_expression",
    "explicit_constructor_invocation",
)

MemberKind = Literal["method", "field", "type"]


_GRAMMAR = "tree_sitter_java"


def type_name(node: Node | None) -> str:
    """The class a Java type names: `Repo`, `List<Item>` → List, `a.b.C` → a.b.C; "" for primitives/arrays."""
    if node is None:
        return ""
    if node.type == "type_identifier":
        return node_text(node)
    if node.type == "scoped_type_identifier":
        return "".join(node_text(node).split())
    if node.type == "generic_type" and node.named_children:
        return type_name(node.named_children[0])
    return ""


def expression_name(node: Node | None) -> str | None:
    """`a`, `a.b.c`, `this.a`, `super` as dotted text; None for anything computed (`f().g`, `x[0]`)."""
    parts: list[str] = []
    while node is not None and node.type == "field_access":
        parts.append(node_text(node.child_by_field_name("field")))
        node = node.child_by_field_name("object")
    if node is None or node.type not in ("identifier", "this", "super"):
        return None
    parts.append(node_text(node))
    return ".".join(reversed(parts))


def _declaring_type(member: Node, lineage: Lineage) -> Node | None:
    """The class, interface, enum or record whose body declares `member` directly (None inside a method)."""
    parent = lineage.parent_of(member)
    while parent is not None and parent.type in _BODIES:
        parent = lineage.parent_of(parent)
    return parent if parent is not None and parent.type in _TYPE_DECLARATIONS and parent != member else None


def _declared_names(node: Node) -> list[str]:
    """The names a field or local variable declaration declares (`int a, b;`)."""
    return [
        node_text(d.child_by_field_name("name"))
        for d in node.children_by_field_name("declarator")
        if d.type == "variable_declarator"
    ]


@dataclass(slots=True)
class _Class:
    qname: str
    path: str  # the dotted name from the package (`Shop.Line`), as code outside the class writes it
    members: dict[str, MemberKind]


@dataclass(slots=True)
class _Scope:
    qname: str
    kind: Literal["module", "class", "method"]
    classes: tuple[_Class, ...]  # the enclosing classes, innermost last
    locals: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Open:
    end: int
    body_start: int
    scope: _Scope


@dataclass(slots=True)
class _Walker:
    facts: FileFacts
    lineage: Lineage
    members: dict[int, dict[str, MemberKind]]
    static_imports: set[str] = field(default_factory=set)
    seen: dict[str, int] = field(default_factory=dict)
    open: list[_Open] = field(default_factory=list)
    at: Node | None = None  # the node being read: where a declared type is referenced

    def qualify(self, parent: str, name: str) -> str:
        # Overloads share a name: the first keeps it, the others are told apart by their order.
        return qualified(self.seen, parent, name)

    def run(self, nodes: list[Node], module: _Scope) -> None:
        for node in nodes:
            start = node.start_byte
            while self.open and self.open[-1].end <= start:
                self.open.pop()
            top = self.open[-1] if self.open else None
            scope = top.scope if top is not None and start >= top.body_start else module
            if top is not None and start < top.body_start:
                # Parameters, base types and annotations of a declaration: the declaration's own scope for
                # parameters (read by `parameter`), the enclosing one for everything else.
                scope = top.scope if node.type == "formal_parameter" else self.outer_scope()
            self.visit(node, scope)

    def outer_scope(self) -> _Scope:
        """The scope around the innermost open declaration."""
        return self.open[-2].scope if len(self.open) > 1 else self.module_scope()

    def module_scope(self) -> _Scope:
        return _Scope(self.facts.module, "module", ())

    def visit(self, node: Node, scope: _Scope) -> None:
        kind = node.type
        self.at = node
        if kind in _TYPE_DECLARATIONS:
            self.klass(node, scope)
        elif kind in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
            self.method(node, scope)
        elif kind == "import_declaration":
            self.import_declaration(node, scope)
        elif kind == "field_declaration":
            self.field_declaration(node, scope)
        elif kind == "local_variable_declaration":
            self.local_variable(node, scope)
        elif kind == "formal_parameter":
            self.parameter(node, scope)
        elif kind == "enhanced_for_statement":
            self.for_each(node, scope)
        elif kind == "method_invocation":
            self.invocation(node, scope)
        elif kind == "object_creation_expression":
            self.creation(node, scope)
        elif kind == "explicit_constructor_invocation":
            self.constructor_invocation(node, scope)

    def enter(self, node: Node, body: Node | None, inner: _Scope) -> None:
        self.open.append(_Open(node.end_byte, body.start_byte if body is not None else node.end_byte, inner))

    def ref(self, target: str, scope: _Scope, node: Node, kind: str = "call") -> None:
        add_reference(self.facts, kind, target, scope.qname, node)

    # -- definitions ---------------------------------------------------------------------------------

    def klass(self, node: Node, scope: _Scope) -> None:
        name = node_text(node.child_by_field_name("name"))
        if not name:
            return
        qname = self.qualify(scope.qname, name)
        path = f"{scope.classes[-1].path}.{name}" if scope.classes and scope.kind == "class" else name
        bases: list[str] = []
        for clause in node.named_children:
            if clause.type in ("superclass", "super_interfaces", "extends_interfaces"):
                lists = [c for c in clause.named_children if c.type == "type_list"] or [clause]
                for type_list in lists:
                    for item in type_list.named_children:
                        base = self.qualified_type(type_name(item), scope)
                        if base:
                            bases.append(base)
                            self.ref(base, scope, item, "inherits")
        body = node.child_by_field_name("body")
        start, end = node.start_point, node.end_point
        header = node_text(node)[: (body.start_byte - node.start_byte) if body is not None else None]
        self.facts.symbols.append(
            Symbol(
                "class",
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                scope.qname,
                block_doc(node, self.lineage),
                squash(header),
                tuple(bases),
                _FLAVORS.get(node.type, ""),
            )
        )
        info = _Class(qname, path, self.members.get(node.id, {}))
        inner = _Scope(qname, "class", (*scope.classes, info))
        # A record's components are its fields and its constructor's parameters.
        self.enter(node, body if node.type != "record_declaration" else node.child_by_field_name("parameters"), inner)

    def method(self, node: Node, scope: _Scope) -> None:
        if scope.kind != "class":
            return  # a method of an anonymous class: its calls belong to the enclosing method
        constructor = node.type != "method_declaration"
        name = CONSTRUCTOR if constructor else node_text(node.child_by_field_name("name"))
        qname = self.qualify(scope.qname, name)
        body = node.child_by_field_name("body")
        start, end = node.start_point, node.end_point
        header = node_text(node)[: (body.start_byte - node.start_byte) if body is not None else None]
        self.facts.symbols.append(
            Symbol(
                "method",
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                scope.qname,
                block_doc(node, self.lineage),
                squash(header),
            )
        )
        self.enter(node, body, _Scope(qname, "method", scope.classes))

    # -- types of names ------------------------------------------------------------------------------

    def qualified_type(self, name: str, scope: _Scope) -> str:
        """A type as the resolver can find it from anywhere in the file: a nested type of an enclosing
        class is written with its class path (`Shop.Line`), since class bodies are not searched by scope."""
        if not name:
            return ""
        head = name.partition(".")[0]
        for info in reversed(scope.classes):
            if info.members.get(head) == "type":
                return f"{info.path}.{name}"
        return name

    def bind(self, scope_qname: str, name: str, type_expr: str) -> None:
        if name:
            self.facts.bindings.append(Binding(scope_qname, name, type_expr))
            declared_type_reference(self.facts, type_expr, scope_qname, self.at)

    def field_declaration(self, node: Node, scope: _Scope) -> None:
        if scope.kind != "class":
            return
        declared = self.qualified_type(type_name(node.child_by_field_name("type")), scope)
        for declarator in node.children_by_field_name("declarator"):
            name = node_text(declarator.child_by_field_name("name"))
            self.bind(scope.qname, name, declared or self.value_type(declarator.child_by_field_name("value"), scope))

    def local_variable(self, node: Node, scope: _Scope) -> None:
        if scope.kind != "method":
            return
        declared_node = node.child_by_field_name("type")
        declared = "" if node_text(declared_node) == "var" else type_name(declared_node)
        for declarator in node.children_by_field_name("declarator"):
            name = node_text(declarator.child_by_field_name("name"))
            scope.locals.add(name)
            type_expr = self.qualified_type(declared, scope) or self.value_type(
                declarator.child_by_field_name("value"), scope
            )
            # A local of unknown type is still recorded (empty type), so calling through it is not guessed.
            self.bind(scope.qname, name, type_expr)

    def parameter(self, node: Node, scope: _Scope) -> None:
        name = node_text(node.child_by_field_name("name"))
        declared = self.qualified_type(type_name(node.child_by_field_name("type")), scope)
        if scope.kind == "class":
            # A record's component is a field of the record (the sweep is inside the record's header).
            self.bind(scope.qname, name, declared)
        elif scope.kind == "method":
            scope.locals.add(name)
            self.bind(scope.qname, name, declared)

    def for_each(self, node: Node, scope: _Scope) -> None:
        """`for (Item i : items)` declares a local of the written type."""
        if scope.kind != "method":
            return
        name = node_text(node.child_by_field_name("name"))
        declared = node.child_by_field_name("type")
        scope.locals.add(name)
        written = "" if node_text(declared) == "var" else type_name(declared)
        self.bind(scope.qname, name, self.qualified_type(written, scope))

    def value_type(self, value: Node | None, scope: _Scope) -> str:
        if value is not None and value.type == "object_creation_expression":
            return self.qualified_type(type_name(value.child_by_field_name("type")), scope)
        return ""

    # -- references ----------------------------------------------------------------------------------

    def receiver_path(self, name: str, scope: _Scope) -> str:
        """`name` (a bare method, or the head of `name.m()`) as the resolver can follow it: locals stay,
        a member of the class becomes `this.name`, a member of an outer class `Outer.name`."""
        if name in scope.locals or name in self.static_imports:
            return name
        for depth, info in enumerate(reversed(scope.classes)):
            member = info.members.get(name)
            if member is None:
                continue
            if member == "type":
                return f"{info.path}.{name}"
            return f"this.{name}" if depth == 0 else f"{info.path}.{name}"
        return name

    def invocation(self, node: Node, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        method = node_text(name_node)
        target = node.child_by_field_name("object")
        if target is None:
            path = self.receiver_path(method, scope)
            # An inherited method (declared in no enclosing class) is still this object's.
            if path == method and method not in self.static_imports and scope.classes:
                path = f"this.{method}"
            self.ref(path, scope, name_node or node)
            return
        dotted = expression_name(target)
        if dotted is None and target.type == "object_creation_expression":
            # `new Repo().refresh()`: the receiver's class is written; look the method up on it.
            dotted = self.qualified_type(type_name(target.child_by_field_name("type")), scope) or None
            if dotted is not None:
                self.ref(f"{dotted}.{method}", scope, name_node or node)
                return
        if dotted is None:
            self.ref(f"?.{method}", scope, name_node or node)
            return
        head, _, rest = dotted.partition(".")
        if head not in ("this", "super"):
            head = self.receiver_path(head, scope)
        self.ref(".".join(p for p in (head, rest, method) if p), scope, target)

    def creation(self, node: Node, scope: _Scope) -> None:
        created = self.qualified_type(type_name(node.child_by_field_name("type")), scope)
        if created:
            self.ref(created, scope, node)

    def constructor_invocation(self, node: Node, scope: _Scope) -> None:
        which = node.child_by_field_name("constructor")
        if which is not None and which.type == "super":
            self.ref("super", scope, which)
        elif which is not None and which.type == "this":
            self.ref(f"this.{CONSTRUCTOR}", scope, which)

    def import_declaration(self, node: Node, scope: _Scope) -> None:
        line = node.start_point[0] + 1
        static = any(c.type == "static" for c in node.children)
        dotted = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        text = "".join(node_text(dotted).split())
        if not text:
            return
        if any(c.type == "asterisk" for c in node.children):
            # Every wildcard keeps its own alias (no identifier is spelled so), like JS star re-exports.
            self.facts.imports.append(Import(text, "*", "*" + text, scope.qname, line))
            return
        module, _, name = text.rpartition(".")
        if static:
            self.static_imports.add(name)
        self.facts.imports.append(Import(module, name, name, scope.qname, line))


def _member_table(nodes: list[Node], lineage: Lineage) -> dict[int, dict[str, MemberKind]]:
    """Per class node: the methods, fields and nested types its body declares (a pass before the sweep)."""
    table: dict[int, dict[str, MemberKind]] = {}
    for node in nodes:
        kind = node.type
        if kind not in ("method_declaration", "field_declaration", *_TYPE_DECLARATIONS):
            continue
        owner = _declaring_type(node, lineage)
        if owner is None:
            continue
        members = table.setdefault(owner.id, {})
        if kind == "field_declaration":
            for name in _declared_names(node):
                members.setdefault(name, "field")
        elif kind == "method_declaration":
            members.setdefault(node_text(node.child_by_field_name("name")), "method")
        else:
            members[node_text(node.child_by_field_name("name"))] = "type"
    for node in nodes:
        if node.type == "record_declaration":
            components = node.child_by_field_name("parameters")
            members = table.setdefault(node.id, {})
            for component in components.named_children if components is not None else []:
                members.setdefault(node_text(component.child_by_field_name("name")), "field")
    return table


def module_name(path: str, package: str) -> str:
    """The package, or for a file without one its directory (`src/app/Main.java` → `src.app`)."""
    if package:
        return package
    directory = posixpath.dirname(path)
    return directory.replace("/", ".") if directory else posixpath.splitext(path)[0]


def extract_java(path: str, source: bytes) -> FileFacts:
    """Symbols, references, imports and bindings of one Java file (path relative to the repository root)."""
    root = parse(_GRAMMAR, source)
    package_node = next((c for c in root.named_children if c.type == "package_declaration"), None)
    package = ""
    if package_node is not None:
        dotted = next((c for c in package_node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        package = "".join(node_text(dotted).split())
    module = module_name(path, package)
    facts = FileFacts(path, "java", module)
    facts.parse_errors = count_errors(root)
    facts.symbols.append(Symbol("module", module.rpartition(".")[2], module, path, 1, 0, root.end_point[0] + 1))
    nodes = in_document_order(kinds_query(grammar(_GRAMMAR), _CAPTURED), root)
    lineage = Lineage(root, nodes)
    walker = _Walker(facts, lineage, _member_table(nodes, lineage))
    walker.seen[module] = 1
    walker.run(nodes, walker.module_scope())
    return facts
