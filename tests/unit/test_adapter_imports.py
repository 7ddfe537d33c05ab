"""The LLM client and retrieval sit below the services: they import no service, composition or entry package.

Read from the source (every import statement, also inside functions and TYPE_CHECKING blocks), so a lazy or
typing-only import that would close a package cycle is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import memhub

SRC = Path(memhub.__file__).parent
ABOVE_ADAPTERS = {
    "memory",
    "pipeline",
    "knowledge",
    "context",
    "meta",
    "runtime",
    "settings",
    "api",
    "cli",
    "sdk",
}


def memhub_imports(path: Path) -> set[str]:
    """The top-level memhub packages `path` imports ("pipeline" for `from memhub.pipeline.types import ...`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "memhub" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", ["llm", "retrieval"])
def test_adapter_imports_nothing_above_it(package: str) -> None:
    files = sorted((SRC / package).rglob("*.py"))
    assert files
    upward = {
        str(f.relative_to(SRC)): sorted(memhub_imports(f) & ABOVE_ADAPTERS)
        for f in files
        if memhub_imports(f) & ABOVE_ADAPTERS
    }
    assert upward == {}
