"""References → edges, in tiers, each edge saying how it was resolved and how sure that is.

T1 scope: the name is defined in an enclosing scope (Python's LEGB; class bodies are not enclosing
   scopes for their methods).
T2 import: the name was imported; the import is followed to the module or symbol it names.
T3 receiver: `self` / `cls` / `this` is the enclosing class, walked through its bases (`super` in
   JS/TS: the bases only); a local bound to an instance (`x = Client()`, `x: Client`,
   `self.client = Client()`) is that class, and one bound to an instance of something outside the
   repository (`new Map()`, `[]`, `requests.get()`) is outside too. Calling a function whose return
   type is declared (a binding named `()` in its scope) gives an instance of that type.
T4 unique name: nothing above applied, and exactly one function or method in the repository has the
   called name, and the receiver is not something imported from outside. A bare call of a local
   variable (`callback()`, a parameter) is dynamic: never guessed by name.
Otherwise the reference is unresolved: with several candidates it is listed with them (never one
picked silently); with none it calls outside the repository (a builtin, a library) and is counted.
Calling a class is `instantiates` plus `calls` of its constructor (`__init__`, `constructor`) when the
repository defines one. Imports are followed through re-exports, star re-exports included.

Besides the calls: `contains` from each symbol to the ones defined in it; `imports` from a module to the
repository modules it imports; `inherits` from a class to its bases, `implements` when the base is an
interface, trait or protocol and the class is not (or when a Rust `impl Trait for Type` says so);
`overrides` from a method to the one it hides; `references` from a scope to a class, function or method
it names without calling (an annotation, a callback argument), found by scope and import only: a value
use is never guessed by name.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from memhub.knowledge.codegraph.facts import RETURNS
from memhub.model.graph import INTERFACE_FLAVORS, Edge, EdgeKind, FileFacts, Reference, Resolution, Symbol, Unresolved

CONFIDENCE: dict[str, float] = {"exact": 1.0, "import": 0.95, "scope": 0.9, "receiver": 0.8, "unique_name": 0.5}
CANDIDATES_MAX = 10


@dataclass(frozen=True, slots=True)
class LanguageRules:
    """What the resolver must know per language: names meaning "this object", and globals outside the repo."""

    receivers: frozenset[str]
    builtins: frozenset[str]
    constructor: str = "__init__"
    # JS/TS `super`: the enclosing class's bases without the class itself (Python's `super()` is a call).
    parent_receiver: str | None = None
    # Methods every value of a builtin type has (`s.replace()`, `xs.map()`, `p.then()`): on a receiver of
    # unknown type such a call is as likely the builtin's, so the repository's one method of that name is
    # listed as a candidate, not guessed.
    builtin_methods: frozenset[str] = frozenset()
    # The export a module stands for when used as a value: `module.exports = C` / `export default C`
    # make `require("./m")` callable and constructible as C.
    default_export: str | None = None
    # Whether a constructor hides its base's (Python's `__init__` does; Java constructors are not inherited).
    constructors_override: bool = True
    # Go imports name a full path (`example.com/app/pkg/store`) whose repository directory (`pkg/store`)
    # only go.mod knows: such imports are matched by path suffix against this language's packages.
    imports_by_path_suffix: bool = False
    # The receiver that is the class itself, so calling it constructs one (Python's `cls` in a classmethod).
    class_receiver: str | None = None
    # Whether `import *` binds the names in the importing scope (Python, Java, Rust); JS/TS `export * from`
    # only re-exports them.
    star_import_binds: bool = True


_JS_GLOBALS = frozenset(
    [
        "console",
        "Math",
        "JSON",
        "Object",
        "Array",
        "String",
        "Number",
        "Boolean",
        "Promise",
        "Date",
        "RegExp",
        "Error",
        "Map",
        "Set",
        "WeakMap",
        "Symbol",
        "parseInt",
        "parseFloat",
        "isNaN",
        "setTimeout",
        "clearTimeout",
        "setInterval",
        "clearInterval",
        "require",
        "module",
        "exports",
        "process",
        "window",
        "document",
        "globalThis",
        "fetch",
        "Buffer",
        "structuredClone",
        "queueMicrotask",
    ]
)
_JS_BUILTIN_METHODS = frozenset(
    name
    for group in (
        "toString toLocaleString valueOf hasOwnProperty isPrototypeOf call apply bind",  # Object, Function
        "then catch finally",  # Promise
        "at charAt charCodeAt concat endsWith includes indexOf lastIndexOf localeCompare match matchAll",  # String
        "normalize padEnd padStart repeat replace replaceAll search slice split startsWith substring substr",
        "toLowerCase toUpperCase trim trimStart trimEnd",
        "entries every fill filter find findIndex findLast flat flatMap forEach join keys map pop push",  # Array
        "reduce reduceRight reverse shift some sort splice unshift values",
        "get set has delete clear add exec test",  # Map, Set, RegExp
        "getTime toISOString toJSON toFixed toPrecision",  # Date, Number
        "on once off emit addListener removeListener removeAllListeners pipe write end destroy",  # Node events
        "addEventListener removeEventListener querySelector querySelectorAll appendChild setAttribute",  # DOM
        "getAttribute preventDefault stopPropagation",
    )
    for name in group.split()
)
_JS_RULES = LanguageRules(
    frozenset({"this"}),
    _JS_GLOBALS,
    constructor="constructor",
    parent_receiver="super",
    builtin_methods=_JS_BUILTIN_METHODS,
    default_export="default",
    star_import_binds=False,
)


def _words(*groups: str) -> frozenset[str]:
    """Names written as space-separated groups (long lists stay readable)."""
    return frozenset(name for group in groups for name in group.split())


# java.lang (imported implicitly) and the JDK types code names most; anything else from the JDK is imported.
_JAVA_GLOBALS = _words(
    "Object String StringBuilder StringBuffer System Math Integer Long Short Byte Double Float Boolean",
    "Character Number Thread Runnable Iterable Comparable CharSequence Class Enum Record Void Objects",
    "Exception RuntimeException Error Throwable IllegalArgumentException IllegalStateException",
    "NullPointerException UnsupportedOperationException IndexOutOfBoundsException ArithmeticException",
    "ClassCastException InterruptedException AutoCloseable Override Deprecated FunctionalInterface",
)
_JAVA_BUILTIN_METHODS = _words(
    "equals hashCode toString getClass compareTo length isEmpty isBlank charAt substring trim strip",
    "toUpperCase toLowerCase startsWith endsWith contains indexOf split replace format valueOf",
    "add addAll get put putIfAbsent remove size clear stream map filter collect forEach iterator",
    "hasNext next orElse orElseThrow ifPresent of append close run call apply accept test",
)
# Methods of list, dict, set, str, bytes and files: on a receiver of unknown type such a call is as likely
# the builtin's, so a repository method of the same name is a candidate, not a guess.
_PYTHON_BUILTIN_METHODS = _words(
    "append extend insert pop remove clear copy count index sort reverse",  # list
    "get items keys values update setdefault popitem fromkeys",  # dict
    "add discard union intersection difference issubset issuperset",  # set
    "join split rsplit splitlines strip lstrip rstrip replace format startswith endswith lower upper title",
    "find rfind encode decode partition rpartition isdigit isalpha isspace zfill ljust rjust center",  # str
    "read readline readlines write writelines close flush seek tell",  # files
)
RULES: dict[str, LanguageRules] = {
    "python": LanguageRules(
        frozenset({"self", "cls"}),
        frozenset(dir(builtins)),
        parent_receiver="super",  # `super().m()` is written `super.m` by the extractor
        class_receiver="cls",
        builtin_methods=_PYTHON_BUILTIN_METHODS,
    ),
    "javascript": _JS_RULES,
    "typescript": _JS_RULES,
    "java": LanguageRules(
        frozenset({"this"}),
        _JAVA_GLOBALS,
        constructor="<init>",
        parent_receiver="super",
        builtin_methods=_JAVA_BUILTIN_METHODS,
        constructors_override=False,
    ),
    "go": LanguageRules(
        frozenset(),  # a method's receiver is named per method: a binding to its type, not a keyword
        _words(
            "append cap clear close complex copy delete imag len make max min new panic print println real recover",
            "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string",
            "uint uint8 uint16 uint32 uint64 uintptr any comparable true false nil iota",
        ),
        constructor="",  # Go has no constructors: a composite literal `T{}` is not a call
        builtin_methods=_words("Error String Close Read Write Len Less Swap Lock Unlock Wait Done Err Value"),
        imports_by_path_suffix=True,
    ),
    "rust": LanguageRules(
        frozenset({"self"}),
        _words(  # the prelude, the primitive types and the standard crates a path may start with
            "Some None Ok Err Box Vec String Option Result ToString ToOwned Clone Copy Default Drop Send Sync",
            "Sized Iterator IntoIterator Extend From Into TryFrom TryInto AsRef AsMut PartialEq Eq PartialOrd Ord",
            "Fn FnMut FnOnce drop bool char str u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64",
            "std core alloc",
        ),
        constructor="",  # Rust has no constructors: `new` is an ordinary associated function, `T { … }` no call
        builtin_methods=_words(
            "clone to_string to_owned into from as_ref as_mut borrow borrow_mut default eq cmp partial_cmp hash fmt",
            "unwrap expect unwrap_or unwrap_or_else unwrap_or_default ok err ok_or map map_err and_then or_else",
            "is_some is_none is_ok is_err iter iter_mut into_iter next collect filter fold for_each count sum min max",
            "find any all rev zip enumerate chain take skip len is_empty push pop get get_mut insert remove contains",
            "clear extend entry keys values sort sort_by retain drain first last as_str as_bytes trim split join",
            "lines chars parse push_str starts_with ends_with replace lock read write send recv flush close",
        ),
    ),
}


@dataclass(slots=True)
class Graph:
    """Symbols by qualified name, edges, unresolved references and how many calls left the repository."""

    symbols: dict[str, Symbol] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    external_by_file: dict[str, int] = field(default_factory=dict)

    @property
    def external(self) -> int:
        """Calls that left the repository (builtins, libraries), counted, not listed."""
        return sum(self.external_by_file.values())

    def count_external(self, file: str) -> None:
        self.external_by_file[file] = self.external_by_file.get(file, 0) + 1


@dataclass(frozen=True, slots=True)
class _Entity:
    """What an expression denotes: a symbol, an instance of a class, the bases of a class (`super`), or
    something outside the repository."""

    kind: Literal["symbol", "instance", "parent", "external"]
    qname: str
    resolution: Resolution


class _Resolver:
    def __init__(self, files: Iterable[FileFacts]) -> None:
        self.files = list(files)
        self.graph = Graph()
        self.members: dict[str, dict[str, str]] = defaultdict(dict)
        self.imports: dict[str, dict[str, tuple[str, str | None]]] = defaultdict(dict)
        self.star_imports: dict[str, list[str]] = defaultdict(list)
        self.types: dict[str, dict[str, str]] = defaultdict(dict)
        # Functions and methods by their simple name, for the unique-name tier.
        self.callables_by_name: dict[str, list[str]] = defaultdict(list)
        self.languages: dict[str, str] = {}
        # Interfaces a type implements outside its definition (Rust `impl Trait for Type`): more bases.
        self.implemented: dict[str, list[Reference]] = defaultdict(list)
        # Modules that imports may name by a longer path ending in theirs (Go packages).
        self.suffix_modules: set[str] = set()
        for facts in self.files:
            self.languages[facts.path] = facts.language
            if RULES.get(facts.language, RULES["python"]).imports_by_path_suffix:
                self.suffix_modules.add(facts.module)
            for symbol in facts.symbols:
                self.graph.symbols.setdefault(symbol.qname, symbol)
                if symbol.parent is not None:
                    self.members[symbol.parent].setdefault(symbol.name, symbol.qname)
                if symbol.kind in ("function", "method"):
                    self.callables_by_name[symbol.name].append(symbol.qname)
            for imp in facts.imports:
                self.imports[imp.scope][imp.alias] = (imp.module, imp.name)
                if imp.name == "*" and RULES.get(facts.language, RULES["python"]).star_import_binds:
                    self.star_imports[imp.scope].append(imp.module)
            for binding in facts.bindings:
                # The first known type wins; a local of unknown type (a loop variable) takes a later one.
                if not self.types[binding.scope].get(binding.name):
                    self.types[binding.scope][binding.name] = binding.type_expr
            for ref in facts.references:
                if ref.kind == "implements":
                    self.implemented[ref.scope].append(ref)
        # Every name an expression can end on and denote a symbol: definitions' names and import aliases.
        self.value_names = {symbol.name for symbol in self.graph.symbols.values()}
        self.value_names.update(alias for aliases in self.imports.values() for alias in aliases)
        self._mro: dict[str, list[str]] = {}
        self._typing: set[tuple[str, str]] = set()
        # Pure functions of the symbol table, asked hundreds of thousands of times on a large repository.
        self._chains: dict[str, list[str]] = {}
        self._rules: dict[str, LanguageRules] = {}
        # (owner, name) lookups being followed through imports: re-export cycles in broken code end here.
        self._following: set[tuple[str, str]] = set()

    # -- scopes ------------------------------------------------------------------------------------------

    def chain(self, scope: str) -> list[str]:
        """Scopes to search for a bare name: the scope, enclosing functions, then the module (not classes)."""
        known = self._chains.get(scope)
        if known is not None:
            return known
        out = self._chains[scope] = [scope]
        symbol = self.graph.symbols.get(scope)
        while symbol is not None and symbol.parent is not None:
            parent = self.graph.symbols.get(symbol.parent)
            if parent is not None and parent.kind != "class":
                out.append(parent.qname)
            symbol = parent
        return out

    def enclosing_class(self, scope: str) -> str | None:
        symbol = self.graph.symbols.get(scope)
        while symbol is not None:
            if symbol.kind == "method":
                return symbol.parent
            symbol = self.graph.symbols.get(symbol.parent) if symbol.parent else None
        return None

    # -- names -------------------------------------------------------------------------------------------

    def module_named(self, module: str) -> str:
        """The module an import names: JS/TS `./lib` is `lib/index.ts` when no `lib.ts` exists, and a module
        with only type declarations is its `.d.ts`. Decided here, not by the parser, so a file's facts do not
        depend on which other files exist (an unchanged importer stays right when `lib.ts` becomes a folder)."""
        if module in self.graph.symbols:
            return module  # the common case, answered before spelling out the alternatives
        for candidate in _spellings(module):
            if candidate in self.graph.symbols:
                return candidate
        if self.suffix_modules:
            for suffix in _path_suffixes(module):
                if suffix in self.suffix_modules:
                    return suffix
        return module

    def module_or_symbol(self, dotted: str, name: str | None) -> str | None:
        """The repository symbol an import names (`from m import f` → `m.f`; `import m` → `m`)."""
        dotted = self.module_named(dotted)
        full = f"{dotted}.{name}" if name and name != "*" else dotted
        if full in self.graph.symbols:
            return full
        if name and dotted in self.graph.symbols:
            # `from pkg import name` where `name` is re-exported by pkg/__init__.py.
            return self.member(dotted, name)
        return None

    def member(self, owner: str, name: str) -> str | None:
        """`name` defined in `owner`, through the bases when the owner is a class; follows re-exports."""
        for klass in (
            self.mro(owner)
            if self.graph.symbols.get(owner, None) and self.graph.symbols[owner].kind == "class"
            else [owner]
        ):
            found = self.members.get(klass, {}).get(name)
            if found:
                return found
        if (owner, name) in self._following:
            return None
        self._following.add((owner, name))
        try:
            imported = self.imports.get(owner, {}).get(name)
            if imported is not None:
                return self.module_or_symbol(*imported)
            # `export * from "./x"` / `from x import *`: a name not defined here may come from a star import.
            for module, star in list(self.imports.get(owner, {}).values()):
                if star == "*" and self.module_named(module) in self.graph.symbols:
                    found = self.member(self.module_named(module), name)
                    if found:
                        return found
            return None
        finally:
            self._following.discard((owner, name))

    def inherited(self, klass: str, name: str) -> str | None:
        """`name` as the bases of `klass` define it, skipping the class itself (`super.name`)."""
        for base in self.mro(klass)[1:]:
            found = self.members.get(base, {}).get(name)
            if found:
                return found
        return None

    def exported(self, qname: str) -> str:
        """A module used as a value stands for its default export where the language has one (else itself)."""
        symbol = self.graph.symbols.get(qname)
        default = self.rules(qname).default_export if symbol is not None and symbol.kind == "module" else None
        return (self.member(qname, default) or qname) if default else qname

    def mro(self, klass: str) -> list[str]:
        """The class and its repository bases, depth-first left to right without repeats (C3 for simple trees)."""
        if klass in self._mro:
            return self._mro[klass]
        self._mro[klass] = [klass]  # guards against inheritance cycles in broken code
        order = [klass]
        symbol = self.graph.symbols.get(klass)
        if symbol is not None:
            scope = symbol.parent or klass
            written = [(base, scope) for base in symbol.bases]
            for base, where in [*written, *((ref.target, ref.scope) for ref in self.implemented.get(klass, ()))]:
                entity = self.entity(base, where)
                if entity is not None and entity.kind == "symbol":
                    for item in self.mro(entity.qname):
                        if item not in order:
                            order.append(item)
        self._mro[klass] = order
        return order

    def rules(self, scope: str) -> LanguageRules:
        known = self._rules.get(scope)
        if known is None:
            symbol = self.graph.symbols.get(scope)
            language = self.languages.get(symbol.file, "python") if symbol is not None else "python"
            known = self._rules[scope] = RULES.get(language, RULES["python"])
        return known

    def head(self, name: str, scope: str) -> _Entity | None:
        rules = self.rules(scope)
        if name in rules.receivers or name == rules.parent_receiver:
            klass = self.enclosing_class(scope)
            if klass is not None:
                return _Entity("instance" if name in rules.receivers else "parent", klass, "receiver")
        members, imports, types = self.members, self.imports, self.types
        for s in self.chain(scope):
            # `in` first: these are defaultdicts, and a lookup must not add an empty entry per scope asked.
            if s in members and name in members[s]:
                return _Entity("symbol", members[s][name], "scope")
            if s in imports and name in imports[s]:
                module, imported = imports[s][name]
                found = self.module_or_symbol(module, imported)
                return (
                    _Entity("symbol", found, "import")
                    if found
                    else _Entity("external", f"{module}.{imported or ''}", "import")
                )
            if s in types and name in types[s]:
                return self.instance_of(types[s][name], s)
        for s in self.chain(scope):
            # `from m import *`, Java's `import p.*`: weaker than any name bound explicitly, so asked last.
            for module in self.star_imports.get(s, ()):
                found = self.member(self.module_named(module), name)
                if found is not None:
                    return _Entity("symbol", found, "import")
        if name in rules.builtins:
            return _Entity("external", f"builtins.{name}", "exact")
        return None

    def instance_of(self, type_expr: str, scope: str) -> _Entity | None:
        """An instance of the class a binding names (`()C` = the result of calling C); None when unknown.

        An empty type is a local of unknown type (an untyped parameter); an instance of something outside
        the repository is outside too, so its methods (`cache.get()` on a `Map`) are not guessed by name.
        """
        if not type_expr.removeprefix("()"):
            return None
        key = (type_expr, scope)
        if key in self._typing:
            return None  # `x = x()` or bindings naming each other: no type, rather than endless recursion
        self._typing.add(key)
        try:
            entity = self.entity(type_expr.removeprefix("()"), scope)
        finally:
            self._typing.discard(key)
        if entity is not None and entity.kind == "external":
            return entity
        if entity is None or entity.kind != "symbol":
            return None
        klass = self.exported(entity.qname)
        if self.graph.symbols[klass].kind in ("function", "method") and type_expr.startswith("()"):
            # `const s = createService()` with `createService(): UserService` declared.
            returned = self.types.get(klass, {}).get(RETURNS)
            return self.instance_of(returned, klass) if returned else None
        if self.graph.symbols[klass].kind != "class":
            return None  # calling a function gives a value of unknown type
        return _Entity("instance", klass, "receiver")

    def entity(self, dotted: str, scope: str) -> _Entity | None:
        """What a dotted expression denotes, attribute by attribute."""
        parts = dotted.split(".")
        current = self.head(parts[0], scope)
        for attr in parts[1:]:
            if current is None or current.kind == "external":
                return current
            owner = current.qname
            if current.kind == "parent":
                found = self.inherited(owner, attr)
                if found is None:
                    return _Entity("external", f"super.{attr}", "receiver")  # from a base outside the repository
                current = _Entity("symbol", found, "receiver")
                continue
            found = self.member(owner, attr)
            if found is None and current.kind == "symbol" and self.exported(owner) != owner:
                found = self.member(self.exported(owner), attr)  # `require("./logger").create()`: a static method
            if current.kind == "instance" and found is None:
                # An attribute holding an instance: `self.client = Client()` recorded on the class.
                for klass in self.mro(owner):
                    if attr in self.types.get(klass, {}):
                        current = self.instance_of(self.types[klass][attr], klass)
                        break
                else:
                    return None
                continue
            if found is None:
                return None
            resolution: Resolution = "receiver" if current.kind == "instance" else current.resolution
            current = _Entity("symbol", found, resolution)
        return current

    # -- references --------------------------------------------------------------------------------------

    def add(self, ref: Reference, dst: str, kind: EdgeKind, resolution: Resolution) -> None:
        self.graph.edges.append(
            Edge(ref.scope, dst, kind, ref.file, ref.line, ref.col, resolution, CONFIDENCE[resolution])
        )

    def reference(self, ref: Reference, seen: set[tuple[str, str]]) -> None:
        """A name used as a value: an edge only when scope or imports say what it is (no name guessing);
        one per (scope, symbol), at the first use."""
        if ref.target.rpartition(".")[2] not in self.value_names:
            return  # most arguments are locals: no definition or import anywhere has that name
        target = self.entity(ref.target, ref.scope)
        if target is None or target.kind != "symbol":
            return
        dst = self.exported(target.qname)
        scope = self.graph.symbols.get(ref.scope)
        # A method naming its own class (a Go receiver, `equals(Point other)`) says nothing `contains` does not.
        own = dst == ref.scope or (scope is not None and dst == scope.parent)
        if self.graph.symbols[dst].kind == "module" or (ref.scope, dst) in seen or own:
            return
        seen.add((ref.scope, dst))
        self.add(ref, dst, "references", target.resolution)

    def implements(self, ref: Reference) -> None:
        target = self.entity(ref.target, ref.scope)
        if target is not None and target.kind == "symbol" and ref.scope in self.graph.symbols:
            self.add(ref, target.qname, "implements", target.resolution)

    def call(self, ref: Reference) -> None:
        target = None if ref.target.startswith("?.") else self.entity(ref.target, ref.scope)
        if target is not None and target.kind == "external":
            self.graph.count_external(ref.file)
            return
        if target is not None and target.kind == "parent":
            # `super(...)`: the nearest base constructor; none in the repository means an implicit or outside one.
            base_init = self.inherited(target.qname, self.rules(target.qname).constructor)
            if base_init is not None:
                self.add(ref, base_init, "calls", "receiver")
            else:
                self.graph.count_external(ref.file)
            return
        if target is not None and target.kind == "instance" and ref.target == self.rules(ref.scope).class_receiver:
            # `cls(...)` constructs the class (or a subclass: the class is the static answer, as for any
            # call through `self`).
            target = _Entity("symbol", target.qname, "receiver")
        if target is not None and target.kind == "symbol":
            symbol = self.graph.symbols[self.exported(target.qname)]
            if symbol.kind == "class":
                self.add(ref, symbol.qname, "instantiates", target.resolution)
                init = self.member(symbol.qname, self.rules(symbol.qname).constructor)
                if init is not None:
                    self.add(ref, init, "calls", target.resolution)
            elif symbol.kind in ("function", "method"):
                self.add(ref, symbol.qname, "decorates" if ref.kind == "decorates" else "calls", target.resolution)
            return
        self.fallback(ref)

    def fallback(self, ref: Reference) -> None:
        """T4: a unique function or method of that name, unless the receiver is imported from outside."""
        name = ref.target.rpartition(".")[2]
        head = ref.target.split(".")[0]
        if "." not in ref.target and self.is_local(head, ref.scope):
            return  # calling a variable's value (a parameter, a callback): dynamic, not the function of that name
        if head != "?" and "." in ref.target:
            entity = self.head(head, ref.scope)
            if entity is not None and entity.kind == "external":
                self.graph.count_external(ref.file)
                return
        candidates = self.callables_by_name.get(name, [])
        builtin_like = "." in ref.target and name in self.rules(ref.scope).builtin_methods
        if len(candidates) == 1 and not builtin_like:
            self.add(ref, candidates[0], "calls", "unique_name")
        elif candidates:
            self.graph.unresolved.append(
                Unresolved(ref.scope, ref.target, ref.kind, ref.file, ref.line, tuple(candidates[:CANDIDATES_MAX]))
            )
        else:
            self.graph.count_external(ref.file)

    def is_local(self, name: str, scope: str) -> bool:
        """Whether a bare name is a local variable (a binding) where it is looked up."""
        for s in self.chain(scope):
            if name in self.members.get(s, {}) or name in self.imports.get(s, {}):
                return False
            if name in self.types.get(s, {}):
                return True
        return False

    def inheritance(self, only: set[str] | None = None) -> None:
        """`inherits` from each class to its repository bases; `overrides` from a method to the one it hides."""
        for symbol in list(self.graph.symbols.values()):
            if only is not None and symbol.file not in only:
                continue
            rules = self.rules(symbol.qname)
            overridable = rules.constructors_override or symbol.name != rules.constructor
            if symbol.kind == "method" and symbol.parent is not None and overridable:
                for klass in self.mro(symbol.parent)[1:]:
                    hidden = self.members.get(klass, {}).get(symbol.name)
                    if hidden is not None:
                        self.graph.edges.append(
                            Edge(
                                symbol.qname,
                                hidden,
                                "overrides",
                                symbol.file,
                                symbol.line,
                                symbol.col,
                                "scope",
                                CONFIDENCE["scope"],
                            )
                        )
                        break
            for base in symbol.bases:
                entity = self.entity(base, symbol.parent or symbol.qname)
                if entity is not None and entity.kind == "symbol":
                    interface = self.graph.symbols[entity.qname].flavor in INTERFACE_FLAVORS
                    self.graph.edges.append(
                        Edge(
                            symbol.qname,
                            entity.qname,
                            "implements" if interface and symbol.flavor not in INTERFACE_FLAVORS else "inherits",
                            symbol.file,
                            symbol.line,
                            symbol.col,
                            entity.resolution,
                            CONFIDENCE[entity.resolution],
                        )
                    )

    def run(self, only: set[str] | None = None) -> Graph:
        """Resolve the references of every file, or only of the files in `only` (all symbols are known)."""
        for facts in self.files:
            if only is not None and facts.path not in only:
                continue
            referenced: set[tuple[str, str]] = set()
            for ref in facts.references:
                if ref.kind in ("call", "decorates"):
                    self.call(ref)
                elif ref.kind == "reference":
                    self.reference(ref, referenced)
                elif ref.kind == "implements":
                    self.implements(ref)
            self.structure(facts)
        self.inheritance(only)
        return self.graph

    def structure(self, facts: FileFacts) -> None:
        """`contains` from each enclosing symbol to the file's definitions, `imports` from the file's module
        to each repository module it imports (once per module)."""
        symbols = self.graph.symbols
        for symbol in facts.symbols:
            if symbol.parent is not None and symbol.parent in symbols:
                self.graph.edges.append(
                    Edge(symbol.parent, symbol.qname, "contains", symbol.file, symbol.line, symbol.col, "exact", 1.0)
                )
        imported: set[str] = set()
        for imp in facts.imports:
            found = self.module_or_symbol(imp.module, imp.name)
            if found is None or symbols[found].kind != "module":
                found = self.module_named(imp.module)  # `from m import f`: the module m
            if found in symbols and symbols[found].kind == "module" and found not in imported | {facts.module}:
                imported.add(found)
                self.graph.edges.append(
                    Edge(facts.module, found, "imports", facts.path, imp.line, 0, "import", CONFIDENCE["import"])
                )

    def affected_files(self, changed: set[str], before: Iterable[FileFacts]) -> set[str]:
        """Files whose resolution may differ after `changed` files changed (`before`: their old facts).

        Generous by design: every file with a reference, base class or import naming anything the changed
        files define, bind or import (before or after), and every file with a class whose bases run through
        a changed file. The property test (incremental == clean rebuild) holds this to account.
        """
        names: set[str] = set()
        modules: set[str] = set()
        touched = [*before, *(f for f in self.files if f.path in changed)]
        for facts in touched:
            modules.add(facts.module)
            names.update(facts.module.replace("/", ".").split("."))
            for symbol in facts.symbols:
                names.add(symbol.name)
                for base in symbol.bases:
                    names.update(base.split("."))
            names.update(imp.alias for imp in facts.imports)
            names.update(binding.name for binding in facts.bindings)
        affected = set(changed)
        affected.update(f.path for f in self.files if f.path not in affected and _mentions(f, names, modules))
        # Classes inheriting, at any depth, from a class defined in a changed file.
        changed_classes = {q for q, s in self.graph.symbols.items() if s.kind == "class" and s.file in changed}
        for symbol in self.graph.symbols.values():
            inherits = symbol.kind == "class" and symbol.bases and symbol.file not in affected
            if inherits and changed_classes.intersection(self.mro(symbol.qname)[1:]):
                affected.add(symbol.file)
        return affected


def resolve(files: Iterable[FileFacts]) -> Graph:
    """Resolve the references of all files of one repository against each other."""
    return _Resolver(files).run()


def _spellings(module: str) -> tuple[str, ...]:
    """The modules an import of `module` names, in the order `module_named` tries them: JS/TS `./lib` is
    `lib.ts`, else `lib/index.ts`, else a declaration file. Python modules are dotted: only themselves."""
    if "/" not in module:
        return (module,)
    return (module, f"{module}/index", f"{module}.d", f"{module}/index.d")


def _path_suffixes(module: str) -> list[str]:
    """A Go import path's repository directories, the longest first: `app/pkg/store`, then `pkg/store`."""
    parts = module.split("/")
    return ["/".join(parts[start:]) for start in range(1, len(parts))]


