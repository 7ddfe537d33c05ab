"""A skill through `/v3/tools/list` and `/v3/tools/call` (its `skl-…` id picks the kind): `skill_view` of the
head or a version, `skill_read_file`, the shared check order (400 id → 404 resource → 403 tool → 400 params),
read refusals as tool errors, and the access rules of the skill routes. Skills stay out of the knowledge registry:
`knowledge/create` refuses the type and `<knowledge_tools>` neither offers a skill nor lets a skill binding
narrow what it offers. The composer's skill notes follow the same access rules."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Gateway, build_gateway
from tests.meta.org import Org
from tests.skills.search_kit import Skills, binary_file, skill_md, text_file

NOT_FOUND = "knowledge resource not found"
OWN_URL = "http://127.0.0.1:8420/v3"  # the default public knowledge URL of a gateway on the default address


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    gateway = build_gateway(tmp_path / "data", pipeline_enabled=False)
    yield gateway
    gateway.close()


def ok(skills: Skills, route: str, body: dict[str, Any]) -> Any:
    status, envelope = skills.tools(route, body)
    assert status == 200 and envelope["code"] == 0, envelope
    return envelope["data"]


def test_tools_list_and_call_on_a_skill(gw: Gateway) -> None:
    skills = Skills(gw)
    png = b"\x89PNG\r\n\x1a\n\x00\xff"
    created = skills.create(
        "deploy-app",
        "Deploy the app",
        "# Steps\n1. run scripts/deploy.sh\n",
        resources=[text_file("scripts/deploy.sh", "#!/bin/sh\necho deploy\n"), binary_file("logo.png", png)],
    )
    skill_id = created["skill_id"]
    listed = ok(skills, "list", {"knowledge_id": skill_id})
    assert {k: listed[k] for k in ("knowledge_id", "type", "name", "summary", "status", "stale")} == {
        "knowledge_id": skill_id,
        "type": "skill",
        "name": "deploy-app",
        "summary": "Deploy the app",
        "status": "active",
        "stale": False,
    }
    assert [t["name"] for t in listed["tools"]] == ["skill_view", "skill_read_file"]
    path_param = listed["tools"][1]["params"]["path"]
    assert path_param["type"] == "string" and path_param["required"] is True

    view = ok(skills, "call", {"knowledge_id": skill_id, "tool_name": "skill_view", "params": {}})
    assert view["content"] == skill_md("deploy-app", "Deploy the app", "# Steps\n1. run scripts/deploy.sh\n")
    assert view["version"] == 1 and [f["path"] for f in view["manifest"]] == ["logo.png", "scripts/deploy.sh"]
    read = {"knowledge_id": skill_id, "tool_name": "skill_read_file"}
    script = ok(skills, "call", {**read, "params": {"path": "scripts/deploy.sh"}})
    assert script["content"] == "#!/bin/sh\necho deploy\n" and script["encoding"] == "utf-8"
    logo = ok(skills, "call", {**read, "params": {"path": "logo.png", "encoding": "base64"}})
    assert base64.b64decode(logo["content"]) == png

    # A past version stays readable.
    new_body = skill_md("deploy-app", "Deploy the app, v2")
    skills.ok("skill/update", {"skill_id": skill_id, "expected_version": 1, "content": new_body})
    assert ok(skills, "call", {**read, "tool_name": "skill_view", "params": {}})["version"] == 2
    old = ok(skills, "call", {**read, "tool_name": "skill_view", "params": {"version": 1}})
    assert old["version"] == 1 and old["description"] == "Deploy the app"

    # What cannot be read is a tool error an agent can act on, with code 0.
    for params, words in (
        ({"path": "logo.png"}, "not UTF-8 text"),
        ({"path": "missing.txt"}, "not in manifest"),
        ({"path": "scripts/deploy.sh", "version": 9}, "version 9 not found"),
    ):
        data = ok(skills, "call", {**read, "params": params})
        assert data["isError"] is True and words in data["text"], (params, data)


def test_the_check_order_of_the_shared_tool_routes(gw: Gateway) -> None:
    skills = Skills(gw)
    skill_id = skills.create("deploy-app", "Deploy the app")["skill_id"]
    status, envelope = skills.tools("list", {"knowledge_id": "skl-short"})
    assert status == 400 and envelope["message"].startswith("knowledge_id: invalid knowledge_id format")
    status, envelope = skills.tools("list", {"knowledge_id": "skl-AAAAAAAAAAAA"})
    assert (status, envelope["message"]) == (404, NOT_FOUND)
    status, envelope = skills.tools("call", {"knowledge_id": skill_id, "tool_name": "skill_create", "params": {}})
    assert status == 403 and f"for skill resource '{skill_id}'" in envelope["message"]
    body = {"knowledge_id": skill_id, "tool_name": "skill_read_file", "params": {"path": "a", "encoding": "hex"}}
    status, envelope = skills.tools("call", body)
    assert (status, envelope["message"]) == (400, "invalid params: encoding: must be one of utf-8, base64")
    # A deleted skill is not found.
    skills.ok("skill/delete", {"skill_id": skill_id, "expected_version": 1})
    assert skills.tools("list", {"knowledge_id": skill_id})[0] == 404


def test_a_user_key_reaches_only_skills_it_may_read(gw: Gateway) -> None:
    org = Org(gw)
    alice, bob, carol = org.users("alice", "bob", "carol")
    team = org.staffed_team(alice, "eng", (bob, "member"))
    agent = org.agent(alice, team, "alice-bot", visibility="team")
    as_alice = Skills(gw, {"team_id": team, "agent_id": agent}, org, alice)
    skill_id = as_alice.create("secret-recipe", "How alice brews it")["skill_id"]
    view = {"knowledge_id": skill_id, "tool_name": "skill_view", "params": {}}
    assert ok(as_alice, "call", view)["name"] == "secret-recipe"
    for who in (bob, carol):  # private to alice; carol is not even in the team
        other = Skills(gw, {}, org, who)
        assert other.tools("list", {"knowledge_id": skill_id})[0] == 404
        assert other.tools("call", view)[1]["message"] == NOT_FOUND
    org.ok(alice, "/v3/meta/asset/update", {"asset_id": skill_id, "visibility": "team"})
    assert ok(Skills(gw, {}, org, bob), "call", view)["name"] == "secret-recipe"
    assert Skills(gw, {}, org, carol).tools("call", view)[0] == 404


def test_skills_stay_out_of_the_knowledge_registry_and_its_block(gw: Gateway) -> None:
    org = Org(gw)
    alice = org.user("alice")
    team = org.team(alice, "eng")
    agent = org.agent(alice, team, "alice-bot", visibility="team")
    as_alice = Skills(gw, {"team_id": team, "agent_id": agent}, org, alice)
    skill_id = as_alice.create("deploy-app", "Deploy the app")["skill_id"]  # bound to the agent at create
    entry = {"knowledge_id": skill_id, "type": "skill", "service_url": OWN_URL, "name": "deploy-app", "team_id": team}
    envelope = org.fails(alice, "/v3/knowledge/create", entry, 400)
    assert envelope["message"].startswith("type: ")
    wiki = {**entry, "knowledge_id": "wiki-abcd1234", "type": "wiki", "name": "handbook"}
    org.ok(alice, "/v3/knowledge/create", wiki)
    # The agent's only bindings are its skill (and its memory): the team's wiki is still offered, no skill is.
    block = org.ok(alice, "/v3/knowledge/tools-block", {"team_id": team, "agent_id": agent})
    assert block["resources"] == ["wiki-abcd1234"]
    assert 'type="skill"' not in block["text"] and skill_id not in block["text"]


def test_the_composer_notes_only_skills_the_caller_may_read(gw: Gateway) -> None:
    org = Org(gw)
    alice, bob = org.users("alice", "bob")
    team = org.staffed_team(alice, "eng", (bob, "member"))
    alice_bot = org.agent(alice, team, "alice-bot", visibility="team")
    bob_bot = org.agent(bob, team, "bob-bot", visibility="team")
    as_alice = Skills(gw, {"team_id": team, "agent_id": alice_bot}, org, alice)
    body = "# Steps\n1. Drain the node.\n2. Rotate the certificate.\n"
    skill_id = as_alice.create("cert-rotation", "Rotate TLS certificates on a node", body)["skill_id"]

    def compose(who: Any, agent: str) -> dict[str, Any]:
        request = {"team_id": team, "agent_id": agent, "user_id": who.user_id, "query": "how do I rotate certificates?"}
        return org.ok(who, "/v3/context/compose", request)

    composed = compose(alice, alice_bot)
    header = "[skill: cert-rotation (author: alice)]"
    assert header in composed["system"] and "Drain the node." in composed["system"]
    assert any(s["id"] == skill_id for s in composed["sources"])
    # Private to alice: bob's turn gets no note of it.
    assert "cert-rotation" not in compose(bob, bob_bot)["system"]
    org.ok(alice, "/v3/meta/asset/update", {"asset_id": skill_id, "visibility": "team"})
    assert header in compose(bob, bob_bot)["system"]
