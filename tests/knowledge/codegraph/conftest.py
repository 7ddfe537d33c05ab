"""Fixtures of the code-graph HTTP tests: a gateway per test with an allowed source root, and sources in it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_gateway
from tests.knowledge.codegraph.code_graph_http_kit import CodeGraphHttp, GitRepo, copy_pyproj


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    """The allowed source root (MEMHUB_CODE_SOURCE_ROOTS) of every gateway made by `make_cg`."""
    root = tmp_path / "sources"
    root.mkdir()
    return root


@pytest.fixture
def make_cg(tmp_path: Path, roots: Path) -> Iterator[Callable[..., CodeGraphHttp]]:
    """`make_cg(**settings)`: a gateway of its own (over `data_dir`, if given) with `roots` allowed; builds are
    waited for before it closes."""
    made: list[CodeGraphHttp] = []

    def make(data_dir: Path | None = None, **settings: Any) -> CodeGraphHttp:
        settings.setdefault("code_source_roots", [roots])
        api = CodeGraphHttp(build_gateway(data_dir or tmp_path / f"data{len(made)}", **settings))
        made.append(api)
        return api

    yield make
    for api in made:
        api.wait()
        api.gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
        api.gw.close()


@pytest.fixture
def cg(make_cg: Callable[..., CodeGraphHttp]) -> CodeGraphHttp:
    """The default gateway: gateway key, service svc-a, `roots` allowed."""
    return make_cg()


@pytest.fixture
def project(roots: Path) -> Path:
    """A copy of the pyproj fixture under the allowed root."""
    return copy_pyproj(roots)


@pytest.fixture
def repo(roots: Path) -> GitRepo:
    """The pyproj fixture committed on `main` in a bare repository under the allowed root."""
    return GitRepo.make(roots / "git")
