"""Fixtures for the skill tests: a gateway over a real SQLite file, the pipeline off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Gateway, build_gateway


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    gateway = build_gateway(tmp_path / "data", pipeline_enabled=False)
    yield gateway
    gateway.close()
