#!/usr/bin/env python3
"""Code-Graph call edges against the runtime: the static Python call graph of pure-Python standard-library
packages, compared with the calls their own unit tests (this interpreter's `test` package) make.

Ground truth nobody wrote by hand. Per package:
1. Its source is copied into a temporary tree laid out as in the standard library (`json/decoder.py`,
   `argparse.py`) and resolved in process (`_extractors()` + `resolve()`, as `bench/codegraph.py` does).
2. Its tests run in a subprocess (this file, `--trace`) under `sys.setprofile`, the package dropped from
   `sys.modules` first so that import-time calls are seen. A `call` event whose callee *and direct parent
   frame* are code of the package is a (caller, callee) pair (a parent elsewhere, such as test code or a
   decorator's wrapper from another module, gives none), classed as:
   - explicit: the parent's `CALL` called the callee itself (CPython 3.11 leaves f_lasti in the caches of a
     CALL it runs inline) or a class (`__init__`, `__new__`); a generator counts at its first resumption, for
     the function that returned it unstarted, else for the resuming frame if that frame visibly called it
     (`for x in gen()`, `list(gen())`, `it = gen()`); else its maker is unknown and edges to it are not scored;
   - implicit: the parent at another instruction (`LOAD_ATTR`: properties, descriptors; `BINARY_OP`, ...),
     `with`'s `__exit__`, a dunder called from C (`len(x)`), a `@property`;
   - via C: a builtin or C object calling back (`sorted(key=f)`, `list(map(f, xs))`): a reference, not a
     call, to a static graph; but a decorator's C wrapper (`@lru_cache`) in between is still explicit.
3. Code objects map to symbols by file + `co_qualname` (`f.<locals>.g` is `f.g`, a twice-defined name `f@2`,
   told apart by line). Lambdas and comprehensions belong to their enclosing function, as in the static graph;
   calls *to* them are dropped (counted). Module and class bodies are not calls.
4. Static edges are `calls`, `instantiates`, `decorates`; `instantiates C` stands for calls of the `__init__`
   and `__new__` that C has in the package (through its bases): what the runtime sees.

Reported: recall = explicit dynamic edges found statically / explicit dynamic edges (implicit and via-C ones are
counted, not scored); misses listed in `unresolved` with the callee among the candidates, or absent, classed by
how the caller spells the call; an *estimate* of precision on exercised code = observed / static edges whose
caller and callee both ran (an unobserved edge may be a branch the tests did not take), also per resolution
tier; "site ran": unobserved edges on a line where the caller made another explicit call, the stronger false-
edge candidates. Tracing adds frames: tests probing the recursion limit may fail (the profiler is re-armed).

    python bench/codegraph_dynamic.py                    # the default packages
    python bench/codegraph_dynamic.py --quick            # json and textwrap
    python bench/codegraph_dynamic.py --packages shlex,pprint
"""

from __future__ import annotations

import argparse
import bisect
import dis
import inspect
import io
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import unittest
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import CodeType, FrameType, GeneratorType
from typing import Any

from common import HERE, write_result
from memhub.knowledge.codegraph.indexer import _extractors
from memhub.knowledge.codegraph.python_facts import module_name
from memhub.knowledge.codegraph.resolve import CANDIDATES_MAX, resolve
from memhub.model.graph import Edge, Reference, Symbol

DEFAULT_OUT = HERE / "results" / "codegraph_dynamic.json"
# Standard-library module or package → its tests: pure Python, each suite seconds when traced (csv and heapq
# are mostly C; statistics takes 40 s traced for few edges).
PACKAGES = "json argparse email textwrap configparser difflib fractions shlex tomllib ipaddress pprint optparse"
TARGETS = {p: f"test.test_{p}" for p in PACKAGES.split()}
QUICK = ("json", "textwrap")
CALL_KINDS = ("calls", "instantiates", "decorates")
CALL_OPS = frozenset({"CALL", "CALL_FUNCTION_EX", "CALL_KW"})
GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
CONSTRUCTORS = ("__init__", "__new__")
PROPERTY = re.compile(r"@([\w.]*\.)?(property|cached_property|setter|getter|deleter)\b")
KINDS = ("explicit", "via C", "implicit")  # a pair seen several ways counts as the first
Key = tuple[str, int, str]  # a code object: (file in the copied tree, co_firstlineno, co_qualname)
Pair = tuple[str, str]  # (caller, callee) qualified names


