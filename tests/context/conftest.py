"""One composer world per test module: composing writes nothing, so the tests of a module share it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.context.kit import World, build_world

_ENV_PREFIXES = ("MEMHUB_", "TDAI_", "V3_STRICT_ISOLATION", "MEMORY_MAX_BODY_BYTES", "MEMORY_TENCENTDB_ROOT")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The world of tests/context/kit.py, built once per module with the same clean environment as `gateway`."""
    with pytest.MonkeyPatch.context() as patch:
        # Module fixtures are set up before the function-scoped `_clean_env`: clear the settings variables here too.
        for name in list(os.environ):
            if name.startswith(_ENV_PREFIXES):
                patch.delenv(name, raising=False)
        built = build_world(tmp_path_factory.mktemp("context") / "data")
    yield built
    built.close()
