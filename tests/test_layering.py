"""The package layering, checked on every run: the contracts in pyproject.toml (`[tool.importlinter]`).

A failure names the broken contract (the rule) and the import chain that breaks it. Fix the import rather
than the contract: each one keeps a seam the next store backend or entry point relies on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_every_layering_contract_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    configuration.configure()  # what the `lint-imports` command does first: the config readers, the printer
    kept = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_logo=True, cache_dir=None)
    report = capsys.readouterr().out
    assert kept, f"an import breaks the layering:\n{report[report.find('Broken contracts') :]}"
    assert "BROKEN" not in report
