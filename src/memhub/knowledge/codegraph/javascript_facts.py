"""JavaScript and TypeScript source → FileFacts, the same vocabulary as `python_facts`.

Like the Python extractor, a tree-sitter query finds the nodes worth reading and a sweep over them in
document order keeps the scope of each (which function or class it is in), by byte range rather than
recursion, so deeply nested generated code cannot exhaust the stack.

What JavaScript needs beyond Python:
- Module qualified names are file paths without the extension (`src/util`), so symbols read
  `src/util.slugify`, `src/client.Client.get`. Import specifiers are resolved against the files of
  the repository (`./util`, `./util.js` for `util.ts`, `./lib` for `lib/index.ts`); bare ones
  (`react`, `node:fs`) stay as written and so resolve outside the repository.
- Functions are often values: an arrow or function expression bound to a `const`, a class field or
  an `exports.name` is a named function; one passed as an argument is a callback whose calls belong to
  the enclosing named function (as Python lambdas do).
- Default exports are imports of the module's own symbol under the name `default`
  (`export default f` → Import(module, "f", "default")), so `import x from "./m"` follows them;
  `module.exports = …` is the CommonJS default, `exports.name = …` a named export.
- `new C()` is a call of C (the resolver makes it `instantiates` plus a call of `C.constructor`);
  a JSX element `<Button />` is a call of the component; TS decorators are references like Python's.
- Locals bound without a known type (untyped parameters, destructured names) are recorded with an
  empty type, so calling them is known to be dynamic rather than guessed by name.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from memhub.knowledge.codegraph.facts import RETURNS, Binding, FileFacts, Import, Reference, Symbol, SymbolKind

# Source files by extension: (language reported, grammar parsed with).
LANGUAGES: dict[str, tuple[str, str]] = {
    ".js": ("javascript", "javascript"),
    ".jsx": ("javascript", "javascript"),
    ".mjs": ("javascript", "javascript"),
    ".cjs": ("javascript", "javascript"),
    ".ts": ("typescript", "typescript"),
    ".mts": ("typescript", "typescript"),
    ".cts": ("typescript", "typescript"),
    ".tsx": ("typescript", "tsx"),
}
# The order a relative specifier without extension is tried in: TypeScript sources before compiled JS,
# and declaration files last, so an implementation shipped with its `.d.ts` is the one resolved to.
_RESOLUTION_ORDER = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")
# TS sources are imported by the name of their compiled output (`import "./util.js"` for util.ts).
_COMPILED_FROM = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "generator_function"})
# Values whose type is a global class: calling their methods (`[].push`, `{}.hasOwnProperty`) leaves the repo.
_LITERAL_TYPES = {
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


def language_of(path: str) -> str | None:
    """ "javascript" / "typescript" for a file this extractor reads, else None."""
    entry = LANGUAGES.get(posixpath.splitext(path)[1])
    return entry[0] if entry else None


def module_name(path: str) -> str:
    """`src/util.ts` → `src/util`: the path without its extension, "/" kept (`index` files keep `/index`)."""
    stem, ext = posixpath.splitext(path)
    return stem if ext in LANGUAGES else path


def resolve_specifier(importer: str, specifier: str, known_files: Collection[str] | None = None) -> str:
    """The module an import specifier names, seen from the file `importer`.

    Relative specifiers are tried against `known_files` (repository-relative paths; pass a set): the
    exact path, the TS source of a compiled name, then each extension, then `index.*` in a folder.
    A relative path that names no known file, or any relative path when `known_files` is None, keeps
    its normalised path without extension (`./util.js` → `src/util`), which the resolver maps to
    `src/util/index` or `src/util.d` when that is the module that exists. One leaving the repository
    and bare specifiers (`react`, `node:fs`, `@scope/pkg`) are returned as written.
    """
    if not specifier.startswith("."):
        return specifier
    base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
    if base == ".." or base.startswith("../"):
        return specifier
    stem, ext = posixpath.splitext(base)
    candidates = [base, *(stem + source for source in _COMPILED_FROM.get(ext, ()))]
    candidates += [base + suffix for suffix in _RESOLUTION_ORDER]
    candidates += [f"{base}/index{suffix}" for suffix in _RESOLUTION_ORDER]
    if known_files is None:
        return module_name(base)
    found = next((c for c in candidates if c in known_files and c.endswith(tuple(LANGUAGES))), base)
    return module_name(found)


@cache
def _parser(grammar: str) -> Parser:
    return Parser(_language(grammar))


@cache
def _language(grammar: str) -> Language:
    if grammar == "javascript":
        import tree_sitter_javascript

        return Language(tree_sitter_javascript.language())
    import tree_sitter_typescript

    return Language(
        tree_sitter_typescript.language_tsx() if grammar == "tsx" else tree_sitter_typescript.language_typescript()
    )


@cache
def _query(grammar: str) -> Query:
    language = _language(grammar)
    kinds = [kind for kind in _CAPTURED if language.id_for_node_kind(kind, True)]
    return Query(language, "\n".join(f"({kind}) @node" for kind in kinds))


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _squash(text: str, limit: int = 300) -> str:
    """Source text on one line (signatures span lines when parameters do)."""
    return " ".join(text.split())[:limit]


def _unwrap(node: Node | None) -> Node | None:
    """The expression inside `(x)`, `x!`, `x satisfies T`, `await x`."""
    while node is not None and node.type in _TRANSPARENT and node.named_children:
        node = node.named_children[0]
    return node


def expression_name(node: Node | None) -> str | None:
    """The dotted text of a name expression (`a`, `this.a.b`, `a?.b`); None for anything computed (`f().g`)."""
    parts: list[str] = []
    node = _unwrap(node)
    while node is not None and node.type == "member_expression":
        prop = node.child_by_field_name("property")
        if prop is None or prop.type not in ("property_identifier", "private_property_identifier"):
            return None
        parts.append(_text(prop))
        node = _unwrap(node.child_by_field_name("object"))
    if node is None or node.type not in ("identifier", "this", "super", "nested_identifier"):
        return None
    parts.append(_text(node))
    return ".".join(reversed(parts))


def _type_name(node: Node | None) -> str:
    """The class a TS type annotation names (`Repo<T>` → Repo, `ns.Dep`, `C | null` → C); "" if none."""
    if node is not None and node.type == "type_annotation":
        node = node.named_children[0] if node.named_children else None
    if node is None:
        return ""
    kind = node.type
    if kind in ("type_identifier", "identifier"):
        return _text(node)
    if kind in ("nested_type_identifier", "nested_identifier", "member_expression"):
        return "".join(_text(node).split())
    if kind == "generic_type":
        return _type_name(node.child_by_field_name("name"))
    if kind == "predefined_type":
        return _PREDEFINED_TYPES.get(_text(node), "")
    if kind in ("array_type", "tuple_type"):
        return "Array"
    if kind == "parenthesized_type" and node.named_children:
        return _type_name(node.named_children[0])
    if kind == "union_type":
        # `Client | null | undefined` is a Client where it is used.
        members = [m for m in _union_members(node) if _text(m) not in _NOTHING_TYPES]
        return _type_name(members[0]) if len(members) == 1 else ""
    return ""


def _return_type(annotation: Node | None) -> str:
    """The class a declared return type names; `Promise<C>` is C, since callers await it."""
    node = annotation.named_children[0] if annotation is not None and annotation.named_children else None
    if node is not None and node.type == "generic_type" and _text(node.child_by_field_name("name")) == "Promise":
        arguments = node.child_by_field_name("type_arguments")
        node = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return _type_name(node)


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


def _pattern_names(node: Node | None) -> list[str]:
    """The local names a binding pattern declares (`{a, b: c, ...d}` → a, c, d)."""
    names: list[str] = []
    pending = [node] if node is not None else []
    while pending:
        current = pending.pop()
        kind = current.type
        if kind in ("identifier", "shorthand_property_identifier_pattern"):
            names.append(_text(current))
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


def _property_name(node: Node | None) -> str:
    """A method or field name as written: `get`, `#secret`, `"quoted"` → quoted, `[Symbol.iterator]`."""
    if node is None:
        return ""
    text = _text(node)
    return text[1:-1] if node.type == "string" and len(text) >= 2 else text


def _jsdoc(node: Node) -> str:
    """The `/** … */` comment right above a definition (or above the statement wrapping it)."""
    anchor = node
    while anchor.parent is not None and anchor.parent.type in _DOC_WRAPPERS:
        anchor = anchor.parent
    previous = anchor.prev_named_sibling
    while previous is not None and previous.type == "decorator":
        previous = previous.prev_named_sibling
    if previous is None or previous.type != "comment":
        return ""
    following = previous.next_named_sibling
    if following is not None and following.start_point[0] - previous.end_point[0] > 1:
        return ""  # a blank line between: the comment is not about this definition
    return _clean_comment(_text(previous))


def _clean_comment(raw: str) -> str:
    if not raw.startswith("/**"):
        return ""
    lines = [line.strip().removeprefix("*").strip() for line in raw[3:].removesuffix("*/").splitlines()]
    return "\n".join(line for line in lines if line).strip()[:500]


def _module_doc(root: Node) -> str:
    """A `/** … */` comment opening the file and separated from what follows by a blank line."""
    first = root.named_children[0] if root.named_children else None
    if first is None or first.type != "comment":
        return ""
    following = first.next_named_sibling
    if following is not None and following.start_point[0] - first.end_point[0] <= 1:
        return ""  # it documents the definition right below it
    return _clean_comment(_text(first))


def _declared(node: Node, depth: int) -> bool:
    """Whether the node's ancestor `depth` levels above its parent is a `declare …` (a signature with no
    implementation to come, unlike an overload's)."""
    ancestor = node.parent
    for _ in range(depth):
        ancestor = ancestor.parent if ancestor is not None else None
    return ancestor is not None and ancestor.type == "ambient_declaration"


