"""The sweep that turns one parsed JavaScript/TypeScript file into FileFacts (see `javascript_facts`).

A tree-sitter query finds the nodes worth reading; the sweep visits them in document order and keeps
the scope of each (which function or class it is in) by byte range rather than recursion, so deeply
nested generated code cannot exhaust the stack. Each handler turns one kind of node into symbols,
references, imports or bindings.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Node, Query

from memhub.knowledge.codegraph.facts import RETURNS, Binding, FileFacts, Import, Symbol, SymbolKind
from memhub.knowledge.codegraph.javascript_modules import reexport_imports, resolve_specifier, statement_imports
from memhub.knowledge.codegraph.javascript_syntax import (
    LITERAL_TYPES,
    expression_name,
    grammar_language,
    is_declared,
    jsdoc,
    pattern_names,
    property_name,
    return_type,
    type_name,
    unwrap,
    value_type,
)
from memhub.knowledge.codegraph.syntax import (
    Lineage,
    add_reference,
    declared_type_reference,
    in_document_order,
    kinds_query,
    node_text,
    qualified,
    squash,
)

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "generator_function"})
# The nodes the extractor reads; node kinds a grammar lacks (JSX in .ts, interfaces in .js) are dropped.
_CAPTURED = (
    "import_statement",
    "export_statement",
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "class",
    "interface_declaration",
    "enum_declaration",
    "internal_module",
    "module",
    "ambient_declaration",
    "method_definition",
    "field_definition",
    "public_field_definition",
    "abstract_method_signature",
    "method_signature",
    "function_signature",
    "arrow_function",
    "function_expression",
    "generator_function",
    "variable_declarator",
    "assignment_expression",
    "call_expression",
    "new_expression",
    "decorator",
    "jsx_opening_element",
    "jsx_self_closing_element",
)


def captured(root: Node, grammar: str) -> list[Node]:
    """The nodes the sweep reads, in document order."""
    return in_document_order(_query(grammar), root)


@cache
def _query(grammar: str) -> Query:
    # The node kinds this grammar has (JSX only in JavaScript and TSX, types only in TypeScript).
    language = grammar_language(grammar)
    return kinds_query(language, tuple(kind for kind in _CAPTURED if language.id_for_node_kind(kind, True)))


@dataclass(slots=True)
class Scope:
    """Where a node is: the definition it belongs to, and the locals known to have a class there."""

    qname: str
    kind: str  # "module", "class", "function", or "namespace" (a TS namespace body)
    class_qname: str | None  # the class whose method this is (for `this`)
    typed: dict[str, str] = field(default_factory=dict)  # locals with a declared type, for `this.x = x`


@dataclass(slots=True)
class _Open:
    """A definition whose body the sweep is inside: where it ends, where its body starts, its scopes."""

    end: int
    body_start: int
    scope: Scope
    outer: Scope


@dataclass(slots=True)
class Walker:
    """The sweep over one file's captured nodes, and the handlers that fill its FileFacts."""

    facts: FileFacts
    known_files: Collection[str] | None
    module_scope: Scope
    lineage: Lineage
    seen: dict[str, int] = field(default_factory=dict)
    open: list[_Open] = field(default_factory=list)
    # Definitions registered by an enclosing node's handler (`const f = () => …` defines f at the
    # declarator): entered when the sweep reaches them instead of being read again as callbacks.
    pending: dict[int, _Open] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)  # nodes already read by an ancestor (`require(…)`)
    skip_until: int = 0  # end of an ambient `declare …` block: declarations only, nothing to read
    bindings: dict[tuple[str, str], str] = field(default_factory=dict)
    at: Node | None = None  # the node being read: where a declared type is referenced
    default_exported: bool = False
    commonjs: bool = False

    # -- the sweep ---------------------------------------------------------------------------------------

    def run(self, nodes: list[Node]) -> None:
        """Visit the captured nodes (from `captured`) in document order."""
        for node in nodes:
            start = node.start_byte
            if start < self.skip_until:
                continue
            while self.open and self.open[-1].end <= start:
                self.open.pop()
            if not self.open:
                scope = self.module_scope
            else:
                top = self.open[-1]
                # Parameters' defaults and decorators, and base classes, run in the enclosing scope.
                scope = top.scope if start >= top.body_start else top.outer
            entry = self.pending.pop(node.id, None)
            if entry is None:
                if node.id in self.claimed:
                    continue
                self.visit(node, scope)
                entry = self.pending.pop(node.id, None)
            if entry is not None:
                self.open.append(entry)
        module = self.facts.module
        if self.commonjs and not self.default_exported:
            # `exports.f = …` only: a default import of this module is the exports object, i.e. the module.
            self.facts.imports.append(Import(module, None, "default", module, 1))
        self.facts.bindings = [Binding(scope, name, type_expr) for (scope, name), type_expr in self.bindings.items()]

    def visit(self, node: Node, scope: Scope) -> None:
        kind = node.type
        self.at = node
        if kind in ("call_expression", "new_expression"):
            self.call(node, scope)
        elif kind in ("arrow_function", "function_expression", "generator_function"):
            self.callback(node, scope)
        elif kind == "variable_declarator":
            self.declarator(node, scope)
        elif kind == "assignment_expression":
            self.assignment(node, scope)
        elif kind in ("function_declaration", "generator_function_declaration"):
            self.function(node, scope, node_text(node.child_by_field_name("name")), method=False)
        elif kind == "method_definition":
            if scope.kind == "class":
                self.function(node, scope, property_name(node.child_by_field_name("name")), method=True)
            else:
                self.callback(node, scope)  # a method of an object literal: like any function value
        elif kind in ("field_definition", "public_field_definition"):
            self.class_field(node, scope)
        elif kind == "abstract_method_signature" or (kind == "method_signature" and is_declared(node, 2, self.lineage)):
            # Abstract methods, and the methods of a `declare class`, have no body but can be called.
            self.function(node, scope, property_name(node.child_by_field_name("name")), method=True)
        elif kind == "function_signature" and is_declared(node, 0, self.lineage):
            self.function(node, scope, node_text(node.child_by_field_name("name")), method=False)
        elif kind in ("class_declaration", "abstract_class_declaration", "class"):
            self.klass(node, scope, None)
        elif kind == "interface_declaration":
            self.interface(node, scope)
        elif kind == "enum_declaration":
            name = node_text(node.child_by_field_name("name"))
            self.symbol("class", name, self.qualify(scope.qname, name), node, scope, f"enum {name}", flavor="enum")
        elif kind in ("internal_module", "module"):
            self.namespace(node, scope)
        elif kind == "ambient_declaration":
            first = node.named_children[0] if node.named_children else None
            if first is not None and (first.type == "statement_block" or first.type == "module"):
                # `declare global {…}` / `declare module "x" {…}` describe names of other modules.
                self.skip_until = node.end_byte
        elif kind == "import_statement":
            self.facts.imports.extend(statement_imports(node, scope.qname, self.specifier))
        elif kind == "export_statement":
            self.export_statement(node, scope)
        elif kind == "decorator":
            self.decorator(node, scope)
        elif kind in ("jsx_opening_element", "jsx_self_closing_element"):
            self.jsx(node, scope)

    # -- definitions -------------------------------------------------------------------------------------

    def qualify(self, parent: str, name: str) -> str:
        return qualified(self.seen, parent, name)

    def symbol(
        self,
        kind: SymbolKind,
        name: str,
        qname: str,
        node: Node,
        scope: Scope,
        signature: str,
        bases: tuple[str, ...] = (),
        doc_node: Node | None = None,
        flavor: str = "",
    ) -> None:
        start, end = node.start_point, node.end_point
        self.facts.symbols.append(
            Symbol(
                kind,
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                scope.qname,
                jsdoc(doc_node or node, self.lineage),
                squash(signature),
                bases,
                flavor,
            )
        )

    def function(
        self,
        node: Node,
        scope: Scope,
        name: str,
        *,
        method: bool,
        owner: Scope | None = None,
        doc: Node | None = None,
    ) -> None:
        """A named function or method: its symbol, parameter bindings, and its body as a scope.

        `owner` is the scope the symbol belongs to when it differs from where it is written
        (`exports.f = function …` inside a wrapper still defines the module's f).
        """
        parent = owner or scope
        qname = self.qualify(parent.qname, name)
        params = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        returns = node.child_by_field_name("return_type")
        if method:
            modifiers = [c.type for c in node.children if c.type in ("static", "get", "set", "async", "*")]
            head = " ".join([*modifiers, name])
        else:
            head = f"function {name}"
        signature = f"{head}{node_text(params)}{node_text(returns)}"
        self.symbol("method" if method else "function", name, qname, node, parent, signature, doc_node=doc)
        inner = Scope(qname, "function", parent.qname if method else parent.class_qname)
        returned = return_type(returns)
        if returned:
            self.bind(qname, RETURNS, returned)  # `make().run()` / `const c = make()` then know c's class
        if params is not None:
            # TS parameter properties (`constructor(private repo: Repo)`) are fields of the class too.
            self.parameters(params, inner, parent.qname if method and name == "constructor" else None)
        body = node.child_by_field_name("body")
        if body is not None:
            self.pending[node.id] = _Open(node.end_byte, body.start_byte, inner, scope)

    def parameters(self, params: Node, scope: Scope, properties_of: str | None = None) -> None:
        """Bind each parameter in `scope`: to its annotated class, or as a local of unknown type."""
        for param in [params] if params.type == "identifier" else params.named_children:
            if param.type in ("required_parameter", "optional_parameter"):
                pattern = param.child_by_field_name("pattern")
                type_expr = type_name(param.child_by_field_name("type"))
                if pattern is not None and pattern.type == "identifier":
                    name = node_text(pattern)
                    self.bind(scope.qname, name, type_expr)
                    if type_expr:
                        scope.typed[name] = type_expr
                    is_property = any(
                        c.type in ("accessibility_modifier", "readonly", "override_modifier") for c in param.children
                    )
                    if properties_of is not None and is_property:
                        self.bind(properties_of, name, type_expr)
                    continue
                names = pattern_names(pattern)
            else:
                names = pattern_names(param)
            for name in names:
                self.bind(scope.qname, name, "")

    def callback(self, node: Node, scope: Scope) -> None:
        """A function value that is not given a name: its calls belong to the enclosing scope (like a lambda)."""
        params = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        if params is not None:
            self.parameters(params, scope)

    def klass(self, node: Node, scope: Scope, name: str | None, owner: Scope | None = None) -> None:
        """A class: its symbol with its bases (`extends`, TS `implements`), and its body as a scope."""
        parent = owner or scope
        name = name or node_text(node.child_by_field_name("name")) or f"<anonymous@{node.start_point[0] + 1}>"
        qname = self.qualify(parent.qname, name)
        bases: list[str] = []
        heritage = next((c for c in node.named_children if c.type == "class_heritage"), None)
        for clause in heritage.named_children if heritage is not None else []:
            if clause.type == "extends_clause":
                expressions = clause.children_by_field_name("value")
            elif clause.type == "implements_clause":
                expressions = clause.named_children
            else:
                expressions = [clause]  # JavaScript: the base expression itself
            for expression in expressions:
                base = expression_name(expression) or type_name(expression)
                if base:
                    bases.append(base)
                    self.ref("inherits", base, scope, expression)
                # A computed base (`extends mixin(A)`) is a call the sweep reads on its own.
        signature = f"class {name} {node_text(heritage)}" if heritage is not None else f"class {name}"
        self.symbol("class", name, qname, node, parent, signature, tuple(bases))
        body = node.child_by_field_name("body")
        if body is not None:
            self.pending[node.id] = _Open(node.end_byte, body.start_byte, Scope(qname, "class", None), scope)

    def class_field(self, node: Node, scope: Scope) -> None:
        """`handle = () => …` is a method; `session = new Session()` / `repo: Repo` types the field."""
        name = property_name(node.child_by_field_name("property") or node.child_by_field_name("name"))
        value = unwrap(node.child_by_field_name("value"))
        if scope.kind != "class" or not name:
            return
        if value is not None and value.type in _FUNCTION_VALUES:
            self.function(value, scope, name, method=True, doc=node)
            return
        type_expr = type_name(node.child_by_field_name("type")) or value_type(value, scope.typed)
        if type_expr:
            self.bind(scope.qname, name, type_expr)

    def interface(self, node: Node, scope: Scope) -> None:
        """A TS interface, kept as a class: its `extends` are bases, its method signatures methods."""
        name = node_text(node.child_by_field_name("name"))
        qname = self.qualify(scope.qname, name)
        bases: list[str] = []
        for clause in node.named_children:
            if clause.type == "extends_type_clause":
                for expression in clause.named_children:
                    base = type_name(expression)
                    if base:
                        bases.append(base)
                        self.ref("inherits", base, scope, expression)
        self.symbol("class", name, qname, node, scope, f"interface {name}", tuple(bases), flavor="interface")
        body = node.child_by_field_name("body")
        inner = Scope(qname, "class", None)
        for member in body.named_children if body is not None else []:
            if member.type == "method_signature":
                self.function(member, inner, property_name(member.child_by_field_name("name")), method=True)

    def namespace(self, node: Node, scope: Scope) -> None:
        """A TS `namespace N { … }`: a container (kept as a class) whose functions are functions."""
        name_node = node.child_by_field_name("name")
        if name_node is None or name_node.type == "string":
            return  # `module "x" { … }` declares an outside module's types
        name = "".join(node_text(name_node).split())
        qname = self.qualify(scope.qname, name)
        self.symbol("class", name, qname, node, scope, f"namespace {name}")
        body = node.child_by_field_name("body")
        if body is not None:
            self.pending[node.id] = _Open(node.end_byte, body.start_byte, Scope(qname, "namespace", None), scope)

    # -- values and bindings -----------------------------------------------------------------------------

    def bind(self, scope: str, name: str, type_expr: str) -> None:
        """Record what a local holds; the first known type wins, and a known type replaces an unknown one."""
        key = (scope, name)
        if not self.bindings.get(key):
            self.bindings[key] = type_expr
            declared_type_reference(self.facts, type_expr, scope, self.at)

    def declarator(self, node: Node, scope: Scope) -> None:
        """`const f = () => …` defines f; `const x = require("./m")` imports; `const c = new C()` binds."""
        target = node.child_by_field_name("name")
        value = unwrap(node.child_by_field_name("value"))
        if target is None:
            return
        if target.type != "identifier":
            if not self.destructured_require(target, value, scope):
                for name in pattern_names(target):
                    self.bind(scope.qname, name, "")
            return
        name = node_text(target)
        if value is not None and value.type in _FUNCTION_VALUES:
            self.function(value, scope, name, method=False, doc=node)
            return
        if value is not None and value.type == "class":
            self.klass(value, scope, name)
            return
        required = self.required(value)
        if required is not None:
            module, member = required
            self.facts.imports.append(Import(module, member, name, scope.qname, node.start_point[0] + 1))
            return
        declared = type_name(node.child_by_field_name("type"))
        if declared:
            scope.typed[name] = declared
        self.bind(scope.qname, name, declared or value_type(value, scope.typed))

    def required(self, value: Node | None) -> tuple[str, str | None] | None:
        """`require("m")` / `await import("m")` → (module, None); `require("m").y` → (module, "y")."""
        value = unwrap(value)
        member: str | None = None
        if value is not None and value.type == "member_expression":
            prop = value.child_by_field_name("property")
            member = node_text(prop) if prop is not None and prop.type == "property_identifier" else None
            value = unwrap(value.child_by_field_name("object")) if member else None
        if value is None or value.type != "call_expression":
            return None
        function = value.child_by_field_name("function")
        arguments = value.child_by_field_name("arguments")
        if function is None or arguments is None or not (function.type == "import" or node_text(function) == "require"):
            return None
        strings = [a for a in arguments.named_children if a.type == "string"]
        if len(arguments.named_children) != 1 or not strings:
            return None
        self.claimed.add(value.id)  # an import, not a call
        return self.specifier(strings[0]), member

    def destructured_require(self, pattern: Node, value: Node | None, scope: Scope) -> bool:
        """`const {a, b: c} = require("m")` → imports of a and b (as c)."""
        required = self.required(value) if pattern.type == "object_pattern" else None
        if required is None or required[1] is not None:
            return False  # `const {a} = require("m").sub` is not followed further
        module = required[0]
        line = pattern.start_point[0] + 1
        for item in pattern.named_children:
            if item.type == "shorthand_property_identifier_pattern":
                name = node_text(item)
                self.facts.imports.append(Import(module, name, name, scope.qname, line))
            elif item.type == "pair_pattern":
                key, local = item.child_by_field_name("key"), item.child_by_field_name("value")
                if key is not None and local is not None and local.type == "identifier":
                    self.facts.imports.append(Import(module, property_name(key), node_text(local), scope.qname, line))
        return True

    def assignment(self, node: Node, scope: Scope) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        target = expression_name(left)
        if target is None or right is None:
            return
        parts = target.split(".")
        if target == "module.exports":
            self.default_export(right, scope, node)
        elif parts[0] in ("exports", "module") and len(parts) == (2 if parts[0] == "exports" else 3):
            if parts[0] == "exports" or parts[1] == "exports":
                self.commonjs = True
                self.named_export(parts[-1], right, scope, node)
        elif parts[0] == "this" and len(parts) == 2 and scope.class_qname is not None:
            # `this.session = new Session()` types the field on the class, for `this.session.send()` elsewhere.
            type_expr = value_type(right, scope.typed)
            if type_expr:
                self.bind(scope.class_qname, parts[1], type_expr)
        elif len(parts) == 1:
            type_expr = value_type(right, scope.typed)
            if type_expr:
                self.bind(scope.qname, target, type_expr)

    # -- imports and exports -----------------------------------------------------------------------------

    def specifier(self, string: Node | None) -> str:
        """The module a quoted specifier (`"./util"`) names, seen from this file."""
        raw = node_text(string)
        return resolve_specifier(self.facts.path, raw[1:-1] if len(raw) >= 2 else raw, self.known_files)

    def self_import(self, name: str | None, alias: str, line: int) -> None:
        """A name this module exports under another name (`export default f`, `exports.g = h`)."""
        module = self.facts.module
        self.facts.imports.append(Import(module, name, alias, module, line))

    def export_statement(self, node: Node, scope: Scope) -> None:
        line = node.start_point[0] + 1
        if node.child_by_field_name("source") is not None:
            self.facts.imports.extend(reexport_imports(node, self.facts.module, self.specifier))
            return
        is_default = any(c.type == "default" for c in node.children)
        declaration = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        if declaration is not None:
            if is_default:
                name = node_text(declaration.child_by_field_name("name"))
                if name:
                    self.default_exported = True
                    self.self_import(name, "default", line)
            return  # the declaration itself is read by the sweep
        if value is not None:
            self.default_export(value, scope, node)
            return
        for clause in node.named_children:
            if clause.type == "export_clause":  # `export {a as b}`, `export {a as default}`
                for spec in clause.named_children:
                    name = property_name(spec.child_by_field_name("name"))
                    alias = property_name(spec.child_by_field_name("alias"))
                    if spec.type == "export_specifier" and alias and alias != name:
                        self.default_exported = self.default_exported or alias == "default"
                        self.self_import(name, alias, line)
            elif clause.type == "identifier":  # TS `export = Foo`
                self.default_exported = True
                self.self_import(node_text(clause), "default", line)

    def default_export(self, value: Node, scope: Scope, statement: Node) -> None:
        """`export default …` / `module.exports = …`: what a default import or a `require` call yields."""
        self.default_exported = True
        line = statement.start_point[0] + 1
        value = unwrap(value) or value
        own_name = node_text(value.child_by_field_name("name")) if value.type in (*_FUNCTION_VALUES, "class") else ""
        if value.type in _FUNCTION_VALUES:
            self.function(value, scope, own_name or "default", method=False, owner=self.module_scope, doc=statement)
        elif value.type == "class":
            self.klass(value, scope, own_name or "default", owner=self.module_scope)
        elif value.type == "identifier":
            self.self_import(node_text(value), "default", line)
        elif value.type == "object":
            self.self_import(None, "default", line)  # the object is the module's namespace
            self.exports_object(value, scope)
        if own_name:
            self.self_import(own_name, "default", line)

    def exports_object(self, value: Node, scope: Scope) -> None:
        """`module.exports = {f, g: h, k() {…}}`: each property a named export."""
        for prop in value.named_children:
            if prop.type == "pair":
                key = property_name(prop.child_by_field_name("key"))
                if key:
                    self.named_export(key, prop.child_by_field_name("value"), scope, prop)
            elif prop.type == "method_definition":
                name = property_name(prop.child_by_field_name("name"))
                self.function(prop, scope, name, method=False, owner=self.module_scope)
            # A shorthand `{f}` exports the module's own f (or its import of f): already a member.

    def named_export(self, name: str, value: Node | None, scope: Scope, statement: Node) -> None:
        """`exports.name = value` (or a property of an exported object)."""
        value = unwrap(value)
        if value is None:
            return
        line = statement.start_point[0] + 1
        if value.type in _FUNCTION_VALUES:
            self.function(value, scope, name, method=False, owner=self.module_scope, doc=statement)
        elif value.type == "class":
            self.klass(value, scope, name, owner=self.module_scope)
        elif value.type == "identifier" and node_text(value) != name:
            self.self_import(node_text(value), name, line)
        else:
            required = self.required(value)
            if required is not None:
                self.facts.imports.append(Import(*required, name, self.facts.module, line))

    # -- references --------------------------------------------------------------------------------------

    def ref(self, kind: str, target: str, scope: Scope, node: Node) -> None:
        add_reference(self.facts, kind, target, scope.qname, node)

    def call(self, node: Node, scope: Scope) -> None:
        """`f()`, `a.b.c()`, `this.m()`, `super()`, `new C()`; `obj[name]()` has no name and no reference."""
        function = node.child_by_field_name("constructor" if node.type == "new_expression" else "function")
        if function is None or function.type == "import":
            return
        name = expression_name(function)
        if name:
            self.ref("call", name, scope, function)
            return
        function = unwrap(function)
        if function is not None and function.type == "member_expression":
            method = node_text(function.child_by_field_name("property"))
            receiver = unwrap(function.child_by_field_name("object"))
            literal = LITERAL_TYPES.get(receiver.type) if receiver is not None else None
            # `[…].map()` is Array's; `make().run()` has a computed receiver: only the method name is known.
            self.ref("call", f"{literal}.{method}" if literal else f"?.{method}", scope, function)

    def decorator(self, node: Node, scope: Scope) -> None:
        expr = unwrap(node.named_children[0]) if node.named_children else None
        if expr is None or expr.type == "call_expression":
            return  # `@Injectable()`: the factory call is captured (and recorded) as a call
        name = expression_name(expr)
        if name:
            self.ref("decorates", name, scope, node)

    def jsx(self, node: Node, scope: Scope) -> None:
        """`<Button />` renders (calls) the component; lower-case tags are HTML elements."""
        name = expression_name(node.child_by_field_name("name"))
        if name and (name[0].isupper() or "." in name):
            self.ref("call", name, scope, node)
