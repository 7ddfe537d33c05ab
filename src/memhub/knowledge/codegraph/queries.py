"""The code-graph tools: structural answers over one built graph, compact and sourced.

Every answer is `{text, isError, ...structured fields}`: `text` is compact Markdown for an agent (the
reference's tools answered with text only); the fields carry the same items for programs. Every item
has `file:line`, and edges their resolution and confidence. Lists say `total` and `truncated`, and
references that could not be resolved are listed under `unresolved` (with their candidates) instead
of being dropped. A symbol is named by its qualified name (`pkg.mod.Class.method`) or its plain name;
a plain name may match several symbols, which are then all answered for and listed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from memhub.knowledge.wiki.globs import glob_matches
from memhub.model.graph import Edge, Reached, Symbol, Unresolved
from memhub.store.graph import GraphReader

CALL_KINDS = ("calls", "instantiates", "decorates")
# What a change to a symbol reaches: its callers, subclasses and implementers, overriders, and the code that
# names it without calling it (annotations, callbacks).
IMPACT_KINDS = ("calls", "instantiates", "decorates", "inherits", "implements", "overrides", "references")
HIERARCHY_KINDS = ("inherits", "implements")
MATCHES_MAX = 8
UNRESOLVED_MAX = 20
CODE_LINES_MAX = 80
EXPLORE_CHARS = 13_000
CLOSURE_MAX = 200


class ToolFailure(Exception):
    """A tool that ran but cannot answer (unknown symbol, unknown file): reported with `isError: true`."""


def _loc(file: str, line: int) -> str:
    return f"{file}:{line}"


def _symbol_view(s: Symbol) -> dict[str, Any]:
    view = {"qname": s.qname, "kind": s.kind, "file": s.file, "line": s.line, "signature": s.signature}
    return view | {"flavor": s.flavor} if s.flavor else view


def _kind(s: Symbol) -> str:
    """`class`, or what the class is (`interface`, `trait`, `struct`, `enum`…)."""
    return s.flavor or s.kind


def _edge_view(e: Edge, side: str) -> dict[str, Any]:
    return {
        "qname": e.src if side == "src" else e.dst,
        "kind": e.kind,
        "file": e.file,
        "line": e.line,
        "resolution": e.resolution,
        "confidence": e.confidence,
    }


def _unresolved_view(u: Unresolved) -> dict[str, Any]:
    return {"from": u.src, "target": u.target, "file": u.file, "line": u.line, "candidates": list(u.candidates)}


def find_symbols(graph: GraphReader, name: str, *, file: str | None = None, line: int | None = None) -> list[Symbol]:
    """Symbols a tool argument names; `file` / `line` narrow overloads. Raises ToolFailure with suggestions."""
    name = name.strip()
    found = graph.symbols_named(name, limit=50)
    if not found and "." in name:
        # A partly qualified name (`Session.send`): the symbols of that last name whose qname ends with it.
        found = [s for s in graph.symbols_named(name.rpartition(".")[2], limit=200) if s.qname.endswith("." + name)]
    if file:
        found = [s for s in found if s.file == file or s.file.endswith("/" + file)]
    if line is not None:
        found = [s for s in found if s.line <= line <= s.end_line] or found
    if found:
        return found
    suggestions = [s.qname for s in graph.search_symbols(name, limit=5)]
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else "; try the search tool"
    raise ToolFailure(f"no symbol named {name!r}{hint}")


def _answer(text: str, **fields: Any) -> dict[str, Any]:
    return {"text": text, "isError": False, **fields}


def _header(symbols: Sequence[Symbol]) -> str:
    shown = ", ".join(f"`{s.qname}` ({_loc(s.file, s.line)})" for s in symbols[:MATCHES_MAX])
    more = f" and {len(symbols) - MATCHES_MAX} more" if len(symbols) > MATCHES_MAX else ""
    return shown + more


def _edge_lines(items: Sequence[dict[str, Any]]) -> list[str]:
    return [
        f"- `{i['qname']}` {i['kind']} at {_loc(i['file'], i['line'])} ({i['resolution']}, {i['confidence']:.2f})"
        for i in items
    ]


def _unresolved_lines(items: Sequence[dict[str, Any]]) -> list[str]:
    if not items:
        return []
    lines = ["", "Unresolved (could be any of the candidates):"]
    lines += [
        f"- `{u['target']}` in `{u['from']}` at {_loc(u['file'], u['line'])}: {', '.join(u['candidates'])}"
        for u in items
    ]
    return lines


def _neighbours(graph: GraphReader, params: dict[str, Any], direction: str) -> dict[str, Any]:
    symbols = find_symbols(graph, params["symbol"])
    qnames = [s.qname for s in symbols]
    limit = params.get("limit", 20)
    edges = graph.edges_of(qnames, direction, kinds=CALL_KINDS, limit=limit)  # type: ignore[arg-type]
    total = graph.count_edges(qnames, direction, kinds=CALL_KINDS)  # type: ignore[arg-type]
    items = [_edge_view(e, "src" if direction == "callers" else "dst") for e in edges]
    unresolved = [_unresolved_view(u) for u in graph.unresolved_for(qnames, limit=UNRESOLVED_MAX)]
    if direction == "callers":
        # Calls naming these symbols among other candidates; calls made *by* them belong to callees.
        unresolved = [u for u in unresolved if u["from"] not in qnames]
    else:
        unresolved = [u for u in unresolved if u["from"] in qnames]
    word = "Callers" if direction == "callers" else "Callees"
    text = [f"{word} of {_header(symbols)}: {total}" + (f" (showing {len(items)})" if total > len(items) else "")]
    text += _edge_lines(items) + _unresolved_lines(unresolved)
    return _answer(
        "\n".join(text),
        symbols=[_symbol_view(s) for s in symbols],
        items=items,
        total=total,
        truncated=total > len(items),
        unresolved=unresolved,
    )


def _reached_view(r: Reached) -> dict[str, Any]:
    return {
        "qname": r.qname,
        "depth": r.depth,
        "via": r.via,
        "kind": r.kind,
        "file": r.file,
        "line": r.line,
        "resolution": r.resolution,
        "confidence": r.confidence,
    }


def impact(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """Everything that calls, instantiates, subclasses or overrides the symbol, up to `depth` steps back."""
    symbols = find_symbols(graph, params["symbol"])
    depth = params.get("depth", 2)
    reached, truncated = graph.closure(
        [s.qname for s in symbols], "callers", kinds=IMPACT_KINDS, depth=depth, limit=CLOSURE_MAX
    )
    items = [_reached_view(r) for r in reached]
    files = sorted({r.file for r in reached} | {s.file for s in symbols})
    unresolved = [_unresolved_view(u) for u in graph.unresolved_for([s.qname for s in symbols], limit=UNRESOLVED_MAX)]
    unresolved = [u for u in unresolved if u["from"] not in {s.qname for s in symbols}]
    text = [f"Impact of changing {_header(symbols)} (depth {depth}): {len(items)} symbols in {len(files)} files"]
    text += [
        f"- [{r['depth']}] `{r['qname']}` {r['kind']} `{r['via']}` at {_loc(r['file'], r['line'])} "
        f"({r['resolution']}, {r['confidence']:.2f})"
        for r in items
    ]
    text += _unresolved_lines(unresolved)
    return _answer(
        "\n".join(text),
        symbols=[_symbol_view(s) for s in symbols],
        items=items,
        files=files,
        total=len(items),
        truncated=truncated,
        unresolved=unresolved,
    )


def _code(source_root: Path | None, symbol: Symbol) -> str | None:
    if source_root is None:
        return None
    path = (source_root / symbol.file).resolve()
    if source_root.resolve() not in path.parents:
        return None
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    end = min(symbol.end_line, symbol.line + CODE_LINES_MAX - 1)
    body = "\n".join(lines[symbol.line - 1 : end])
    return body + ("\n…" if end < symbol.end_line else "")


def node(graph: GraphReader, params: dict[str, Any], source_root: Path | None) -> dict[str, Any]:
    """Where a symbol is, its signature and doc, how many callers and callees, and optionally its source."""
    symbols = find_symbols(graph, params["symbol"], file=params.get("file"), line=params.get("line"))
    include = params.get("includeCode", False)
    views: list[dict[str, Any]] = []
    text: list[str] = []
    for s in symbols[:MATCHES_MAX]:
        view = _symbol_view(s) | {
            "end_line": s.end_line,
            "doc": s.doc,
            "parent": s.parent,
            "callers": graph.count_edges([s.qname], "callers", kinds=CALL_KINDS),
            "callees": graph.count_edges([s.qname], "callees", kinds=CALL_KINDS),
            "referenced_by": graph.count_edges([s.qname], "callers", kinds=("references",)),
            "members": graph.count_edges([s.qname], "callees", kinds=("contains",)),
        }
        text.append(f"`{s.qname}` {_kind(s)} at {_loc(s.file, s.line)}-{s.end_line}: {s.signature}")
        if s.doc:
            text.append(f"  {s.doc.splitlines()[0]}")
        text.append(
            f"  callers: {view['callers']}, callees: {view['callees']}, referenced by: {view['referenced_by']}"
            + (f", members: {view['members']}" if view["members"] else "")
        )
        if include:
            view["code"] = _code(source_root, s)
            if view["code"]:
                text += ["```", view["code"], "```"]
        views.append(view)
    return _answer("\n".join(text), items=views, total=len(symbols), truncated=len(symbols) > MATCHES_MAX)


def search(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """Symbols by name, qualified name or docstring words."""
    found = graph.search_symbols(params["query"], kind=params.get("kind"), limit=params.get("limit", 10))
    items = [_symbol_view(s) for s in found]
    lines = [f"- `{s.qname}` {_kind(s)} at {_loc(s.file, s.line)}" for s in found]
    return _answer("\n".join([f"{len(found)} symbols for {params['query']!r}", *lines]), items=items, total=len(items))


def explore(graph: GraphReader, params: dict[str, Any], source_root: Path | None) -> dict[str, Any]:
    """Relevant symbols with their source, grouped by file, within a character budget."""
    found = graph.search_symbols(params["query"], limit=40)
    by_file: dict[str, list[Symbol]] = {}
    for s in found:
        if s.kind != "module" and (s.file in by_file or len(by_file) < params.get("maxFiles", 12)):
            by_file.setdefault(s.file, []).append(s)
    text: list[str] = []
    used = 0
    truncated = False
    for file, symbols in by_file.items():
        text.append(f"## {file}")
        for s in symbols:
            code = _code(source_root, s) or s.signature
            block = f"`{s.qname}` at {_loc(s.file, s.line)}\n```\n{code}\n```"
            if used + len(block) > EXPLORE_CHARS:
                truncated = True
                break
            text.append(block)
            used += len(block)
    items = [_symbol_view(s) for symbols in by_file.values() for s in symbols]
    return _answer("\n".join(text) or f"nothing found for {params['query']!r}", items=items, truncated=truncated)


def status(graph: GraphReader) -> dict[str, Any]:
    """Counts of files, symbols, edges, unresolved references and syntax errors."""
    counts = graph.counts()
    text = ", ".join(f"{k}: {v}" for k, v in counts.items())
    return _answer(text, **counts, meta=graph.meta())


def files(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """The indexed files (optionally under a prefix or matching a glob) with language and symbol counts."""
    prefix = (params.get("path") or "").strip("/")
    pattern = params.get("pattern")
    per_file = graph.symbols_per_file()
    records = [
        f
        for f in graph.files()
        if (not prefix or f.path == prefix or f.path.startswith(prefix + "/"))
        and (not pattern or glob_matches(pattern, f.path))
    ]
    max_depth = params.get("maxDepth")
    if max_depth:
        records = [
            f for f in records if len(PurePosixPath(f.path).parts) - len(PurePosixPath(prefix).parts) <= max_depth
        ]
    metadata = params.get("includeMetadata", True)
    items = [
        {"path": f.path, "language": f.language, "symbols": per_file.get(f.path, 0), "parse_errors": f.parse_errors}
        for f in records
    ]
    fmt = params.get("format", "tree")
    if fmt == "flat":
        lines = [f"{i['path']}" + (f" ({i['language']}, {i['symbols']})" if metadata else "") for i in items]
    else:
        lines = []
        last: tuple[str, ...] = ()
        for i in items:
            parts = PurePosixPath(i["path"]).parts
            common = 0
            while common < min(len(last), len(parts) - 1) and last[common] == parts[common]:
                common += 1
            for depth in range(common, len(parts) - 1):
                lines.append("  " * depth + parts[depth] + "/")
            meta = f" ({i['language']}, {i['symbols']})" if metadata else ""
            lines.append("  " * (len(parts) - 1) + parts[-1] + meta)
            last = parts[:-1]
    return _answer("\n".join(lines), items=items, total=len(items))


def definition(graph: GraphReader, params: dict[str, Any], source_root: Path | None) -> dict[str, Any]:
    """The symbol's span, signature, doc and source."""
    return node(graph, {"symbol": params["symbol"], "includeCode": True}, source_root)