def _count_errors(root: Node) -> int:
    """ERROR and MISSING nodes, descending only into subtrees that contain one."""
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


@dataclass(slots=True)
class _Scope:
    qname: str
    kind: str  # "module", "class", "function", or "namespace" (a TS namespace body)
    class_qname: str | None  # the class whose method this is (for `this`)
    typed: dict[str, str] = field(default_factory=dict)  # locals with a declared type, for `this.x = x`


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
    known_files: Collection[str] | None
    module_scope: _Scope
    seen: dict[str, int] = field(default_factory=dict)
    open: list[_Open] = field(default_factory=list)
    # Definitions registered by an enclosing node's handler (`const f = () => …` defines f at the
    # declarator): entered when the sweep reaches them instead of being read again as callbacks.
    pending: dict[int, _Open] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)  # nodes already read by an ancestor (`require(…)`)
    skip_until: int = 0  # end of an ambient `declare …` block: declarations only, nothing to read
    bindings: dict[tuple[str, str], str] = field(default_factory=dict)
    default_exported: bool = False
    commonjs: bool = False

    # -- the sweep ---------------------------------------------------------------------------------------

    def run(self, root: Node, grammar: str) -> None:
        nodes = QueryCursor(_query(grammar)).captures(root).get("node", [])
        nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
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

    def visit(self, node: Node, scope: _Scope) -> None:
        kind = node.type
        if kind in ("call_expression", "new_expression"):
            self.call(node, scope)
        elif kind in ("arrow_function", "function_expression", "generator_function"):
            self.callback(node, scope)
        elif kind == "variable_declarator":
            self.declarator(node, scope)
        elif kind == "assignment_expression":
            self.assignment(node, scope)
        elif kind in ("function_declaration", "generator_function_declaration"):
            self.function(node, scope, _text(node.child_by_field_name("name")), method=False)
        elif kind == "method_definition":
            if scope.kind == "class":
                self.function(node, scope, _property_name(node.child_by_field_name("name")), method=True)
            else:
                self.callback(node, scope)  # a method of an object literal: like any function value
        elif kind in ("field_definition", "public_field_definition"):
            self.class_field(node, scope)
        elif kind == "abstract_method_signature" or (kind == "method_signature" and _declared(node, 2)):
            # Abstract methods, and the methods of a `declare class`, have no body but can be called.
            self.function(node, scope, _property_name(node.child_by_field_name("name")), method=True)
        elif kind == "function_signature" and _declared(node, 0):
            self.function(node, scope, _text(node.child_by_field_name("name")), method=False)
        elif kind in ("class_declaration", "abstract_class_declaration", "class"):
            self.klass(node, scope, None)
        elif kind == "interface_declaration":
            self.interface(node, scope)
        elif kind == "enum_declaration":
            name = _text(node.child_by_field_name("name"))
            self.symbol("class", name, self.qualify(scope.qname, name), node, scope, f"enum {name}")
        elif kind in ("internal_module", "module"):
            self.namespace(node, scope)
        elif kind == "ambient_declaration":
            first = node.named_children[0] if node.named_children else None
            if first is not None and (first.type == "statement_block" or first.type == "module"):
                # `declare global {…}` / `declare module "x" {…}` describe names of other modules.
                self.skip_until = node.end_byte
        elif kind == "import_statement":
            self.import_statement(node, scope)
        elif kind == "export_statement":
            self.export_statement(node, scope)
        elif kind == "decorator":
            self.decorator(node, scope)
        elif kind in ("jsx_opening_element", "jsx_self_closing_element"):
            self.jsx(node, scope)

    # -- definitions -------------------------------------------------------------------------------------

    def qualify(self, parent: str, name: str) -> str:
        qname = f"{parent}.{name}" if parent else name
        count = self.seen.get(qname, 0)
        self.seen[qname] = count + 1
        # A name defined twice in one scope (a getter and its setter, conditional definitions) keeps both.
        return qname if count == 0 else f"{qname}@{count + 1}"

    def symbol(
        self,
        kind: SymbolKind,
        name: str,
        qname: str,
        node: Node,
        scope: _Scope,
        signature: str,
        bases: tuple[str, ...] = (),
        doc_node: Node | None = None,
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
                _jsdoc(doc_node or node),
                _squash(signature),
                bases,
            )
        )

    def function(
        self,
        node: Node,
        scope: _Scope,
        name: str,
        *,
        method: bool,
        owner: _Scope | None = None,
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
        signature = f"{head}{_text(params)}{_text(returns)}"
        self.symbol("method" if method else "function", name, qname, node, parent, signature, doc_node=doc)
        inner = _Scope(qname, "function", parent.qname if method else parent.class_qname)
        returned = _return_type(returns)
        if returned:
            self.bind(qname, RETURNS, returned)  # `make().run()` / `const c = make()` then know c's class
        if params is not None:
            # TS parameter properties (`constructor(private repo: Repo)`) are fields of the class too.
            self.parameters(params, inner, parent.qname if method and name == "constructor" else None)
        body = node.child_by_field_name("body")
        if body is not None:
            self.pending[node.id] = _Open(node.end_byte, body.start_byte, inner, scope)

    def parameters(self, params: Node, scope: _Scope, properties_of: str | None = None) -> None:
        """Bind each parameter in `scope`: to its annotated class, or as a local of unknown type."""
        for param in [params] if params.type == "identifier" else params.named_children:
            if param.type in ("required_parameter", "optional_parameter"):
                pattern = param.child_by_field_name("pattern")
                type_expr = _type_name(param.child_by_field_name("type"))
                if pattern is not None and pattern.type == "identifier":
                    name = _text(pattern)
                    self.bind(scope.qname, name, type_expr)
                    if type_expr:
                        scope.typed[name] = type_expr
                    is_property = any(
                        c.type in ("accessibility_modifier", "readonly", "override_modifier") for c in param.children
                    )
                    if properties_of is not None and is_property:
                        self.bind(properties_of, name, type_expr)
                    continue
                names = _pattern_names(pattern)
            else:
                names = _pattern_names(param)
            for name in names:
                self.bind(scope.qname, name, "")

    def callback(self, node: Node, scope: _Scope) -> None:
        """A function value that is not given a name: its calls belong to the enclosing scope (like a lambda)."""
        params = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        if params is not None:
            self.parameters(params, scope)

    def klass(self, node: Node, scope: _Scope, name: str | None, owner: _Scope | None = None) -> None:
        """A class: its symbol with its bases (`extends`, TS `implements`), and its body as a scope."""
        parent = owner or scope
        name = name or _text(node.child_by_field_name("name")) or f"<anonymous@{node.start_point[0] + 1}>"
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
                base = expression_name(expression) or _type_name(expression)
                if base:
                    bases.append(base)
                    self.ref("inherits", base, scope, expression)
                # A computed base (`extends mixin(A)`) is a call the sweep reads on its own.
        signature = f"class {name} {_text(heritage)}" if heritage is not None else f"class {name}"
        self.symbol("class", name, qname, node, parent, signature, tuple(bases))
        body = node.child_by_field_name("body")
        if body is not None:
            self.pending[node.id] = _Open(node.end_byte, body.start_byte, _Scope(qname, "class", None), scope)

    def class_field(self, node: Node, scope: _Scope) -> None:
        """`handle = () => …` is a method; `session = new Session()` / `repo: Repo` types the field."""
        name = _property_name(node.child_by_field_name("property") or node.child_by_field_name("name"))
        value = _unwrap(node.child_by_field_name("value"))
        if scope.kind != "class" or not name:
            return
        if value is not None and value.type in _FUNCTION_VALUES:
            self.function(value, scope, name, method=True, doc=node)
            return
        type_expr = _type_name(node.child_by_field_name("type")) or self.value_type(value, scope)
        if type_expr:
            self.bind(scope.qname, name, type_expr)

    def interface(self, node: Node, scope: _Scope) -> None:
        """A TS interface, kept as a class: its `extends` are bases, its method signatures methods."""
        name = _text(node.child_by_field_name("name"))
        qname = self.qualify(scope.qname, name)
        bases: list[str] = []
        for clause in node.named_children:
            if clause.type == "extends_type_clause":
                for expression in clause.named_children:
                    base = _type_name(expression)
                    if base:
                        bases.append(base)
                        self.ref("inherits", base, scope, expression)
        self.symbol("class", name, qname, node, scope, f"interface {name}", tuple(bases))
        body = node.child_by_field_name("body")
        inner = _Scope(qname, "class", None)
        for member in body.named_children if body is not None else []:
            if member.type == "method_signature":
                self.function(member, inner, _property_name(member.child_by_field_name("name")), method=True)

    def namespace(self, node: Node, scope: _Scope) -> None:
        """A TS `namespace N { … }`: a container (kept as a class) whose functions are functions."""
        name_node = node.child_by_field_name("name")
        if name_node is None or name_node.type == "string":
            return  # `module "x" { … }` declares an outside module's types
        name = "".join(_text(name_node).split())
        qname = self.qualify(scope.qname, name)
        self.symbol("class", name, qname, node, scope, f"namespace {name}")
        body = node.child_by_field_name("body")
        if body is not None:
            self.pending[node.id] = _Open(node.end_byte, body.start_byte, _Scope(qname, "namespace", None), scope)

    # -- values and bindings -----------------------------------------------------------------------------

    def bind(self, scope: str, name: str, type_expr: str) -> None:
        """Record what a local holds; the first known type wins, and a known type replaces an unknown one."""
        key = (scope, name)
        if not self.bindings.get(key):
            self.bindings[key] = type_expr

    def value_type(self, value: Node | None, scope: _Scope) -> str:
        """The class expression a value is an instance of: `()C` for `new C()` / `C()`, "" when unknown."""
        value = _unwrap(value)
        if value is None:
            return ""
        kind = value.type
        if kind in ("new_expression", "call_expression"):
            callee_field = "constructor" if kind == "new_expression" else "function"
            callee = expression_name(value.child_by_field_name(callee_field))
            return "()" + callee if callee else ""
        if kind == "as_expression" and len(value.named_children) == 2:
            return _type_name(value.named_children[1])
        if kind == "identifier":
            return scope.typed.get(_text(value), "")
        return _LITERAL_TYPES.get(kind, "")

    def declarator(self, node: Node, scope: _Scope) -> None:
        """`const f = () => …` defines f; `const x = require("./m")` imports; `const c = new C()` binds."""
        target = node.child_by_field_name("name")
        value = _unwrap(node.child_by_field_name("value"))
        if target is None:
            return
        if target.type != "identifier":
            if not self.destructured_require(target, value, scope):
                for name in _pattern_names(target):
                    self.bind(scope.qname, name, "")
            return
        name = _text(target)
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
        declared = _type_name(node.child_by_field_name("type"))
        if declared:
            scope.typed[name] = declared
        self.bind(scope.qname, name, declared or self.value_type(value, scope))

    def required(self, value: Node | None) -> tuple[str, str | None] | None:
        """`require("m")` / `await import("m")` → (module, None); `require("m").y` → (module, "y")."""
        value = _unwrap(value)
        member: str | None = None
        if value is not None and value.type == "member_expression":
            prop = value.child_by_field_name("property")
            member = _text(prop) if prop is not None and prop.type == "property_identifier" else None
            value = _unwrap(value.child_by_field_name("object")) if member else None
        if value is None or value.type != "call_expression":
            return None
        function = value.child_by_field_name("function")
        arguments = value.child_by_field_name("arguments")
        if function is None or arguments is None or not (function.type == "import" or _text(function) == "require"):
            return None
        strings = [a for a in arguments.named_children if a.type == "string"]
        if len(arguments.named_children) != 1 or not strings:
            return None
        self.claimed.add(value.id)  # an import, not a call
        return self.specifier(strings[0]), member

    def destructured_require(self, pattern: Node, value: Node | None, scope: _Scope) -> bool:
        """`const {a, b: c} = require("m")` → imports of a and b (as c)."""
        required = self.required(value) if pattern.type == "object_pattern" else None
        if required is None or required[1] is not None:
            return False  # `const {a} = require("m").sub` is not followed further
        module = required[0]
        line = pattern.start_point[0] + 1
        for item in pattern.named_children:
            if item.type == "shorthand_property_identifier_pattern":
                name = _text(item)
                self.facts.imports.append(Import(module, name, name, scope.qname, line))
            elif item.type == "pair_pattern":
                key, local = item.child_by_field_name("key"), item.child_by_field_name("value")
                if key is not None and local is not None and local.type == "identifier":
                    self.facts.imports.append(Import(module, _property_name(key), _text(local), scope.qname, line))
        return True

    def assignment(self, node: Node, scope: _Scope) -> None:
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
            type_expr = self.value_type(right, scope)
            if type_expr:
                self.bind(scope.class_qname, parts[1], type_expr)
        elif len(parts) == 1:
            type_expr = self.value_type(right, scope)
            if type_expr:
                self.bind(scope.qname, target, type_expr)

    # -- imports and exports -----------------------------------------------------------------------------

    def specifier(self, string: Node | None) -> str:
        raw = _text(string)
        return resolve_specifier(self.facts.path, raw[1:-1] if len(raw) >= 2 else raw, self.known_files)

    def self_import(self, name: str | None, alias: str, line: int) -> None:
        """A name this module exports under another name (`export default f`, `exports.g = h`)."""
        module = self.facts.module
        self.facts.imports.append(Import(module, name, alias, module, line))

    def import_statement(self, node: Node, scope: _Scope) -> None:
        source = node.child_by_field_name("source")
        line = node.start_point[0] + 1
        for clause in node.named_children:
            if clause.type == "import_require_clause":  # TS `import fs = require("fs")`
                alias = next((c for c in clause.named_children if c.type == "identifier"), None)
                module = self.specifier(clause.child_by_field_name("source"))
                if alias is not None:
                    self.facts.imports.append(Import(module, None, _text(alias), scope.qname, line))
            if clause.type != "import_clause":
                continue
            module = self.specifier(source)
            for item in clause.named_children:
                if item.type == "identifier":
                    self.facts.imports.append(Import(module, "default", _text(item), scope.qname, line))
                elif item.type == "namespace_import":
                    alias = next((c for c in item.named_children if c.type == "identifier"), None)
                    if alias is not None:
                        self.facts.imports.append(Import(module, None, _text(alias), scope.qname, line))
                elif item.type == "named_imports":
                    for spec in item.named_children:
                        if spec.type != "import_specifier":
                            continue
                        name = _property_name(spec.child_by_field_name("name"))
                        alias = _text(spec.child_by_field_name("alias")) or name
                        self.facts.imports.append(Import(module, name, alias, scope.qname, line))

    def export_statement(self, node: Node, scope: _Scope) -> None:
        line = node.start_point[0] + 1
        source = node.child_by_field_name("source")
        if source is not None:
            # Re-exports: `export {a as b} from "./m"`, `export * as ns from "./m"`, `export * from "./m"`.
            module = self.specifier(source)
            clauses = [c for c in node.named_children if c.type in ("export_clause", "namespace_export")]
            for clause in clauses:
                if clause.type == "namespace_export":
                    alias = _text(clause.named_children[0]) if clause.named_children else ""
                    if alias:
                        self.facts.imports.append(Import(module, None, alias, self.facts.module, line))
                    continue
                for spec in clause.named_children:
                    if spec.type == "export_specifier":
                        name = _property_name(spec.child_by_field_name("name"))
                        alias = _property_name(spec.child_by_field_name("alias")) or name
                        self.facts.imports.append(Import(module, name, alias, self.facts.module, line))
            if not clauses:
                # Several star re-exports coexist: each gets its own alias, which no identifier can spell.
                self.facts.imports.append(Import(module, "*", "*" + module, self.facts.module, line))
            return
        is_default = any(c.type == "default" for c in node.children)
        declaration = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        if declaration is not None:
            if is_default:
                name = _text(declaration.child_by_field_name("name"))
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
                    name = _property_name(spec.child_by_field_name("name"))
                    alias = _property_name(spec.child_by_field_name("alias"))
                    if spec.type == "export_specifier" and alias and alias != name:
                        self.default_exported = self.default_exported or alias == "default"
                        self.self_import(name, alias, line)
            elif clause.type == "identifier":  # TS `export = Foo`
                self.default_exported = True
                self.self_import(_text(clause), "default", line)

    def default_export(self, value: Node, scope: _Scope, statement: Node) -> None:
        """`export default …` / `module.exports = …`: what a default import or a `require` call yields."""
        self.default_exported = True
        line = statement.start_point[0] + 1
        value = _unwrap(value) or value
        own_name = _text(value.child_by_field_name("name")) if value.type in (*_FUNCTION_VALUES, "class") else ""
        if value.type in _FUNCTION_VALUES:
            self.function(value, scope, own_name or "default", method=False, owner=self.module_scope, doc=statement)
        elif value.type == "class":
            self.klass(value, scope, own_name or "default", owner=self.module_scope)
        elif value.type == "identifier":
            self.self_import(_text(value), "default", line)
        elif value.type == "object":
            self.self_import(None, "default", line)  # the object is the module's namespace
            self.exports_object(value, scope)
        if own_name:
            self.self_import(own_name, "default", line)

    def exports_object(self, value: Node, scope: _Scope) -> None:
        """`module.exports = {f, g: h, k() {…}}`: each property a named export."""
        for prop in value.named_children:
            if prop.type == "pair":
                key = _property_name(prop.child_by_field_name("key"))
                if key:
                    self.named_export(key, prop.child_by_field_name("value"), scope, prop)
            elif prop.type == "method_definition":
                name = _property_name(prop.child_by_field_name("name"))
                self.function(prop, scope, name, method=False, owner=self.module_scope)
            # A shorthand `{f}` exports the module's own f (or its import of f): already a member.

    def named_export(self, name: str, value: Node | None, scope: _Scope, statement: Node) -> None:
        """`exports.name = value` (or a property of an exported object)."""
        value = _unwrap(value)
        if value is None:
            return
        line = statement.start_point[0] + 1
        if value.type in _FUNCTION_VALUES:
            self.function(value, scope, name, method=False, owner=self.module_scope, doc=statement)
        elif value.type == "class":
            self.klass(value, scope, name, owner=self.module_scope)
        elif value.type == "identifier" and _text(value) != name:
            self.self_import(_text(value), name, line)
        else:
            required = self.required(value)
            if required is not None:
                self.facts.imports.append(Import(*required, name, self.facts.module, line))

    # -- references --------------------------------------------------------------------------------------

    def ref(self, kind: str, target: str, scope: _Scope, node: Node) -> None:
        line, col = node.start_point
        self.facts.references.append(Reference(kind, target, scope.qname, self.facts.path, line + 1, col))  # type: ignore[arg-type]

    def call(self, node: Node, scope: _Scope) -> None:
        """`f()`, `a.b.c()`, `this.m()`, `super()`, `new C()`; `obj[name]()` has no name and no reference."""
        function = node.child_by_field_name("constructor" if node.type == "new_expression" else "function")
        if function is None or function.type == "import":
            return
        name = expression_name(function)
        if name:
            self.ref("call", name, scope, function)
            return
        function = _unwrap(function)
        if function is not None and function.type == "member_expression":
            method = _text(function.child_by_field_name("property"))
            receiver = _unwrap(function.child_by_field_name("object"))
            literal = _LITERAL_TYPES.get(receiver.type) if receiver is not None else None
            # `[…].map()` is Array's; `make().run()` has a computed receiver: only the method name is known.
            self.ref("call", f"{literal}.{method}" if literal else f"?.{method}", scope, function)

    def decorator(self, node: Node, scope: _Scope) -> None:
        expr = _unwrap(node.named_children[0]) if node.named_children else None
        if expr is None or expr.type == "call_expression":
            return  # `@Injectable()`: the factory call is captured (and recorded) as a call
        name = expression_name(expr)
        if name:
            self.ref("decorates", name, scope, node)

    def jsx(self, node: Node, scope: _Scope) -> None:
        """`<Button />` renders (calls) the component; lower-case tags are HTML elements."""
        name = expression_name(node.child_by_field_name("name"))
        if name and (name[0].isupper() or "." in name):
            self.ref("call", name, scope, node)


def extract_javascript(path: str, source: bytes, known_files: Collection[str] | None = None) -> FileFacts:
    """Symbols, references, imports and bindings of one JS/TS file (path relative to the repository root).

    `known_files` (the repository's files, relative paths, ideally a set) resolves `./x` imports to files
    here; without it the facts depend on this file alone, which incremental indexing wants, and the
    resolver finds folder (`index.*`) and declaration-only modules itself: the graph is the same.
    """
    language, grammar = LANGUAGES.get(posixpath.splitext(path)[1], ("javascript", "javascript"))
    module = module_name(path)
    facts = FileFacts(path, language, module)
    root = _parser(grammar).parse(source).root_node
    facts.parse_errors = _count_errors(root)
    module_scope = _Scope(module, "module", None)
    facts.symbols.append(
        Symbol("module", module.rpartition("/")[2], module, path, 1, 0, root.end_point[0] + 1, None, _module_doc(root))
    )
    walker = _Walker(facts, known_files, module_scope)
    walker.seen[module] = 1
    walker.run(root, grammar)
    return facts
