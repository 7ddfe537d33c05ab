"""Shared checks for the hand-written call-graph fixtures of the Java, Go and Rust extractors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memhub.knowledge.codegraph.facts import FileFacts
from memhub.knowledge.codegraph.indexer import _extractors
from memhub.knowledge.codegraph.resolve import Graph, resolve

FIXTURES = Path(__file__).parent / "fixtures"
CALL_KINDS = ("calls", "instantiates", "decorates")


def project_facts(name: str) -> list[FileFacts]:
    """The facts of every source file of a fixture project, through the indexer's extractor table."""
    root = FIXTURES / name
    extractors = _extractors()
    return [
        extractors[p.suffix][1](p.relative_to(root).as_posix(), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.suffix in extractors
    ]


def project_graph(name: str) -> Graph:
    return resolve(project_facts(name))


def expected(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}_expected.json").read_text(encoding="utf-8"))


def call_pairs(graph: Graph) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in graph.edges if e.kind in CALL_KINDS}


def truth_pairs(truth: dict[str, Any]) -> set[tuple[str, str]]:
    return {(src, dst) for src, dst, _ in truth["edges"]}


def recall(graph: Graph, truth: dict[str, Any]) -> float:
    wanted = truth_pairs(truth)
    return len(call_pairs(graph) & wanted) / len(wanted)


def listed_ambiguities(graph: Graph) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(u.src, u.target, tuple(sorted(u.candidates))) for u in graph.unresolved}


def expected_ambiguities(truth: dict[str, Any]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(src, target, tuple(sorted(candidates))) for src, target, candidates, _ in truth["unresolvable"]}