def call_hierarchy(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """Callers or callees, `depth` levels deep, as a tree."""
    symbols = find_symbols(graph, params["symbol"])
    direction = params.get("direction", "callers")
    depth = params.get("depth", 2)
    reached, truncated = graph.closure(
        [s.qname for s in symbols], direction, kinds=CALL_KINDS, depth=depth, limit=CLOSURE_MAX
    )
    children: dict[str, list[Reached]] = {}
    for r in reached:
        children.setdefault(r.via, []).append(r)
    lines = [f"{direction} of {_header(symbols)} (depth {depth})"]

    def emit(qname: str, level: int, seen: set[str]) -> None:
        for r in children.get(qname, []):
            if r.qname in seen:
                continue
            seen.add(r.qname)
            lines.append("  " * level + f"- `{r.qname}` at {_loc(r.file, r.line)} ({r.resolution}, {r.confidence:.2f})")
            emit(r.qname, level + 1, seen)

    for s in symbols:
        emit(s.qname, 0, {s.qname})
    return _answer("\n".join(lines), items=[_reached_view(r) for r in reached], total=len(reached), truncated=truncated)


def file_deps(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """Which repository files a file imports, and which import it."""
    path = params["file"].strip().lstrip("./")
    facts = {f.path: f for f in graph.file_facts()}
    if path not in facts:
        raise ToolFailure(f"file {path!r} is not indexed; the files tool lists what is")
    module_file = {f.module: p for p, f in facts.items()}

    def targets(imports_of: str) -> set[str]:
        out: set[str] = set()
        for imp in facts[imports_of].imports:
            for candidate in (f"{imp.module}.{imp.name}" if imp.name and imp.name != "*" else None, imp.module):
                if candidate and candidate in module_file:
                    out.add(module_file[candidate])
                    break
        out.discard(imports_of)
        return out

    direction = params.get("direction", "both")
    imports = sorted(targets(path)) if direction in ("imports", "both") else []
    imported_by = sorted(p for p in facts if p != path and path in targets(p)) if direction != "imports" else []
    text = [f"{path}", f"imports ({len(imports)}): " + ", ".join(imports), f"imported by ({len(imported_by)}): "]
    text[-1] += ", ".join(imported_by)
    return _answer("\n".join(text), imports=imports, imported_by=imported_by)


def refactor_scope(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """What changing a symbol's signature touches: its callers, overrides, subclasses and their files."""
    symbols = find_symbols(graph, params["symbol"])
    qnames = [s.qname for s in symbols]
    kinds = (*CALL_KINDS, "overrides", *HIERARCHY_KINDS, "references")
    references = graph.edges_of(qnames, "callers", kinds=kinds, limit=CLOSURE_MAX)
    overridden = graph.edges_of(qnames, "callees", kinds=("overrides",), limit=CLOSURE_MAX)
    items = [_edge_view(e, "src") for e in references] + [_edge_view(e, "dst") for e in overridden]
    unresolved = [_unresolved_view(u) for u in graph.unresolved_for(qnames, limit=UNRESOLVED_MAX)]
    unresolved = [u for u in unresolved if u["from"] not in qnames]
    files_to_touch = sorted({s.file for s in symbols} | {i["file"] for i in items} | {u["file"] for u in unresolved})
    text = [f"Refactor scope of {_header(symbols)}: {len(items)} references in {len(files_to_touch)} files"]
    text += _edge_lines(items) + _unresolved_lines(unresolved)
    return _answer(
        "\n".join(text),
        symbols=[_symbol_view(s) for s in symbols],
        items=items,
        files=files_to_touch,
        total=len(items),
        truncated=len(references) >= CLOSURE_MAX,
        unresolved=unresolved,
    )


def path(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """The shortest call path from one symbol to another (breadth-first over callees)."""
    sources = {s.qname for s in find_symbols(graph, params["from"])}
    targets = {s.qname for s in find_symbols(graph, params["to"])}
    max_depth = params.get("max_depth", 6)
    parent: dict[str, Edge | None] = dict.fromkeys(sources)
    frontier = deque(sources)
    for _ in range(max_depth):
        next_level: deque[str] = deque()
        edges = graph.edges_of(list(frontier), "callees", kinds=CALL_KINDS, limit=5000)
        for edge in edges:
            if edge.dst in parent:
                continue
            parent[edge.dst] = edge
            if edge.dst in targets:
                steps: list[Edge] = []
                current: str | None = edge.dst
                while current is not None and parent[current] is not None:
                    step = parent[current]
                    assert step is not None
                    steps.append(step)
                    current = step.src
                steps.reverse()
                lines = [f"- `{e.src}` → `{e.dst}` at {_loc(e.file, e.line)} ({e.resolution})" for e in steps]
                items = [_edge_view(e, "dst") | {"from": e.src} for e in steps]
                return _answer("\n".join([f"path of {len(steps)} calls", *lines]), items=items, found=True)
            next_level.append(edge.dst)
        if not next_level:
            break
        frontier = next_level
    return _answer(f"no call path within {max_depth} calls", items=[], found=False)


def _implemented(r: Reached) -> str:
    return " (implements)" if r.kind == "implements" else ""


def class_hierarchy(graph: GraphReader, params: dict[str, Any]) -> dict[str, Any]:
    """A class's bases (up) and subclasses (down), through the whole repository."""
    symbols = [s for s in find_symbols(graph, params["symbol"]) if s.kind == "class"]
    if not symbols:
        raise ToolFailure(f"{params['symbol']!r} is not a class")
    qnames = [s.qname for s in symbols]
    up, _ = graph.closure(qnames, "callees", kinds=HIERARCHY_KINDS, depth=10, limit=CLOSURE_MAX)
    down, truncated = graph.closure(qnames, "callers", kinds=HIERARCHY_KINDS, depth=10, limit=CLOSURE_MAX)
    text = [f"Class hierarchy of {_header(symbols)}", "Bases:"]
    text += [f"  {'  ' * (r.depth - 1)}- `{r.qname}`{_implemented(r)}" for r in up]
    text += ["Subclasses and implementers:"]
    text += [f"  {'  ' * (r.depth - 1)}- `{r.qname}`{_implemented(r)} at {_loc(r.file, r.line)}" for r in down]
    return _answer(
        "\n".join(text),
        bases=[_reached_view(r) for r in up],
        subclasses=[_reached_view(r) for r in down],
        truncated=truncated,
    )


_TOOLS: dict[str, Callable[[GraphReader, dict[str, Any], Path | None], dict[str, Any]]] = {
    "search": lambda g, p, _: search(g, p),
    "explore": explore,
    "callers": lambda g, p, _: _neighbours(g, p, "callers"),
    "callees": lambda g, p, _: _neighbours(g, p, "callees"),
    "impact": lambda g, p, _: impact(g, p),
    "node": node,
    "status": lambda g, p, _: status(g),
    "files": lambda g, p, _: files(g, p),
    "definition": definition,
    "call_hierarchy": lambda g, p, _: call_hierarchy(g, p),
    "file_deps": lambda g, p, _: file_deps(g, p),
    "refactor_scope": lambda g, p, _: refactor_scope(g, p),
    "path": lambda g, p, _: path(g, p),
    "class_hierarchy": lambda g, p, _: class_hierarchy(g, p),
}


def run_tool(
    graph: GraphReader, tool_name: str, params: dict[str, Any], *, source_root: Path | None = None
) -> dict[str, Any]:
    """Run one code-graph tool (params already validated); a tool that cannot answer says so in `text`."""
    tool = _TOOLS.get(tool_name)
    if tool is None:
        raise KeyError(tool_name)
    try:
        return tool(graph, params, source_root)
    except ToolFailure as exc:
        return {"text": str(exc), "isError": True}
