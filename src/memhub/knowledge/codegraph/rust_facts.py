"""Rust source → FileFacts, the same vocabulary as `python_facts`.

A tree-sitter query finds the nodes worth reading and a sweep in document order keeps the scope of
each by byte range (no recursion over the tree), as in the Go and Java extractors.

What Rust needs beyond Python:
- A file is a module named by its path (`src/geo/shapes.rs` → `src/geo/shapes`; `mod.rs`, `lib.rs`,
  `main.rs` are their directory, `src/geo/mod.rs` → `src/geo`), an inline `mod name { … }` is the module
  `<module>/name`. Members are dotted as in Go: `src/geo/shapes.Circle.new`. `mod name;` binds `name`
  to the module `<module>/name` (where Cargo looks for its file), so `name::f()` resolves.
- Paths are written with `::` and start with keywords: `crate::` is the crate's source root (the path
  up to the first `src` directory), `super::` the parent module, `self::` this module, `Self` the type
  of the enclosing impl or trait (`rust_paths`). `use` paths become imports of modules; in expressions,
  `crate` and `super` are names imported into the module (keywords, never a user's name), so
  `crate::geo::area()` is followed module by module like any dotted name. A path from another crate
  (`std::fmt`) keeps its `::`, never names a repository module, and the resolver counts it external.
- Methods live in `impl` blocks, possibly several and in other files of the crate: an impl's methods
  are members of its type, qualified with the module the type is defined in when the file says it
  (`impl crate::geo::Circle`, `use crate::geo::Circle; impl Circle`), else with the impl's module.
  `impl Trait for Type` is an `implements` reference from the type, which the resolver turns into an
  edge and a base for method lookup (trait default methods, overrides). Supertraits are a trait's bases.
- `self` is the receiver keyword. Typed parameters, `let x: T`, `let x = T::new()` (typed by new's
  declared result), `let x = T { … }`, struct fields and statics are bindings; references, `Box`/`Rc`/
  `Arc`, `dyn Trait` and `impl Trait` are seen through; a generic `T: Shape` is its first bound (the
  trait declares the methods called on it). A declared `-> Result<T, E>` / `Option<T>` is T: the value
  code goes on with after `?` or `.unwrap()`.
- Macros are not calls, and their arguments are token trees, not expressions: the arguments of the
  standard expression macros (`println!`, `format!`, `assert_eq!`, `vec!`, …) are parsed again as
  expressions (`rust_macros`), so calls written inside them count. Struct literals `T { … }` are not
  calls; a tuple struct `T(x)` is an instantiation; closures' calls belong to the enclosing function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from memhub.knowledge.codegraph.facts import RETURNS, Binding, FileFacts, Import, Symbol
from memhub.knowledge.codegraph.rust_macros import EXPRESSION_MACROS, MacroArguments, macro_name
from memhub.knowledge.codegraph.rust_paths import CratePaths
from memhub.knowledge.codegraph.rust_syntax import (
    UNWRAPPING,
    crate_root,
    doc_anchor,
    generic_bounds,
    inner_docs,
    module_path,
    path_segments,
    type_segments,
)
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
    parser,
    qualified,
    squash,
)

_TYPES = {"struct_item": "struct", "enum_item": "enum", "union_item": "union", "type_item": "alias"}
_CAPTURED = (
    *_TYPES,
    "mod_item",
    "use_declaration",
    "trait_item",
    "impl_item",
    "function_item",
    "function_signature_item",
    "call_expression",
    "let_declaration",
    "const_item",
    "static_item",
    "closure_expression",
    "macro_invocation",
)
# A value read through these is the value itself (`&x`, `x?`, `(x)`, `fut.await`).
_TRANSPARENT_VALUES = frozenset(
    {"reference_expression", "try_expression", "parenthesized_expression", "await_expression", "unary_expression"}
)


_GRAMMAR = "tree_sitter_rust"


@dataclass(slots=True)
class _Frame:
    """What encloses a node: `scope` is the qname references and bindings belong to; `owner` the type an
    impl or trait adds methods to; `self_type` what `Self` stands for, as a dotted expression."""

    end: int
    kind: str  # "module", "type" (impl or trait body) or "function"
    scope: str
    module: str
    owner: str = ""
    self_type: str = ""
    generics: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class _Walker:
    facts: FileFacts
    paths: CratePaths
    seen: dict[str, int] = field(default_factory=dict)
    open: list[_Frame] = field(default_factory=list)
    macros: MacroArguments = field(default_factory=MacroArguments)
    at: Node | None = None  # the node being read: where a declared type is referenced

    def qualify(self, parent: str, name: str) -> str:
        return qualified(self.seen, parent, name)

    def run(self, nodes: list[Node]) -> None:
        for node in nodes:
            while self.open[-1].end <= node.start_byte:
                self.open.pop()
            self.visit(node, self.open[-1])

    def visit(self, node: Node, frame: _Frame) -> None:
        kind = node.type
        self.at = node
        if kind == "call_expression":
            self.call(node, frame)
        elif kind in ("function_item", "function_signature_item"):
            self.function(node, frame)
        elif kind == "let_declaration":
            self.let(node, frame)
        elif kind == "macro_invocation":
            if macro_name(node) in EXPRESSION_MACROS:
                self.macros.add(node, frame)
        elif kind == "closure_expression":
            self.parameters(node.child_by_field_name("parameters"), frame)
        elif kind == "use_declaration":
            self.paths.use(node, frame.module, frame.scope)
        elif kind == "impl_item":
            self.impl(node, frame)
        elif kind == "trait_item":
            self.trait(node, frame)
        elif kind in _TYPES:
            self.type_item(node, frame)
        elif kind == "mod_item":
            self.mod(node, frame)
        elif kind in ("const_item", "static_item"):
            declared = self.type_expr(node.child_by_field_name("type"), frame)
            self.bind(frame.scope, node_text(node.child_by_field_name("name")), declared)

    def ref(self, kind: str, target: str, scope: str, node: Node) -> None:
        add_reference(self.facts, kind, target, scope, node)

    def bind(self, scope: str, name: str, type_expr: str) -> None:
        if name and name != "_":
            self.facts.bindings.append(Binding(scope, name, type_expr))
            declared_type_reference(self.facts, type_expr, scope, self.at)

    def symbol(self, node: Node, kind: str, name: str, qname: str, parent: str, **extra: object) -> None:
        body = node.child_by_field_name("body")
        header = node_text(node)[: (body.start_byte - node.start_byte) if body is not None else None]
        start, end = node.start_point, node.end_point
        self.facts.symbols.append(
            Symbol(
                kind,  # type: ignore[arg-type]
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                parent,
                line_docs(doc_anchor(node, self.paths.lineage), "///", self.paths.lineage),
                squash(header.rstrip().removesuffix(";"), 200),
                **extra,  # type: ignore[arg-type]
            )
        )

    def translate(self, segments: list[str] | None, frame: _Frame) -> str | None:
        line = self.at.start_point[0] + 1 if self.at is not None else 1
        return self.paths.dotted(segments, frame.module, frame.self_type, line)

    def type_expr(self, node: Node | None, frame: _Frame, *, result: bool = False) -> str:
        return self.translate(type_segments(node, frame.generics, result=result), frame) or ""

    def expression(self, node: Node | None, frame: _Frame) -> str | None:
        """`a`, `self.repo`, `shapes::Circle::new`, `self.0` as dotted text; None when computed."""
        if node is None:
            return None
        kind = node.type
        if kind in ("identifier", "self"):
            return node_text(node)
        if kind in ("scoped_identifier", "generic_type"):
            return self.translate(path_segments(node), frame)
        if kind == "generic_function":  # `f::<T>()`: f
            return self.expression(node.child_by_field_name("function"), frame)
        if kind == "field_expression":
            value = self.expression(self.unwrapped(node.child_by_field_name("value")), frame)
            name = node_text(node.child_by_field_name("field"))
            return f"{value}.{name}" if value and name else None
        return None

    @staticmethod
    def unwrapped(node: Node | None) -> Node | None:
        while node is not None and node.type in _TRANSPARENT_VALUES and node.named_children:
            node = node.named_children[-1]
        return node

    def value_type(self, value: Node | None, frame: _Frame) -> str:
        """The type a `let` right-hand side gives: `T { … }`, `T::new(…)` (typed by new's declared result),
        `f()?`, `f().unwrap()`, `vec![…]`, a string literal; "" when unknown."""
        value = self.unwrapped(value)
        if value is None:
            return ""
        kind = value.type
        if kind == "struct_expression":
            return self.translate(path_segments(value.child_by_field_name("name")), frame) or ""
        if kind == "call_expression":
            function = value.child_by_field_name("function")
            field_name = node_text(function.child_by_field_name("field")) if function is not None else ""
            if function is not None and function.type == "field_expression" and field_name in UNWRAPPING:
                return self.value_type(function.child_by_field_name("value"), frame)
            callee = self.expression(function, frame)
            return f"(){callee}" if callee else ""
        if kind == "macro_invocation":
            return {"vec": "Vec", "format": "String"}.get(macro_name(value), "")
        if kind in ("string_literal", "raw_string_literal"):
            return "str"
        return ""

    # -- definitions ---------------------------------------------------------------------------------

    def mod(self, node: Node, frame: _Frame) -> None:
        name = node_text(node.child_by_field_name("name"))
        module = f"{frame.module}/{name}"
        body = node.child_by_field_name("body")
        if body is None:  # `mod name;`: the file name.rs or name/mod.rs, the module `<module>/name`
            self.facts.imports.append(Import(module, None, name, frame.scope, node.start_point[0] + 1))
            return
        self.symbol(node, "module", name, module, frame.module)
        self.open.append(_Frame(node.end_byte, "module", module, module))

    def container(self, frame: _Frame) -> str:
        """Where a type defined here lives: the module, or the function whose body defines it."""
        return frame.scope if frame.kind == "function" else frame.module

    def type_item(self, node: Node, frame: _Frame) -> None:
        name = node_text(node.child_by_field_name("name"))
        if not name or (node.type == "type_item" and frame.kind == "type"):
            return  # `type Output = X;` in an impl: an associated type, not a definition of the module
        parent = self.container(frame)
        qname = self.qualify(parent, name)
        generics = {**frame.generics, **generic_bounds(node)}
        inner = _Frame(node.end_byte, "type", qname, frame.module, qname, name, generics)
        bases: tuple[str, ...] = ()
        if node.type == "type_item":  # `type Store = Repo;`: the alias has the aliased type's members
            aliased = self.type_expr(node.child_by_field_name("type"), inner)
            bases = (aliased,) if aliased else ()
        body = node.child_by_field_name("body")
        if body is not None and body.type == "field_declaration_list":
            for declaration in body.named_children:
                if declaration.type == "field_declaration":
                    declared = self.type_expr(declaration.child_by_field_name("type"), inner)
                    self.bind(qname, node_text(declaration.child_by_field_name("name")), declared)
        elif body is not None and body.type == "ordered_field_declaration_list":  # `struct Meters(f64)`: self.0
            for index, declared_node in enumerate(body.children_by_field_name("type")):
                self.bind(qname, str(index), self.type_expr(declared_node, inner))
        self.symbol(node, "class", name, qname, parent, bases=bases, flavor=_TYPES[node.type])

    def trait(self, node: Node, frame: _Frame) -> None:
        name = node_text(node.child_by_field_name("name"))
        parent = self.container(frame)
        qname = self.qualify(parent, name)
        inner = _Frame(node.end_byte, "type", qname, frame.module, qname, name, generic_bounds(node))
        supertraits = node.child_by_field_name("bounds")
        bases = [self.type_expr(bound, inner) for bound in supertraits.named_children] if supertraits else []
        self.symbol(node, "class", name, qname, parent, bases=tuple(b for b in bases if b), flavor="trait")
        self.open.append(inner)

    def impl(self, node: Node, frame: _Frame) -> None:
        type_node = node.child_by_field_name("type")
        segments = type_segments(type_node, {})  # `impl<T: Shape> Tr for T` is T's, not Shape's
        owner = self.impl_owner(segments, frame) if segments else ""
        if not owner:
            owner = f"{self.container(frame)}.{''.join(node_text(type_node).split()).replace('.', '_')}"
        generics = {**frame.generics, **generic_bounds(node)}
        self_type = self.translate(segments, frame) or ""
        inner = _Frame(node.end_byte, "type", owner, frame.module, owner, self_type, generics)
        trait = node.child_by_field_name("trait")
        target = self.type_expr(trait, frame) if trait is not None else ""
        if target:
            self.ref("implements", target, owner, trait)  # type: ignore[arg-type]
            if owner.rpartition(".")[0] != self.container(frame):
                # The trait is named as this module sees it; the resolver reads the reference from the type.
                head = target.split(".")[0]
                self.paths.import_once(owner, frame.module, head, head, node.start_point[0] + 1)
        self.open.append(inner)

    def impl_owner(self, segments: list[str], frame: _Frame) -> str:
        """The qname of the type an impl is for: where the path or a `use` of this module says it is."""
        name = segments[-1]
        if len(segments) > 1 and segments[0] != "Self":
            target = self.paths.use_target(segments, frame.module)
            if target is not None and target[2] and target[1]:
                return f"{target[0]}.{target[1]}"
            return ""
        if frame.kind == "module" and name in self.paths.uses.get(frame.module, {}):
            module, original = self.paths.uses[frame.module][name]
            return f"{module}.{original}"
        return f"{self.container(frame)}.{name}"

    def function(self, node: Node, frame: _Frame) -> None:
        name = node_text(node.child_by_field_name("name"))
        method = frame.kind == "type"
        qname = self.qualify(frame.scope, name)
        self.symbol(node, "method" if method else "function", name, qname, frame.scope)
        generics = {**frame.generics, **generic_bounds(node)}
        inner = _Frame(node.end_byte, "function", qname, frame.module, frame.owner, frame.self_type, generics)
        self.parameters(node.child_by_field_name("parameters"), inner)
        returned = self.type_expr(node.child_by_field_name("return_type"), inner, result=True)
        if returned:
            self.bind(qname, RETURNS, returned)
        if node.child_by_field_name("body") is not None:
            self.open.append(inner)

    def parameters(self, parameters: Node | None, frame: _Frame) -> None:
        """Every named parameter is a local of `frame`: typed when its type names one, else of unknown type,
        so calling a parameter (`f(x)` with `f: impl Fn(u32)`) is never taken for a function named f."""
        for parameter in parameters.named_children if parameters is not None else []:
            if parameter.type == "identifier":  # an untyped closure parameter
                self.bind(frame.scope, node_text(parameter), "")
            elif parameter.type == "parameter":
                pattern = parameter.child_by_field_name("pattern")
                declared = self.type_expr(parameter.child_by_field_name("type"), frame)
                self.bind_pattern(frame.scope, pattern, declared)

    def bind_pattern(self, scope: str, pattern: Node | None, declared: str) -> None:
        """A name pattern holds the declared type; the names inside a tuple pattern are of unknown type."""
        if pattern is not None and pattern.type == "identifier":
            self.bind(scope, node_text(pattern), declared)
            return
        for name_node in _pattern_names(pattern):
            self.bind(scope, node_text(name_node), "")

    def let(self, node: Node, frame: _Frame) -> None:
        pattern = node.child_by_field_name("pattern")
        declared = self.type_expr(node.child_by_field_name("type"), frame)
        # Unknown types are recorded empty, so calling through the local is not guessed by name.
        self.bind_pattern(frame.scope, pattern, declared or self.value_type(node.child_by_field_name("value"), frame))

    # -- references ----------------------------------------------------------------------------------

    def call(self, node: Node, frame: _Frame) -> None:
        function = node.child_by_field_name("function")
        if function is not None and function.type == "generic_function":
            function = function.child_by_field_name("function")
        name = self.expression(function, frame)
        if name:
            self.ref("call", name, frame.scope, function)  # type: ignore[arg-type]
        elif function is not None and function.type == "field_expression":
            value = function.child_by_field_name("value")
            method = node_text(function.child_by_field_name("field"))
            literal = self.value_type(value, frame) if value is not None and value.type != "call_expression" else ""
            # `Point { … }.norm()` names its type; `make().run()` has a computed receiver: the name alone.
            self.ref("call", f"{literal}.{method}" if literal else f"?.{method}", frame.scope, function)


def _pattern_names(pattern: Node | None) -> list[Node]:
    """The names a pattern binds: `x`, `(a, b)`, `mut x` (the pattern itself when it is a name)."""
    if pattern is None:
        return []
    if pattern.type == "identifier":
        return [pattern]
    if pattern.type in ("tuple_pattern", "mut_pattern", "ref_pattern", "reference_pattern"):
        return [name for child in pattern.named_children for name in _pattern_names(child)]
    return []


def extract_rust(path: str, source: bytes) -> FileFacts:
    """Symbols, references, imports and bindings of one Rust file (path relative to the repository root)."""
    root = parse(_GRAMMAR, source)
    module = module_path(path)
    facts = FileFacts(path, "rust", module)
    facts.parse_errors = count_errors(root)
    facts.symbols.append(
        Symbol("module", module.rpartition("/")[2], module, path, 1, 0, root.end_point[0] + 1, None, inner_docs(root))
    )
    nodes = in_document_order(kinds_query(grammar(_GRAMMAR), _CAPTURED), root)
    walker = _Walker(facts, CratePaths(facts, crate_root(path), Lineage(root, nodes)))
    walker.seen[module] = 1
    walker.open.append(_Frame(len(source) + 1, "module", module, module))
    walker.paths.prepare(nodes)
    walker.run(nodes)
    # Calls written inside macro arguments, read from the arguments parsed as expressions.
    for call, frame in walker.macros.calls(source, parser(_GRAMMAR)):
        walker.at = call
        walker.call(call, frame)
    return facts