# -- the traced subprocess ---------------------------------------------------------------------------------


def trace(spec: dict[str, Any]) -> None:
    """Run one package's tests under a profiler; write the caller/callee pairs and the code that ran as JSON."""
    files: dict[str, str] = spec["files"]  # real path of each stdlib file → its path in the copied tree
    for name in [n for n in sys.modules if n.split(".")[0] == spec["package"]]:
        del sys.modules[name]  # imported already (unittest imports argparse, difflib, pprint): trace it again
    rel_of: dict[str, str | None] = {}
    ops: dict[Key, tuple[list[int], list[str], int]] = {}
    in_c: set[FrameType] = set()  # frames of the package inside a builtin call (`c_call` without its return)
    creators: dict[FrameType, tuple[Key, int]] = {}  # unstarted generators' frames → who returned them
    pairs: defaultdict[tuple[Key, Key, str], set[int]] = defaultdict(set)
    executed: set[Key] = set()
    unattributed: set[Key] = set()  # generators first resumed away from the code that made them

    def where(code: CodeType) -> Key | None:
        if code.co_filename not in rel_of:
            rel_of[code.co_filename] = files.get(os.path.realpath(code.co_filename))
        rel = rel_of[code.co_filename]
        return None if rel is None else (rel, code.co_firstlineno, code.co_qualname)

    def instructions(key: Key, code: CodeType) -> tuple[list[int], list[str], int]:
        # Keyed by file/line/qualname, not by code object: fresh imports (test.support.import_fresh_module)
        # compile the same source again, and a code object's hash is computed from its whole content.
        if key not in ops:
            found = list(dis.get_instructions(code))
            first = next((i.offset for i in found if i.opname == "RESUME"), 0)
            ops[key] = ([i.offset for i in found], [i.opname for i in found], first)
        return ops[key]

    def made_here(frame: FrameType, key: Key, generator: FrameType) -> bool:
        """Whether `frame`, resuming a generator for the first time, is the one that called it."""
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        for name, value in frame.f_locals.items():
            if type(value) is GeneratorType and value.gi_frame is generator:
                # `it = gen(); for x in it` made it here; a parameter came from elsewhere, except a
                # comprehension's `.0`, the iterator its enclosing function made.
                return name == ".0" or name not in code.co_varnames[:count]
        # A temporary: `for x in gen()`, `list(gen())`, `yield from gen()` have the call right before the
        # iteration; `next(self._gen)`, `self._resume()` do not, and the maker is unknown.
        offsets, names, _ = instructions(key, code)
        at = bisect.bisect_right(offsets, frame.f_lasti) - 2
        while at >= 0 and names[at] in ("GET_ITER", "GET_YIELD_FROM_ITER", "LOAD_CONST", "PRECALL", "KW_NAMES"):
            at -= 1
        return at >= 0 and names[at] in CALL_OPS

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        # Most events are outside the package: one dict lookup, no call, decides that.
        if rel_of.get(code.co_filename, "") is None or (key := where(code)) is None:
            return
        if event == "c_call":
            in_c.add(frame)
        elif event in ("c_return", "c_exception"):
            in_c.discard(frame)
        elif event == "return" and type(arg) is GeneratorType and arg.gi_frame and not arg.gi_suspended:
            # A generator is created without an event; a function returning it unstarted made it.
            creators.setdefault(arg.gi_frame, (key, frame.f_lineno or 0))
        if event != "call":
            return
        back = frame.f_back
        back_key = where(back.f_code) if back is not None else None
        if code.co_flags & GENERATOR:
            if frame.f_lasti > instructions(key, code)[2]:
                return  # a resumption (after a yield / await), not a call
            executed.add(key)
            made = creators.pop(frame, None)
            if made is None and back is not None and back_key is not None and made_here(back, back_key, frame):
                made = (back_key, back.f_lineno or 0)
            if made is not None:
                pairs[(made[0], key, "explicit")].add(made[1])
            elif back_key is not None:
                unattributed.add(key)
            return
        executed.add(key)
        if back is None or back_key is None or not code.co_flags & inspect.CO_NEWLOCALS:
            return  # module and class bodies run, but are definitions rather than calls
        name = code.co_name
        offsets, names, _ = instructions(back_key, back.f_code)
        at = bisect.bisect_right(offsets, back.f_lasti) - 1
        # f_lasti *on* a CALL (not in its caches) means C code in between, with (`sorted(key=f)`) or without
        # (a type: `list(map(f, xs))`) a `c_call` event.
        through_c = back in in_c or (names[at] == "CALL" and offsets[at] == back.f_lasti)
        dunder = name.startswith("__") and name.endswith("__") and name not in CONSTRUCTORS
        if names[at] not in CALL_OPS or name in ("__exit__", "__aexit__"):
            kind = "implicit"  # a property, descriptor or operator (LOAD_ATTR, BINARY_OP, ...); `with`'s exit
        elif name in CONSTRUCTORS:
            kind = "via C" if back in in_c else "explicit"  # a class call goes through `type.__call__`
        elif through_c or (dunder and names[at] == "CALL_FUNCTION_EX"):
            kind = "implicit" if dunder else "via C"  # `len(x)` → `__len__`; `f(*xs)` → `__iter__`
        else:
            kind = "explicit"  # called by name, dunders too (`Base.__eq__(self, other)`)
        pairs[(back_key, key, kind)].add(back.f_lineno or 0)

    class Result(unittest.TextTestResult):
        restarts = 0

        def startTest(self, test: unittest.TestCase) -> None:
            # A profile function that raises (a test exhausting the recursion limit) is switched off.
            if sys.getprofile() is None:
                Result.restarts += 1
                sys.setprofile(profile)
            super().startTest(test)

    started = time.perf_counter()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(spec["tests"])
        result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0, resultclass=Result).run(suite)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    payload = {
        "pairs": [[list(c), list(d), kind, sorted(lines)] for (c, d, kind), lines in pairs.items()],
        "executed": [list(k) for k in executed],
        "unattributed": [list(k) for k in unattributed],
        "tests": result.testsRun,
        "failed": len(result.failures) + len(result.errors),
        "profiler_restarts": Result.restarts,
        "seconds": round(time.perf_counter() - started, 2),
    }
    Path(spec["out"]).write_text(json.dumps(payload), encoding="utf-8")


