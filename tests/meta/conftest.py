"""Fixtures shared by the tests/meta modules: an in-process gateway per test, a live server per module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Gateway, build_gateway
from tests.meta.metadata_client import serve
from tests.meta.org import Org


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway of its own over tmp_path/data (in-process HTTP stack)."""
    gateway = build_gateway(tmp_path / "data")
    yield gateway
    gateway.close()


@pytest.fixture
def org(gw: Gateway) -> Org:
    """The gateway's instance `svc-a`, initialised with its system admin."""
    return Org(gw)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway per test module served over a real socket; tests that share it use their own service id."""
    built = build_gateway(tmp_path_factory.mktemp("live"))
    with serve(built) as gateway:
        yield gateway
    built.close()


@pytest.fixture
def make_org(make_gateway: Callable[..., Gateway]) -> Callable[..., Org]:
    """`make_org(name, **settings)`: instance `svc-a` on its own gateway over tmp_path/name, closed after the test."""

    def make(name: str, **settings: Any) -> Org:
        return Org(make_gateway(name, **settings))

    return make
