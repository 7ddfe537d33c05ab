"""The records of a code graph: what a parser finds in one file, and the resolved edges between symbols.

Symbols are the definitions (module, class, function, method); references are the uses a call graph
is made of (calls, inheritance, decorators), recorded with the text of the callee expression and the
scope they occur in; imports are the names a file binds to other modules. Resolution
(`memhub.knowledge.codegraph.resolve`) turns references into edges, or into unresolved entries.
One vocabulary for every language; plain data, so the store can keep it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SymbolKind = Literal["module", "class", "function", "method"]
# `implements`: a type declares a trait or interface from outside its own definition (Rust `impl T for X`);
# `reference`: a name used as a value, not called (`key=sort_key`, `Thread(target=run)`, `handlers[x] = on_x`).
RefKind = Literal["call", "inherits", "decorates", "implements", "reference"]
Resolution = Literal["exact", "import", "scope", "receiver", "unique_name"]
EdgeKind = Literal[
    "calls", "instantiates", "inherits", "implements", "overrides", "decorates", "contains", "imports", "references"
]
# What a class is beyond "a type with members"; interface-like flavors make a base an `implements` edge.
INTERFACE_FLAVORS = frozenset({"interface", "trait", "protocol"})


@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition. `qname` is `package.module.Class.method`; `parent` is the enclosing symbol's qname."""

    kind: SymbolKind
    name: str
    qname: str
    file: str
    line: int
    col: int
    end_line: int
    parent: str | None = None
    doc: str = ""
    signature: str = ""
    bases: tuple[str, ...] = ()  # for classes: the base-class expressions as written
    flavor: str = ""  # for classes: interface, trait, protocol, struct, enum, record, union, annotation; "" = class


@dataclass(frozen=True, slots=True)
class Reference:
    """A use of a name inside a scope: `target` is the expression as written (`helper`, `self.save`, `os.path.join`)."""

    kind: RefKind
    target: str
    scope: str
    file: str
    line: int
    col: int


@dataclass(frozen=True, slots=True)
class Import:
    """`import a.b as c` → module "a.b", name None, alias "c"; `from .x import y` → module "pkg.x", name "y"."""

    module: str
    name: str | None
    alias: str
    scope: str
    line: int


@dataclass(frozen=True, slots=True)
class Binding:
    """A local name known to hold an instance of a class expression (`x = Client()`, `x: Client`)."""

    scope: str
    name: str
    type_expr: str


@dataclass(slots=True)
class FileFacts:
    """Everything extracted from one file."""

    path: str
    language: str
    module: str
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    parse_errors: int = 0


@dataclass(frozen=True, slots=True)
class Edge:
    """A resolved relation between two symbols (qualified names), where it is written and how it was found."""

    src: str
    dst: str
    kind: EdgeKind
    file: str
    line: int
    col: int
    resolution: Resolution
    confidence: float


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A reference with several possible targets; none is picked."""

    src: str
    target: str
    kind: str
    file: str
    line: int
    candidates: tuple[str, ...]


Direction = Literal["callers", "callees"]


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One indexed file: its language, content hash, size and how many syntax errors it had."""

    path: str
    language: str
    sha256: str
    size: int
    parse_errors: int


@dataclass(frozen=True, slots=True)
class Reached:
    """A symbol reached by a closure query, how far away, and through which edge."""

    qname: str
    depth: int
    via: str
    kind: str
    file: str
    line: int
    resolution: str
    confidence: float
