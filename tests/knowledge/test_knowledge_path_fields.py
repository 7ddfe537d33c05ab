"""Path fields of wiki and code-graph requests with a NUL character: a 400 naming the field, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import build_gateway
from tests.knowledge.knowledge_http import KnowledgeHttp

TEAM = "team-paths"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[KnowledgeHttp]:
    roots = tmp_path / "sources"
    (roots / "docs").mkdir(parents=True)
    gw = build_gateway(tmp_path / "data", wiki_source_roots=[roots], code_source_roots=[roots])
    yield KnowledgeHttp(gw, team=TEAM)
    gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    gw.close()


def test_a_nul_in_a_local_source_path_is_400_naming_the_field(api: KnowledgeHttp, tmp_path: Path) -> None:
    inside = str(tmp_path / "sources" / "docs")
    for route, body in (
        ("wiki/create", {"team_id": TEAM, "name": "nul", "source_path": inside + "\x00/etc"}),
        ("code-graph/create", {"team_id": TEAM, "source_path": inside + "\x00/etc"}),
    ):
        api.fails(route, body, 400, "source_path: must not contain NUL characters")
    api.fails(
        "code-graph/create",
        {"team_id": TEAM, "repo_url": "file://" + inside + "%00/etc"},
        400,
        "repo_url: a file:// URL must not contain NUL characters (%00)",
    )
    assert api.ok("wiki/list", {"team_id": TEAM})["total"] == 0  # nothing written
    assert api.ok("code-graph/list", {"team_id": TEAM})["total"] == 0


def test_a_nul_in_a_source_file_name_is_refused_or_not_found(api: KnowledgeHttp) -> None:
    wiki_id = api.ok("wiki/create", {"team_id": TEAM, "name": "uploads"}, status=201)["wiki_id"]
    api.fails(
        "wiki/raw/write",
        {"team_id": TEAM, "wiki_id": wiki_id, "files": [{"filename": "a\x00.md", "content": "# A"}]},
        400,
        "files[0].filename: must not contain control characters or backslashes",
    )
    (item,) = api.ok("wiki/raw/read", {"wiki_id": wiki_id, "filenames": ["a\x00.md"]})["items"]
    assert item == {"filename": "a\x00.md", "not_found": True}
