"""A wiki's registration follows the server's public URL: a restart on another address re-points it.

A registration this server does not serve keeps its own URL, and is offered to agents only while that URL's origin
is allow-listed (`MEMHUB_KNOWLEDGE_URL_ALLOWLIST`): the block tells agents to send their key there.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import build_gateway

ELSEWHERE = "http://elsewhere.example"


def test_registrations_follow_a_new_public_url_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = build_gateway(data, knowledge_public_url="http://a.example/v3", knowledge_url_allowlist=[ELSEWHERE])
    try:
        wiki_id = first.post("/v3/wiki/create", {"team_id": "t", "name": "n"}).json()["data"]["wiki_id"]
        files = [{"filename": "a.md", "content": "# A\n\nText."}]
        first.ok("/v3/wiki/raw/write", {"team_id": "t", "wiki_id": wiki_id, "files": files})
        first.ok("/v3/wiki/ingest", {"wiki_id": wiki_id, "wait": True})
        first.ok(
            "/v3/knowledge/create",
            {
                "knowledge_id": "ext-wiki",
                "type": "wiki",
                "service_url": f"{ELSEWHERE}/v3",
                "name": "registered by hand",
                "team_id": "t",
            },
        )
        assert first.ok("/v3/knowledge/get", {"knowledge_id": wiki_id, "team_id": "t"})["service_url"] == (
            "http://a.example/v3"
        )
        offered = first.ok("/v3/knowledge/tools-block", {"team_id": "t"})["resources"]
        assert offered == sorted(["ext-wiki", wiki_id])
    finally:
        first.close()
    second = build_gateway(data, knowledge_public_url="http://b.example/v3")
    try:
        assert second.client.app.state.knowledge.wikis.resume() == 0  # nothing was left building
        moved = second.ok("/v3/knowledge/get", {"knowledge_id": wiki_id, "team_id": "t"})
        assert moved["service_url"] == "http://b.example/v3"
        # A registration this server does not serve keeps its own URL …
        other = second.ok("/v3/knowledge/get", {"knowledge_id": "ext-wiki", "team_id": "t"})
        assert other["service_url"] == f"{ELSEWHERE}/v3"
        # … but without the allow-list its origin is no longer trusted: only the local wiki is offered.
        block = second.ok("/v3/knowledge/tools-block", {"team_id": "t"})
        assert block["resources"] == [wiki_id]
        assert "http://b.example/v3" in block["text"] and "elsewhere" not in block["text"]
    finally:
        second.close()
