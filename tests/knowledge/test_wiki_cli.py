"""`memhub wiki index`: generate the two-layer index of a folder, or check it."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from memhub.cli import app

FIXTURE = Path(__file__).parent / "fixtures" / "wiki"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    shutil.copytree(FIXTURE, root)
    return root


def test_index_regenerates_the_fixture_byte_for_byte_and_check_accepts_it(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("index.json")}
    for path in before:
        (root / path).unlink()
    result = CliRunner().invoke(app, ["wiki", "index", str(root)])
    assert result.exit_code == 0, result.output
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("index.json")}
    assert after == before
    checked = CliRunner().invoke(app, ["wiki", "index", str(root), "--check"])
    assert checked.exit_code == 0 and "index is valid" in checked.output


def test_check_names_every_problem_and_fails(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "index.json").write_text('{"schema_version": 1, "themes": [], "documents": [], "colour": "red"}')
    result = CliRunner().invoke(app, ["wiki", "index", str(root), "--check"])
    assert result.exit_code == 1
    assert "index.json: colour:" in result.output


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["wiki", "index", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "is not a directory" in result.output
