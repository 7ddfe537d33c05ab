"""JavaScript and TypeScript modules: which files are sources, which file an import specifier names,
and what an ES `import` or `export … from` statement imports.

A module's qualified name is its repository path without the extension (`src/util`); `./util.js` may
name `util.ts` and `./lib` may name `lib/index.ts`, as bundlers and the TypeScript compiler resolve them.
CommonJS (`require`, `module.exports`) is read by the walker, since it defines symbols as it exports them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection

from tree_sitter import Node

from memhub.knowledge.codegraph.facts import Import
from memhub.knowledge.codegraph.javascript_syntax import property_name
from memhub.knowledge.codegraph.syntax import node_text

# Turns the string node of a `from "…"` clause into the module it names (`resolve_specifier` for the file).
SpecifierResolver = Callable[[Node | None], str]

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


def statement_imports(statement: Node, scope: str, specifier: SpecifierResolver) -> list[Import]:
    """The imports an `import …` statement declares in `scope` (default, namespace, named, TS `= require`)."""
    imports: list[Import] = []
    source = statement.child_by_field_name("source")
    line = statement.start_point[0] + 1
    for clause in statement.named_children:
        if clause.type == "import_require_clause":  # TS `import fs = require("fs")`
            alias = next((c for c in clause.named_children if c.type == "identifier"), None)
            module = specifier(clause.child_by_field_name("source"))
            if alias is not None:
                imports.append(Import(module, None, node_text(alias), scope, line))
        if clause.type != "import_clause":
            continue
        module = specifier(source)
        for item in clause.named_children:
            if item.type == "identifier":
                imports.append(Import(module, "default", node_text(item), scope, line))
            elif item.type == "namespace_import":
                alias = next((c for c in item.named_children if c.type == "identifier"), None)
                if alias is not None:
                    imports.append(Import(module, None, node_text(alias), scope, line))
            elif item.type == "named_imports":
                for spec in item.named_children:
                    if spec.type != "import_specifier":
                        continue
                    name = property_name(spec.child_by_field_name("name"))
                    alias = node_text(spec.child_by_field_name("alias")) or name
                    imports.append(Import(module, name, alias, scope, line))
    return imports


def reexport_imports(statement: Node, importer: str, specifier: SpecifierResolver) -> list[Import]:
    """Re-exports as imports of the module `importer`: `export {a as b} from "./m"`, `export * as ns from "./m"`,
    `export * from "./m"`."""
    imports: list[Import] = []
    line = statement.start_point[0] + 1
    module = specifier(statement.child_by_field_name("source"))
    clauses = [c for c in statement.named_children if c.type in ("export_clause", "namespace_export")]
    for clause in clauses:
        if clause.type == "namespace_export":
            alias = node_text(clause.named_children[0]) if clause.named_children else ""
            if alias:
                imports.append(Import(module, None, alias, importer, line))
            continue
        for spec in clause.named_children:
            if spec.type == "export_specifier":
                name = property_name(spec.child_by_field_name("name"))
                alias = property_name(spec.child_by_field_name("alias")) or name
                imports.append(Import(module, name, alias, importer, line))
    if not clauses:
        # Several star re-exports coexist: each gets its own alias, which no identifier can spell.
        imports.append(Import(module, "*", "*" + module, importer, line))
    return imports
