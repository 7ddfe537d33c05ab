"""Rust syntax helpers for `rust_facts`: module paths of files, `::` paths, type names, `use` trees.

Everything here reads one node (or one path) and knows nothing of the walk: the walker decides what a
path's `crate` / `super` / `self` / `Self` head means where it is written.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from tree_sitter import Node

from memhub.knowledge.codegraph.syntax import Lineage, node_text

# Files standing for their directory's module: `src/geo/mod.rs` is `src/geo`, `src/lib.rs` is `src`.
_DIRECTORY_FILES = frozenset({"mod", "lib", "main"})
# Pointers that call through to what they hold (`Box<Repo>` has Repo's methods, auto-deref).
_TRANSPARENT = frozenset({"Box", "Rc", "Arc", "Cow"})
# A function's declared result: the value code goes on with after `?` or `.unwrap()` is the first argument.
_WRAPPERS = frozenset({"Result", "Option"})
# Bounds that say nothing about a generic's methods the repository could define (`T: Clone + Shape` is a Shape).
_MARKER_BOUNDS = frozenset(
    {"Clone", "Copy", "Debug", "Default", "Display", "Send", "Sync", "Sized", "Unpin", "PartialEq", "Eq"}
    | {"PartialOrd", "Ord", "Hash"}
)
# Values of a method call that are its receiver's value again (`Repo::open().unwrap()` is what open returns).
UNWRAPPING = frozenset({"unwrap", "expect", "unwrap_or_default", "unwrap_unchecked"})


def module_path(path: str) -> str:
    """The module a file is: its path without `.rs`; `mod.rs`, `lib.rs`, `main.rs` are their directory."""
    stem = posixpath.splitext(path)[0]
    directory, name = posixpath.split(stem)
    return directory if name in _DIRECTORY_FILES and directory else stem


def crate_root(path: str) -> str:
    """The module `crate::` names: the path up to the first `src` directory (Cargo's layout), else the
    file's top directory ("" for a file in the repository root)."""
    parts = path.split("/")[:-1]
    if "src" in parts:
        return "/".join(parts[: parts.index("src") + 1])
    return parts[0] if parts else ""


def path_segments(node: Node | None) -> list[str] | None:
    """A `::` path as written (`crate::geo::area` → crate, geo, area), generics dropped (`Vec::<u8>::new`
    → Vec, new; `<Repo as Store>::save` → Repo, save); None for anything else. Read from the last segment
    back, in a loop: a path may be generated thousands of segments long."""
    names: list[str] = []
    while node is not None:
        kind = node.type
        if kind in ("identifier", "type_identifier", "crate", "self", "super", "primitive_type"):
            names.append(node_text(node))
            return names[::-1]
        if kind in ("scoped_identifier", "scoped_type_identifier"):
            name = node_text(node.child_by_field_name("name"))
            if not name:
                return None
            names.append(name)
            node = node.child_by_field_name("path")
            if node is None:
                return names[::-1]  # `::std::mem` has no path before `::`
        elif kind == "generic_type":
            node = node.child_by_field_name("type")
        elif kind == "bracketed_type":  # `<Repo as Store>::save`: the type's method (its impl of the trait)
            inner = node.named_children[0] if node.named_children else None
            node = inner.child_by_field_name("type") if inner is not None and inner.type == "qualified_type" else inner
        else:
            return None
    return None


def type_segments(node: Node | None, generics: dict[str, list[str]], *, result: bool = False) -> list[str]:
    """The named type a type expression denotes, as path segments ([] when none): `&mut Repo` → Repo,
    `Box<dyn Shape>` → Shape, `impl Shape` → Shape, `T` with `T: Shape` → Shape, `geo::Circle<T>` → geo,
    Circle. With `result`, `Result<T, E>` and `Option<T>` are T (a declared result, used after `?`)."""
    while node is not None:
        kind = node.type
        if kind in ("reference_type", "pointer_type"):
            node = node.child_by_field_name("type")
        elif kind in ("dynamic_type", "abstract_type"):
            node = node.child_by_field_name("trait")
        elif kind == "generic_type":
            segments = path_segments(node.child_by_field_name("type")) or []
            arguments = node.child_by_field_name("type_arguments")
            first = next((a for a in arguments.named_children if a.type != "lifetime"), None) if arguments else None
            name = segments[-1] if segments else ""
            if first is not None and (name in _TRANSPARENT or (result and name in _WRAPPERS)):
                node = first
                continue
            return segments
        elif kind == "type_identifier" and node_text(node) in generics:
            return generics[node_text(node)]
        elif kind == "function_type":
            return []  # `fn(u32) -> u32`, `impl Fn(u32)`: a callable, not a named type
        else:
            return path_segments(node) or []
    return []


def generic_bounds(*owners: Node | None) -> dict[str, list[str]]:
    """Type parameters of a function or impl and the trait each is bound to (`<T: Shape>`, `where T: Shape`),
    so `t.area()` on a `t: &T` is the trait's method, as it is on a `&dyn Shape`."""
    bounds: dict[str, list[str]] = {}
    for owner in owners:
        if owner is None:
            continue
        parameters = owner.child_by_field_name("type_parameters")
        for parameter in parameters.named_children if parameters is not None else []:
            if parameter.type in ("type_parameter", "constrained_type_parameter"):
                name = parameter.child_by_field_name("name") or parameter.child_by_field_name("left")
                _bind_bound(bounds, node_text(name), parameter.child_by_field_name("bounds"))
        where = next((c for c in owner.named_children if c.type == "where_clause"), None)
        for predicate in where.named_children if where is not None else []:
            left = predicate.child_by_field_name("left")
            if left is not None and left.type == "type_identifier":
                _bind_bound(bounds, node_text(left), predicate.child_by_field_name("bounds"))
    return bounds


def _bind_bound(bounds: dict[str, list[str]], name: str, trait_bounds: Node | None) -> None:
    if not name:
        return
    for bound in trait_bounds.named_children if trait_bounds is not None else []:
        segments = type_segments(bound, {})
        if segments and segments[-1] not in _MARKER_BOUNDS:
            bounds.setdefault(name, segments)
            return
    bounds.setdefault(name, [])  # a generic with no useful bound: of unknown type, never another T's


def use_items(node: Node | None, prefix: tuple[str, ...] = ()) -> Iterator[tuple[list[str], str | None, bool]]:
    """The names one `use` tree binds: (path segments, alias or None, whether a glob `*`).
    `use a::{b, c::d as e, f::*}` → (a, b), (a, c, d) as e, (a, f) glob; `{self}` names the prefix itself."""
    if node is None:
        return
    kind = node.type
    if kind == "use_as_clause":
        segments = path_segments(node.child_by_field_name("path"))
        if segments is not None:
            yield _joined(prefix, segments), node_text(node.child_by_field_name("alias")), False
    elif kind == "use_wildcard":
        inner = node.named_children[0] if node.named_children else None
        yield _joined(prefix, path_segments(inner) or []), None, True
    elif kind == "use_list":
        for child in node.named_children:
            yield from use_items(child, prefix)
    elif kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        head = tuple(path_segments(path) or []) if path is not None else ()
        yield from use_items(node.child_by_field_name("list"), (*prefix, *head))
    else:
        segments = path_segments(node)
        if segments is not None:
            yield _joined(prefix, segments), None, False


def _joined(prefix: tuple[str, ...], segments: list[str]) -> list[str]:
    """`a::{self}` is `a`: a trailing `self` inside a list names the list's prefix."""
    joined = [*prefix, *segments]
    return joined[:-1] if len(joined) > 1 and joined[-1] == "self" else joined


def doc_anchor(node: Node, lineage: Lineage) -> Node:
    """The node doc comments sit above: the first of the attributes (`#[derive(…)]`) written before an item."""
    previous = lineage.before(node)
    while previous is not None and previous.type == "attribute_item":
        node = previous
        previous = lineage.before(node)
    return node


def inner_docs(root: Node) -> str:
    """The `//!` comments a file starts with: its module's doc."""
    lines: list[str] = []
    for child in root.children:
        text = node_text(child).strip()
        if child.type != "line_comment" or not text.startswith("//!"):
            break
        lines.append(text.removeprefix("//!").strip())
    return "\n".join(lines).strip()[:500]