def run_traced(package: str, files: dict[str, str], work: Path) -> dict[str, Any]:
    out = work / f"{package}.trace.json"
    spec = work / f"{package}.spec.json"
    spec.write_text(json.dumps({"package": package, "tests": TARGETS[package], "files": files, "out": str(out)}))
    cwd = work / f"{package}.cwd"  # tests write scratch files into the working directory
    cwd.mkdir()
    command = [sys.executable, str(Path(__file__).resolve()), "--trace", str(spec)]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"tracing {package} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text(encoding="utf-8"))


# -- the static side ---------------------------------------------------------------------------------------


class Static:
    """The resolved graph of one copied package, indexed for the comparison."""

    def __init__(self, root: Path) -> None:
        extract = _extractors()[".py"][1]
        facts = [extract(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.py"))]
        graph = resolve(facts)
        self.root, self.symbols, self.texts = root, graph.symbols, dict[str, list[str]]()
        self.by_name: defaultdict[tuple[str, str], list[Symbol]] = defaultdict(list)  # (file, name)
        self.members: defaultdict[str, dict[str, str]] = defaultdict(dict)
        self.bases: defaultdict[str, list[str]] = defaultdict(list)
        self.refs: defaultdict[str, list[Reference]] = defaultdict(list)  # by scope
        self.imports = {f.path: {i.alias for i in f.imports} for f in facts}
        self.edges_at: defaultdict[tuple[str, int], list[Edge]] = defaultdict(list)  # by (src, line)
        self.unresolved: defaultdict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
        for s in graph.symbols.values():
            if s.kind != "module":
                self.by_name[(s.file, s.name)].append(s)
            if s.parent:
                self.members[s.parent].setdefault(s.name, s.qname)
        for ref in (r for f in facts for r in f.references):
            self.refs[ref.scope].append(ref)
        for e in graph.edges:
            if e.kind == "inherits":
                self.bases[e.src].append(e.dst)
            self.edges_at[(e.src, e.line)].append(e)
        for u in graph.unresolved:
            self.unresolved[u.src].append((u.target, u.candidates))
        self.references = {(e.src, e.dst) for e in graph.edges if e.kind == "references"}  # callbacks, types
        # Call-like edges as pairs; `instantiates C` becomes the constructors the runtime calls.
        self.pairs: dict[Pair, Edge] = {}
        for e in graph.edges:
            if e.kind in CALL_KINDS:
                ctors = [c for n in CONSTRUCTORS if (c := self.constructor(e.dst, n))]
                for dst in (ctors if e.kind == "instantiates" else []) or [e.dst]:
                    self.pairs.setdefault((e.src, dst), e)

    def constructor(self, klass: str, name: str) -> str | None:
        """`name` (`__init__`) as `klass` or its nearest base in the package defines it (breadth-first)."""
        queue, seen = [klass], set()
        while queue:
            current = queue.pop(0)
            if name in self.members.get(current, {}):
                return self.members[current][name]
            seen.add(current)
            queue.extend(b for b in self.bases.get(current, []) if b not in seen)
        return None

    def source(self, file: str, line: int) -> str:
        if file not in self.texts:
            self.texts[file] = (self.root / file).read_text(encoding="utf-8", errors="replace").splitlines()
        lines = self.texts[file]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def decorators(self, qname: str) -> list[str]:
        symbol, found = self.symbols[qname], []
        while (text := self.source(symbol.file, symbol.line - 1 - len(found))).startswith("@"):
            found.append(text)
        return found

    def symbol_of(self, key: list[Any], enclosing: bool) -> str | None:
        """A code object's symbol; a lambda's or comprehension's is its enclosing one (if `enclosing`)."""
        rel, line, qualname = key
        parts = [p for p in qualname.split(".") if p != "<locals>"]
        anonymous = next((i for i, p in enumerate(parts) if p.startswith("<")), None)  # <lambda>, <listcomp>
        if anonymous is not None:
            if not enclosing:
                return None
            parts = parts[:anonymous]
        if not parts:
            return module_name(rel)
        wanted = ".".join([module_name(rel), *parts])
        candidates = self.by_name.get((rel, parts[-1]), [])
        exact = [s for s in candidates if re.sub(r"@\d+", "", s.qname) == wanted] or candidates

        def distance(s: Symbol) -> int:
            # A decorated def's code starts at its first decorator, above the `def` line the symbol records.
            return 0 if s.line <= line <= s.end_line else abs(s.line - line)

        best = min(exact, key=distance, default=None)
        return best.qname if best is not None and distance(best) <= 50 else None


# -- comparison --------------------------------------------------------------------------------------------


def miss_shape(st: Static, caller: str, callee: str, lines: list[int]) -> tuple[str, int]:
    """How the caller spells a missed call: its call references on (or up to 5 lines above) the traced lines;
    3.11 puts a multi-line `a.b(...)` call on the line of `.b`, the reference is where `a` starts."""
    symbol = st.symbols[callee]
    names = {symbol.name}
    if symbol.name in CONSTRUCTORS and symbol.parent:
        family = {symbol.parent, *(k for k, bases in st.bases.items() if symbol.parent in bases)}
        names = {st.symbols[k].name for k in family} | {"cls", "type", "__class__", symbol.name}
    near = [r for r in st.refs[caller] if r.kind == "call" and any(0 <= n - r.line <= 5 for n in lines)]
    near.sort(key=lambda r: min(abs(n - r.line) for n in lines))
    refs = [r for r in near if r.target.rpartition(".")[2] in names]
    if not refs:  # called under another name: a variable, parameter or attribute holding the function
        on_line = [r.target.split(".") for r in near if r.line in lines]
        if not on_line:
            return "no call by name on the line (`table[k](x)`, `f()()`)", lines[0]
        if len(on_line[0]) == 1:
            return "other name: variable / parameter holding the function", lines[0]
        if on_line[0][0] in ("self", "cls"):
            return "other name: attribute holding the function (self._hook())", lines[0]
        return "other name: module alias or object attribute", lines[0]
    ref, parts = refs[0], refs[0].target.split(".")
    if any(e.dst.rpartition(".")[2] in names for e in st.edges_at[(caller, ref.line)]):
        return "resolved to another same-named symbol (override, subclass)", ref.line
    if parts[0] == "?":
        if any(r.target == "super" and r.line == ref.line for r in st.refs[caller]):
            return "super().m()", ref.line
        return "computed receiver f().m()", ref.line
    if parts[-1] in ("cls", "type", "__class__"):
        return "constructor via cls() / type(self)() / self.__class__()", ref.line
    if parts[0] in ("self", "cls"):
        return ("self.m() (method of a subclass / mixin)" if len(parts) == 2 else "self.attr.m()"), ref.line
    if len(parts) == 1:
        return "bare name f() (parameter, local, or unresolved global)", ref.line
    if parts[0] in st.imports[st.symbols[caller].file]:
        return "module attribute mod.f()", ref.line
    return "x.m(): receiver of unknown type", ref.line


def compare(package: str, st: Static, data: dict[str, Any], seed: int) -> dict[str, Any]:
    dynamic: dict[Pair, str] = {}
    lines: defaultdict[Pair, set[int]] = defaultdict(set)
    site_lines: defaultdict[str, set[int]] = defaultdict(set)  # lines where a caller made an explicit call
    dropped: Counter[str] = Counter()
    unmapped: list[str] = []
    for caller_key, callee_key, kind, at in data["pairs"]:
        caller, callee = st.symbol_of(caller_key, enclosing=True), st.symbol_of(callee_key, enclosing=False)
        if callee is None and "<" in callee_key[2]:
            dropped["call of a lambda / comprehension"] += 1
        elif caller is None or callee is None:
            dropped["unmapped code object"] += 1
            unmapped.append(f"{caller_key} -> {callee_key}")
        else:
            decorators = st.decorators(callee) if kind != "implicit" else []
            if any(PROPERTY.match(d) for d in decorators):
                kind = "implicit"  # a generator property's first resumption looks like a call
            elif kind == "via C" and any(not re.match(r"@(static|class)method\b", d) for d in decorators):
                kind = "explicit"  # a C wrapper (`@lru_cache`) between a call and the decorated function
            pair = (caller, callee)
            if pair not in dynamic or KINDS.index(kind) < KINDS.index(dynamic[pair]):
                dynamic[pair] = kind
            lines[pair].update(at)
            if kind == "explicit":
                site_lines[caller].update(at)
    static = st.pairs
    explicit = [p for p, kind in dynamic.items() if kind == "explicit"]
    found = [p for p in explicit if p in static]
    misses: list[dict[str, Any]] = []
    for caller, callee in sorted(set(explicit) - set(found)):
        name = st.symbols[callee].name
        listed = any(callee in c for _, c in st.unresolved[caller])
        capped = any(t.endswith(name) and len(c) >= CANDIDATES_MAX for t, c in st.unresolved[caller])
        shape, line = miss_shape(st, caller, callee, sorted(lines[(caller, callee)]))
        file = st.symbols[caller].file
        status = "listed" if listed else "cut by the candidate cap" if capped else "absent"
        misses.append({"caller": caller, "callee": callee, "where": f"{file}:{line}", "shape": shape,
                       "source": st.source(file, line), "unresolved": status,
                       "referenced": (caller, callee) in st.references})  # fmt: skip
    # Scored for precision: both ends ran, the callee is a function (a class without a constructor in the
    # package is instantiated without a call the profiler sees), not a generator whose maker is unknown.
    ran = {s for k in data["executed"] if (s := st.symbol_of(k, enclosing=True))}
    ran -= {s for k in data["unattributed"] if (s := st.symbol_of(k, enclosing=False))}
    eligible = [p for p in static if p[0] in ran and p[1] in ran and st.symbols[p[1]].kind != "class"]
    unseen = sorted(p for p in eligible if p not in dynamic)
    site_ran = [p for p in unseen if static[p].line in site_lines[p[0]]]
    tiers: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in eligible:
        tiers[static[p].resolution][0] += p in dynamic
        tiers[static[p].resolution][1] += 1

    def row(p: Pair) -> dict[str, Any]:
        e = static[p]
        return {"caller": p[0], "callee": p[1], "where": f"{e.file}:{e.line}", "source": st.source(e.file, e.line),
                "tier": e.resolution}  # fmt: skip

    sample = random.Random(f"{seed}:{package}").sample(unseen, min(10, len(unseen)))
    return {
        "package": package, "tests": data["tests"], "failed": data["failed"], "trace_seconds": data["seconds"],
        "profiler_restarts": data["profiler_restarts"], "static_edges": len(static),
        "dynamic": {k: sum(1 for v in dynamic.values() if v == k) for k in KINDS},
        "non_explicit_also_static": sum(1 for p, k in dynamic.items() if k != "explicit" and p in static),
        "via_c_as_references": sum(1 for p, k in dynamic.items() if k == "via C" and p in st.references),
        "found": len(found), "recall": round(len(found) / len(explicit), 3) if explicit else None,
        "missed_listed": sum(1 for m in misses if m["unresolved"] != "absent"),
        "missed_absent": sum(1 for m in misses if m["unresolved"] == "absent"),
        "eligible_static": len(eligible), "observed_static": len(eligible) - len(unseen),
        "precision_estimate": round(1 - len(unseen) / len(eligible), 3) if eligible else None,
        "precision_by_tier": {t: on for t, on in sorted(tiers.items())},
        "unobserved_site_ran": len(site_ran), "dropped": dict(dropped), "unmapped_examples": unmapped[:10],
        "misses": misses, "unobserved_site_ran_edges": [row(p) for p in site_ran],
        "unobserved_sample": [row(p) for p in sample],
    }  # fmt: skip


def copy_package(stdlib: Path, package: str, root: Path) -> dict[str, str]:
    """Copy a stdlib module or package into `root`; real path of each file → its path in the copy."""
    source = stdlib / package
    root.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, root / package, ignore=shutil.ignore_patterns("__pycache__"))
        files = [f for f in source.rglob("*.py") if "__pycache__" not in f.parts]
    else:
        files = [source.with_suffix(".py")]
        shutil.copy2(files[0], root)
    return {os.path.realpath(f): f.relative_to(stdlib).as_posix() for f in files}


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "n/a"


def print_tables(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The Markdown tables; returns the overall row."""
    summed = "tests failed trace_seconds found missed_listed missed_absent eligible_static observed_static"
    total: dict[str, Any] = {k: sum(r[k] for r in rows) for k in (*summed.split(), "unobserved_site_ran")}
    total |= {"package": "**all**", "dynamic": {k: sum(r["dynamic"][k] for r in rows) for k in KINDS}}
    total["dropped"] = dict(sum((Counter(r["dropped"]) for r in rows), Counter()))
    print(
        "| package | tests (failed) | traced s | dynamic edges: explicit / implicit / via C | recall (explicit) "
        "| missed: listed / absent | precision est. (observed / eligible) | unobserved, site ran | unmapped |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in [*rows, total]:
        d = r["dynamic"]
        print(
            f"| {r['package']} | {r['tests']} ({r['failed']}) | {r['trace_seconds']:.1f} | "
            f"{d['explicit']} / {d['implicit']} / {d['via C']} | {ratio(r['found'], d['explicit'])} | "
            f"{r['missed_listed']} / {r['missed_absent']} | {ratio(r['observed_static'], r['eligible_static'])} "
            f"({r['observed_static']} / {r['eligible_static']}) | {r['unobserved_site_ran']} | "
            f"{r['dropped'].get('unmapped code object', 0)} |"
        )
    tiers: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for tier, (observed, eligible) in ((t, v) for r in rows for t, v in r["precision_by_tier"].items()):
        tiers[tier][0] += observed
        tiers[tier][1] += eligible
    print("\n| resolution tier | precision est. (observed / eligible) |\n|---|---:|")
    for tier, (o, n) in sorted(tiers.items()):
        print(f"| {tier} | {ratio(o, n)} ({o} / {n}) |")
    misses = [m for r in rows for m in r["misses"]]
    print("\n| missed explicit call, by how the caller spells it | misses | listed in unresolved | example |")
    print("|---|---:|---:|---|")
    for shape, n in Counter(m["shape"] for m in misses).most_common():
        these = [m for m in misses if m["shape"] == shape]
        listed = sum(1 for m in these if m["unresolved"] != "absent")
        m = these[len(these) // 2]
        print(f"| {shape} | {n} | {listed} | `{m['caller']}` → `{m['callee']}`: `{m['source'][:60]}` |")
    as_references = sum(r["via_c_as_references"] for r in rows)
    print(f"\nvia-C pairs (callbacks) that the static graph has as `references` edges: {as_references}")
    total["recall"] = ratio(total["found"], total["dynamic"]["explicit"])
    total["precision_estimate"] = ratio(total["observed_static"], total["eligible_static"])
    total["precision_by_tier"] = dict(sorted(tiers.items()))
    total["miss_shapes"] = dict(Counter(m["shape"] for m in misses).most_common())
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK)}")
    parser.add_argument("--packages", help=f"comma-separated, from: {','.join(TARGETS)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="test suites traced at once")
    parser.add_argument("--seed", type=int, default=7, help="for the samples of unobserved static edges")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--trace", type=Path, help=argparse.SUPPRESS)  # internal: the traced subprocess
    args = parser.parse_args()
    if args.trace:
        trace(json.loads(args.trace.read_text(encoding="utf-8")))
        return
    packages = list(QUICK) if args.quick else args.packages.split(",") if args.packages else list(TARGETS)
    if unknown := [p for p in packages if p not in TARGETS]:
        parser.error(f"unknown packages {unknown}; known: {','.join(TARGETS)}")
    if sys.version_info[:2] != (3, 11):  # the CALL / inline-cache reading of f_lasti is 3.11's bytecode
        print(f"warning: written for CPython 3.11, running {platform.python_version()}", file=sys.stderr)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        work = Path(tmp)
        roots = {p: work / "trees" / p for p in packages}
        files = {p: copy_package(stdlib, p, roots[p]) for p in packages}
        traces = {p: pool.submit(run_traced, p, files[p], work) for p in packages}
        for p in packages:  # resolution runs while the suites are traced
            rows.append(compare(p, Static(roots[p]), traces[p].result(), args.seed))
    seconds = round(time.perf_counter() - started, 1)
    overall = print_tables(rows)
    print(f"\n{len(rows)} packages in {seconds} s ({args.jobs} suites at once)")
    write_result(args.out, {"seconds": seconds, "overall": overall, "packages": rows})


if __name__ == "__main__":
    main()
