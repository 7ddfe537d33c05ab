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

Where it lives: module names and import specifiers in `javascript_modules`, helpers over single
syntax nodes in `javascript_syntax`, the sweep and its handlers in `javascript_walker`; this module
parses a file and hands it to the sweep.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection
from functools import cache

from tree_sitter import Parser

from memhub.knowledge.codegraph.facts import FileFacts, Symbol
from memhub.knowledge.codegraph.javascript_modules import LANGUAGES, language_of, module_name, resolve_specifier
from memhub.knowledge.codegraph.javascript_syntax import expression_name, grammar_language, module_doc
from memhub.knowledge.codegraph.javascript_walker import Scope, Walker, captured
from memhub.knowledge.codegraph.syntax import Lineage, count_errors, within_limits

# Module naming and `expression_name` are part of this module's interface (the indexer and tests import them here).
__all__ = ["LANGUAGES", "expression_name", "extract_javascript", "language_of", "module_name", "resolve_specifier"]


@cache
def _parser(grammar: str) -> Parser:
    return Parser(grammar_language(grammar))


def extract_javascript(path: str, source: bytes, known_files: Collection[str] | None = None) -> FileFacts:
    """Symbols, references, imports and bindings of one JS/TS file (path relative to the repository root).

    `known_files` (the repository's files, relative paths, ideally a set) resolves `./x` imports to files
    here; without it the facts depend on this file alone, which incremental indexing wants, and the
    resolver finds folder (`index.*`) and declaration-only modules itself: the graph is the same.
    """
    language, grammar = LANGUAGES.get(posixpath.splitext(path)[1], ("javascript", "javascript"))
    module = module_name(path)
    facts = FileFacts(path, language, module)
    root = within_limits(_parser(grammar).parse(source).root_node)
    facts.parse_errors = count_errors(root)
    module_scope = Scope(module, "module", None)
    facts.symbols.append(
        Symbol("module", module.rpartition("/")[2], module, path, 1, 0, root.end_point[0] + 1, None, module_doc(root))
    )
    nodes = captured(root, grammar)
    walker = Walker(facts, known_files, module_scope, Lineage(root, nodes))
    walker.seen[module] = 1
    walker.run(nodes)
    return facts