def _may_import(module: str, modules: set[str]) -> bool:
    """Whether an import of `module` can name one of `modules`, whichever files exist. Which spelling wins
    depends on the files present (deleting `lib/index.ts` turns `./lib` into an outside module), so every
    spelling counts: comparing the written name alone misses the importers of a folder's index or a Go
    package, and their stale edges to the changed module would survive an incremental index."""
    return any(m in modules for m in _spellings(module)) or any(s in modules for s in _path_suffixes(module))


def _mentions(facts: FileFacts, names: set[str], modules: set[str]) -> bool:
    """Whether a file refers to any of these names (in a call, an import or a base class) or modules."""
    if any(names.intersection(ref.target.split(".")) for ref in facts.references):
        return True
    if any(imp.name in names or _may_import(imp.module, modules) for imp in facts.imports):
        return True
    for symbol in facts.symbols:
        # A method whose type is defined in another file (Go, Rust) is contained by it.
        if symbol.parent is not None and symbol.parent.rpartition(".")[2] in names:
            return True
        if any(names.intersection(base.split(".")) for base in symbol.bases):
            return True
    return False


def resolve_changes(
    files: Iterable[FileFacts], changed: set[str], before: Iterable[FileFacts]
) -> tuple[Graph, set[str]]:
    """Resolve only what a change can affect: (graph whose edges and unresolved cover the affected files,
    the affected files). `files` is every file's current facts, `before` the old facts of changed files."""
    resolver = _Resolver(files)
    affected = resolver.affected_files(changed, before)
    return resolver.run(affected), affected
