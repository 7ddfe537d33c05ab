"""Python source → FileFacts, by walking the tree-sitter syntax tree.

A walk (rather than tags queries) keeps the scope of every reference: which function or class it is
in, what `self` means there, and which local names hold instances of which classes. Syntax errors do
not stop the walk: tree-sitter returns a tree with ERROR nodes, whose count is reported, and
everything outside them is still extracted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from memhub.knowledge.codegraph.facts import RETURNS, Binding, FileFacts, Import, Symbol, SymbolKind
from memhub.knowledge.codegraph.syntax import add_reference, grammar, in_document_order, kinds_query, parse, qualified

_GRAMMAR = "tree_sitter_python"


def module_name(path: str) -> str:
    """`pkg/sub/mod.py` → `pkg.sub.mod`; a package's `__init__.py` is the package itself."""
    parts = path.removesuffix(".py").removesuffix(".pyi").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p)


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Longer attributes are walked instead of read as text: in a call chain `a.b(x).c(y)…` each call's callee
# spans the whole chain before it, so reading their text would be quadratic in the chain's length.
_DOTTED_TEXT_MAX = 256


def expression_name(node: Node | None) -> str | None:
    """The dotted text of a name expression (`a`, `a.b.c`); None for anything computed (`f().g`, `x[0].y`)."""
    if node is None:
        return None
    if node.type == "identifier":
        return _text(node)
    if node.type != "attribute":
        return None
    if node.end_byte - node.start_byte <= _DOTTED_TEXT_MAX:
        text = _text(node)
        if _DOTTED.fullmatch(text):
            return text  # the common case, checked in C: no walk over the attribute chain
    parts: list[str] = []
    while node is not None and node.type == "attribute":
        attr = node.child_by_field_name("attribute")
        if attr is None:
            return None
        parts.append(_text(attr))
        node = node.child_by_field_name("object")
    if node is None or node.type != "identifier":
        return None
    parts.append(_text(node))
    return ".".join(reversed(parts))


def _docstring(body: Node | None) -> str:
    if body is None or not body.named_children:
        return ""
    first = body.named_children[0]
    if first.type == "expression_statement" and first.named_children and first.named_children[0].type == "string":
        raw = _text(first.named_children[0])
        return raw.strip("\"'").strip()[:500]
    return ""


_LITERALS = frozenset(
    {
        "string",
        "concatenated_string",
        "integer",
        "float",
        "list",
        "dictionary",
        "set",
        "tuple",
        "list_comprehension",
        "dictionary_comprehension",
        "set_comprehension",
        "generator_expression",
    }
)
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})


def _flavor(bases: list[str]) -> str:
    """A class listing `Protocol` among its bases is one (its subclasses implement it); an Enum's is an enum."""
    names = {base.rpartition(".")[2] for base in bases}
    return "protocol" if "Protocol" in names else "enum" if names & _ENUM_BASES else ""


@dataclass(slots=True)
class _Scope:
    qname: str
    kind: SymbolKind
    class_qname: str | None  # the class whose method this is (for self / cls)


# The nodes the extractor reads; tree-sitter finds them in C, so the walk in Python touches only these
# (about one node in seven) instead of every node of the tree. Argument lists and keyword arguments are
# captured whole and their names read from them (`_arguments`): a pattern matching a child of an argument
# list would make the query quadratic in how deeply calls nest.
_CAPTURED = (
    "function_definition",
    "class_definition",
    "call",
    "import_statement",
    "import_from_statement",
    "assignment",
    "decorator",
    "ERROR",
    "for_statement",
    "as_pattern_target",
    "argument_list",
    "keyword_argument",
)
_VALUE_NAMES = ("identifier", "attribute")


