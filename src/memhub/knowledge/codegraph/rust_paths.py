"""What the `::` paths of one Rust file name: `use` trees as imports, paths in code as dotted names.

`crate::` is the crate's source root, `super::` the parent module, `self::` this module, `Self` the
enclosing impl's or trait's type. A `use` path is turned into the module and name it imports; a path
in an expression or a type stays a dotted name the resolver follows from the enclosing scope, with
`crate` and `super` imported into the module under those names (keywords: never a user's name).
A path starting with anything else than a keyword, a module the file declares (`mod geo;`) or a name a
`use` of the module brought names another crate (`std::fmt`): its module keeps the `::`, so it never
names a repository module and the resolver counts it external.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from tree_sitter import Node

from memhub.knowledge.codegraph.facts import FileFacts, Import
from memhub.knowledge.codegraph.rust_syntax import use_items
from memhub.knowledge.codegraph.syntax import Lineage, node_text

# (module, name or None, whether the module is in the repository)
UseTarget = tuple[str, str | None, bool]


@dataclass(slots=True)
class CratePaths:
    facts: FileFacts
    crate: str  # the module `crate::` names
    lineage: Lineage
    # Per module (inline ones included): the child modules it declares and the repository names it `use`s,
    # read before the sweep (a `use` or `mod` may follow the code relying on it).
    mods: dict[str, set[str]] = field(default_factory=dict)
    uses: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    imported: set[tuple[str, str]] = field(default_factory=set)  # (scope, alias) of the imports added here
    inside: dict[int, str] = field(default_factory=dict)  # node id → the module code inside it is written in

    def module_of(self, node: Node) -> str:
        """The module a node is written in: the file's, or an inline `mod` block's inside it. Each ancestor's
        module is remembered, so the modules of a file's nodes cost one walk over their ancestors."""
        passed: list[Node] = []
        parent = self.lineage.parent_of(node)
        while parent is not None and parent.id not in self.inside:
            passed.append(parent)
            parent = self.lineage.parent_of(parent)
        module = self.inside[parent.id] if parent is not None else self.facts.module
        for ancestor in reversed(passed):
            if ancestor.type == "mod_item":
                module = f"{module}/{node_text(ancestor.child_by_field_name('name'))}"
            self.inside[ancestor.id] = module
        return module

    def _in_block(self, node: Node) -> bool:
        """Whether the node is written in a block (a function body): not at module level."""
        parent = self.lineage.parent_of(node)
        return parent is None or parent.type == "block"

    def prepare(self, nodes: list[Node]) -> None:
        """Learn the file's `mod` declarations and module-level `use`s."""
        for node in nodes:
            if node.type == "mod_item":
                self.mods.setdefault(self.module_of(node), set()).add(node_text(node.child_by_field_name("name")))
        declarations = [n for n in nodes if n.type == "use_declaration" and not self._in_block(n)]
        for _ in range(2):  # twice: a `use` may start from a name another `use` of the module brings
            for node in declarations:
                module = self.module_of(node)
                for segments, alias, glob in use_items(node.child_by_field_name("argument")):
                    target = self.use_target(segments, module)
                    if target is not None and not glob and target[1] is not None and target[2]:
                        self.uses.setdefault(module, {})[alias or segments[-1]] = (target[0], target[1])

    def ancestor(self, module: str, levels: int) -> str | None:
        """The module `super::` (repeated `levels` times) names; None above the crate's root."""
        for _ in range(levels):
            if module == self.crate or "/" not in module:
                return None
            module = posixpath.dirname(module)
        return module

    def import_once(self, scope: str, module: str, name: str | None, alias: str, line: int) -> None:
        if (scope, alias) not in self.imported:
            self.imported.add((scope, alias))
            self.facts.imports.append(Import(module, name, alias, scope, line))

    def dotted(self, segments: list[str] | None, module: str, self_type: str, line: int) -> str | None:
        """A path written in `module` (in an impl or trait of `self_type`) as the dotted name the resolver
        follows: `crate::geo::area` → crate.geo.area, `Self::new` → Circle.new, `self::f` → f."""
        if not segments:
            return None
        head = segments[0]
        if head == "crate":
            self.import_once(module, self.crate, None, "crate", line)
        elif head == "super":
            levels = next((i for i, s in enumerate(segments) if s != "super"), len(segments))
            parent = self.ancestor(module, levels)
            if parent is None or levels == len(segments):
                return None
            alias = "::".join(segments[:levels])  # `super::super`: one name, it holds no "."
            self.import_once(module, parent, None, alias, line)
            segments = [alias, *segments[levels:]]
        elif head == "self" and len(segments) > 1:
            segments = segments[1:]  # `self::f`: this module's f, found by scope
        elif head == "Self":
            if not self_type:
                return None
            segments = [self_type, *segments[1:]]
        return ".".join(segments)

    def use_target(self, segments: list[str], module: str) -> UseTarget | None:
        """What a `use` path in `module` imports: `crate::geo::shapes::Circle` → (`src/geo/shapes`, Circle);
        the last segment may be a module too (`use crate::geo::shapes;`): the resolver decides."""
        head = segments[0]
        if head == "crate":
            base: str | None = self.crate
            rest = segments[1:]
        elif head == "self":
            base, rest = module, segments[1:]
        elif head == "super":
            levels = next((i for i, s in enumerate(segments) if s != "super"), len(segments))
            base, rest = self.ancestor(module, levels), segments[levels:]
        elif head in self.mods.get(module, ()):
            base, rest = module, segments  # 2018 paths: a child module declared here
        elif head in self.uses.get(module, {}):
            base, rest = "/".join(self.uses[module][head]), segments[1:]  # `use super::store; use store::Repo;`
        elif len(segments) == 1:
            return head, None, False
        else:
            return "::".join(segments[:-1]), segments[-1], False
        if base is None:
            return None
        parts = [p for p in (base, *rest[:-1]) if p]
        return ("/".join(parts), rest[-1], True) if rest else (base, None, True)

    def use(self, node: Node, module: str, scope: str) -> None:
        """The imports of one `use` declaration written in `module`, bound in `scope`."""
        line = node.start_point[0] + 1
        for segments, alias, glob in use_items(node.child_by_field_name("argument")):
            target = self.use_target(segments, module) if segments else None
            if target is None:
                continue
            imported, name, local = target
            if glob:
                everything = "/".join(p for p in (imported, name) if p) if local else "::".join(segments)
                self.facts.imports.append(Import(everything, "*", "*" + everything, scope, line))
            elif (alias or segments[-1]) != "_":  # `use io::Write as _`: a trait in scope, no name
                self.facts.imports.append(Import(imported, name, alias or segments[-1], scope, line))