def _swept(root: Node) -> list[Node]:
    """The nodes the sweep visits, in document order: the captured ones, with each argument list and
    keyword argument replaced by the names it passes (a function or class handed over as a value)."""
    nodes: list[Node] = []
    for node in in_document_order(kinds_query(grammar(_GRAMMAR), _CAPTURED), root):
        kind = node.type
        if kind == "argument_list":
            nodes.extend(child for child in node.named_children if child.type in _VALUE_NAMES)
        elif kind == "keyword_argument":
            value = node.child_by_field_name("value")
            if value is not None and value.type in _VALUE_NAMES:
                nodes.append(value)
        else:
            nodes.append(node)
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    return nodes


@dataclass(slots=True)
class _Open:
    """A definition whose body the sweep is inside: where it ends, where its body starts, its scopes."""

    end: int
    body_start: int
    scope: _Scope
    outer: _Scope


@dataclass(slots=True)
class _Walker:
    facts: FileFacts
    package: str
    seen: dict[str, int] = field(default_factory=dict)
    open: list[_Open] = field(default_factory=list)

    def qualify(self, parent: str, name: str) -> str:
        return qualified(self.seen, parent, name)

    def run(self, root: Node, module: _Scope) -> None:
        """Visit the interesting nodes in document order, tracking the enclosing definitions by byte range
        (a sweep, not recursion: generated code nests expressions thousands deep)."""
        nodes = _swept(root)
        for node in nodes:
            start = node.start_byte
            while self.open and self.open[-1].end <= start:
                self.open.pop()
            if not self.open:
                scope = module
            else:
                top = self.open[-1]
                # Default values, decorators' arguments and base classes run in the enclosing scope.
                scope = top.scope if start >= top.body_start else top.outer
            self.visit(node, scope)
        if root.has_error and self.facts.parse_errors == 0:
            self.facts.parse_errors = 1  # only MISSING nodes: still a syntax error

    def visit(self, node: Node, scope: _Scope) -> None:
        kind = node.type
        if kind == "ERROR":
            self.facts.parse_errors += 1
        elif kind == "function_definition":
            self.function(node, scope)
        elif kind == "class_definition":
            self.klass(node, scope)
        elif kind == "call":
            self.call(node, scope)
        elif kind in ("import_statement", "import_from_statement"):
            self.imports(node, scope)
        elif kind == "assignment":
            self.assignment(node, scope)
        elif kind == "decorator":
            self.decorator(node, scope)
        elif kind == "for_statement":
            self.locals(node.child_by_field_name("left"), scope)
        elif kind == "as_pattern_target":
            self.locals(node, scope)
        elif kind in ("identifier", "attribute"):
            # Only captured as an argument: a function or class handed over as a value (`key=sort_key`,
            # `Thread(target=self.run)`).
            value = expression_name(node)
            if value:
                self._ref("reference", value, scope, node)

    def enter(self, node: Node, body: Node | None, inner: _Scope, outer: _Scope) -> None:
        self.open.append(_Open(node.end_byte, body.start_byte if body is not None else node.end_byte, inner, outer))

    def _ref(self, kind: str, target: str, scope: _Scope, node: Node) -> None:
        add_reference(self.facts, kind, target, scope.qname, node)

    def decorator(self, node: Node, scope: _Scope) -> None:
        expr = next((c for c in node.named_children), None)
        if expr is not None and expr.type == "call":
            return  # `@route("/x")`: the factory call is captured (and recorded) as a call
        name = expression_name(expr)
        if name:
            self._ref("decorates", name, scope, node)

    def function(self, node: Node, scope: _Scope) -> None:
        name = _text(node.child_by_field_name("name"))
        qname = self.qualify(scope.qname, name)
        method = scope.kind == "class"
        body = node.child_by_field_name("body")
        params = node.child_by_field_name("parameters")
        start, end = node.start_point, node.end_point
        self.facts.symbols.append(
            Symbol(
                "method" if method else "function",
                name,
                qname,
                self.facts.path,
                start[0] + 1,
                start[1],
                end[0] + 1,
                scope.qname,
                _docstring(body),
                f"def {name}{_text(params)}"[:300],
            )
        )
        inner = _Scope(qname, "function", scope.qname if method else scope.class_qname)
        if params is not None:
            self.parameters(params, inner, skip_first=method)
        returns = node.child_by_field_name("return_type")
        returned = self.annotation(returns, inner)
        if returned:
            # `def make() -> Client`: `x = make()` holds a Client, as a declared result types it in Java or Go.
            self.facts.bindings.append(Binding(qname, RETURNS, returned))
        self.enter(node, body, inner, scope)

    def annotation(self, type_node: Node | None, scope: _Scope) -> str | None:
        """The class an annotation names (`Client`, `m.Client`), recorded as a reference from `scope`."""
        first = type_node.named_children[0] if type_node is not None and type_node.named_children else None
        name = expression_name(first)
        if name and first is not None:
            self._ref("reference", name, scope, first)
        return name

    def parameters(self, params: Node, scope: _Scope, *, skip_first: bool) -> None:
        """Every parameter is a local of the function: typed by its annotation, else of unknown type, so a
        parameter named like a module function (`def run(handler): handler()`) is never taken for it."""
        for index, param in enumerate(params.named_children):
            kind = param.type
            if kind == "identifier":
                name_node: Node | None = param
            elif kind in ("list_splat_pattern", "dictionary_splat_pattern"):
                name_node = next((c for c in param.named_children if c.type == "identifier"), None)
            else:
                name_node = param.child_by_field_name("name") or next(
                    (c for c in param.named_children if c.type == "identifier"), None
                )
            if name_node is None or (index == 0 and skip_first and _text(name_node) in ("self", "cls")):
                continue  # receivers, not locals
            typed = kind in ("typed_parameter", "typed_default_parameter")
            annotation = self.annotation(param.child_by_field_name("type"), scope) if typed else None
            self.facts.bindings.append(Binding(scope.qname, _text(name_node), annotation or ""))

    def klass(self, node: Node, scope: _Scope) -> None:
        name = _text(node.child_by_field_name("name"))
        qname = self.qualify(scope.qname, name)
        bases: list[str] = []
        superclasses = node.child_by_field_name("superclasses")
        if superclasses is not None:
            for arg in superclasses.named_children:
                base = expression_name(arg)
                if base:
                    bases.append(base)
                    self._ref("inherits", base, scope, arg)
        body = node.child_by_field_name("body")
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
                scope.qname,
                _docstring(body),
                f"class {name}{_text(superclasses)}"[:300],
                tuple(bases),
                _flavor(bases),
            )
        )
        self.enter(node, body, _Scope(qname, "class", None), scope)

    def locals(self, target: Node | None, scope: _Scope) -> None:
        """Names a loop, `with … as` or `except … as` binds: locals of unknown type, so `for rule in rules:
        rule()` is a dynamic call, not the module's function `rule`."""
        pending = [target] if target is not None else []
        while pending:
            node = pending.pop()
            if node.type == "identifier":
                self.facts.bindings.append(Binding(scope.qname, _text(node), ""))
            elif node.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "as_pattern_target"):
                pending.extend(node.named_children)

    def call(self, node: Node, scope: _Scope) -> None:
        function = node.child_by_field_name("function")
        name = expression_name(function)
        if name == "super":
            return  # the proxy; the call made through it is recorded as `super.m`
        if name:
            self._ref("call", name, scope, function or node)
        elif function is not None and function.type == "attribute":
            receiver = function.child_by_field_name("object")
            method = _text(function.child_by_field_name("attribute"))
            through_super = receiver is not None and receiver.type == "call"
            if through_super and expression_name(receiver.child_by_field_name("function")) == "super":
                self._ref("call", "super." + method, scope, function)  # `super().m()`, `super(C, self).m()`
                return
            if receiver is not None and receiver.type in _LITERALS:
                return  # `" ".join(xs)`, `[].append(x)`: a builtin type's method, never the repository's
            # `make().run()`: the receiver is computed; only the method name is known.
            self._ref("call", "?." + method, scope, function)

    def assignment(self, node: Node, scope: _Scope) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        target = expression_name(left)
        annotation = node.child_by_field_name("type")
        if target is None or ("." in target and not target.startswith("self.")):
            return
        # `self.client = Client()` types the attribute on the class, for `self.client.send()` elsewhere.
        on_class = target.startswith("self.") and scope.class_qname is not None
        holder = scope.class_qname if on_class and scope.class_qname else scope.qname
        name = target.removeprefix("self.") if on_class else target
        if annotation is not None and annotation.named_children:
            type_name = self.annotation(annotation, scope)
            if type_name:
                self.facts.bindings.append(Binding(holder, name, type_name))
                return
        if right is not None and right.type == "call":
            callee = expression_name(right.child_by_field_name("function"))
            if callee:
                # A class call gives an instance; a function call gives an unknown type: resolution decides.
                self.facts.bindings.append(Binding(holder, name, "()" + callee))
                return
        if not on_class and scope.kind == "function":
            # `rule = rules[0]`: a local of unknown type (a later `rule()` is dynamic). Module and class
            # level names stay out: there an assignment may alias a definition (`Charset = _charset.Charset`).
            self.facts.bindings.append(Binding(holder, name, ""))

    def imports(self, node: Node, scope: _Scope) -> None:
        line = node.start_point[0] + 1
        if node.type == "import_statement":
            for item in node.named_children:
                if item.type == "aliased_import":
                    module = _text(item.child_by_field_name("name"))
                    self.facts.imports.append(
                        Import(module, None, _text(item.child_by_field_name("alias")), scope.qname, line)
                    )
                elif item.type == "dotted_name":
                    module = _text(item)
                    # `import a.b` binds `a`; `a.b.f()` is then resolved through it.
                    self.facts.imports.append(
                        Import(module.split(".")[0], None, module.split(".")[0], scope.qname, line)
                    )
            return
        source = node.child_by_field_name("module_name")
        module = self.absolute(source)
        for item in node.named_children:
            if item == source:
                continue
            if item.type == "aliased_import":
                name = _text(item.child_by_field_name("name"))
                self.facts.imports.append(
                    Import(module, name, _text(item.child_by_field_name("alias")), scope.qname, line)
                )
            elif item.type == "dotted_name":
                name = _text(item)
                self.facts.imports.append(Import(module, name, name.split(".")[-1], scope.qname, line))
            elif item.type == "wildcard_import":
                # One alias per star import (`*` + module), so a second one does not replace the first.
                self.facts.imports.append(Import(module, "*", "*" + module, scope.qname, line))

    def absolute(self, source: Node | None) -> str:
        """The absolute module of a `from … import`, resolving leading dots against this file's package."""
        if source is None:
            return ""
        if source.type != "relative_import":
            return _text(source)
        prefix = next((c for c in source.children if c.type == "import_prefix"), None)
        dots = len(_text(prefix))
        rest = next((c for c in source.children if c.type == "dotted_name"), None)
        base = self.package.split(".") if self.package else []
        base = base[: len(base) - (dots - 1)] if dots > 1 else base
        return ".".join([*base, *([_text(rest)] if rest is not None else [])])


def extract_python(path: str, source: bytes) -> FileFacts:
    """Symbols, references, imports and instance bindings of one Python file (path relative to the repo root)."""
    module = module_name(path)
    is_package = path.endswith("__init__.py")
    package = module if is_package else module.rpartition(".")[0]
    facts = FileFacts(path, "python", module)
    root = parse(_GRAMMAR, source)
    end = root.end_point
    facts.symbols.append(
        Symbol("module", module.rpartition(".")[2] or module, module, path, 1, 0, end[0] + 1, None, _docstring(root))
    )
    walker = _Walker(facts, package)
    walker.seen[module] = 1
    walker.run(root, _Scope(module, "module", None))
    return facts
