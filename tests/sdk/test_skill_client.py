"""SkillClient / AsyncSkillClient: every call's request and answer against the real gateway on a socket.

The gateway is memhub's app under uvicorn (tests/meta/metadata_client.serve); `Recorder` is the real HTTP
transport, recording what went on the wire. Nothing on the server side is mocked. Each scenario runs for the
sync and the async client, so the two stay alike.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memhub.sdk import (
    SKILL_ERROR_CODE,
    AsyncSkillClient,
    ParamError,
    SkillClient,
    TDAMError,
    encode_base64,
    encode_utf8,
)
from tests.conftest import GATEWAY_KEY, ISO, SERVICE, build_gateway
from tests.meta.metadata_client import Recorder, serve

pytestmark = pytest.mark.timeout(300)

Client = SkillClient | AsyncSkillClient
KINDS = pytest.mark.parametrize("kind", [SkillClient, AsyncSkillClient], ids=["sync", "async"])
SKILL_MD = "---\nname: py-tips\ndescription: Python tips for the team\n---\n# Tips\n\nUse pathlib for paths.\n"
BLOB = b"\x00\x01\xfe\xff binary"
# The original SDK's calls, with their positional arguments; memhub adds the last three.
ORIGINAL_CALLS = {
    "create": [],
    "update": ["skill_id"],
    "patch": ["skill_id"],
    "delete": ["skill_id"],
    "get": ["skill_id"],
    "list": [],
    "search": ["query"],
    "versions": ["skill_id"],
    "write_files": ["skill_id"],
    "remove_files": ["skill_id"],
    "read_file": ["skill_id", "path"],
    "listing": [],
    "extract": ["messages"],
    "conversation_add": [],
    "conversation_force_archive": [],
    "get_by_name": ["skill_name"],
    "export": ["skill_id"],
    "publish": ["skill_id"],
}


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[str]:
    built = build_gateway(tmp_path / "data")
    with serve(built) as gw:
        yield str(gw.client.base_url)
    built.close()


async def settle(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


def connect(kind: type[Client], endpoint: str, recorder: Recorder, **defaults: str) -> Client:
    return kind(endpoint, GATEWAY_KEY, SERVICE, **(defaults or ISO), transport=recorder)


# ---------------------------------------------------------------------------- the client alone


def test_the_original_calls_with_their_arguments_in_both_clients() -> None:
    for name, positional in ORIGINAL_CALLS.items():
        sync, async_ = getattr(SkillClient, name), getattr(AsyncSkillClient, name)
        assert inspect.signature(sync).parameters == inspect.signature(async_).parameters, name
        assert inspect.iscoroutinefunction(async_) and not inspect.iscoroutinefunction(sync), name
        params = list(inspect.signature(sync).parameters.values())[1:]
        assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == positional, name
    # with_defaults clones; it is no call, so it stays synchronous in the async client
    assert not inspect.iscoroutinefunction(AsyncSkillClient.with_defaults)
    assert SkillClient.encode_utf8 is encode_utf8 and AsyncSkillClient.encode_base64 is encode_base64
    assert SKILL_ERROR_CODE["VERSION_STALE"] == 40901 and SKILL_ERROR_CODE["NOT_FOUND"] == 40401
    assert SKILL_ERROR_CODE["QUOTA_EXCEEDED"] == 4291 and SKILL_ERROR_CODE["COS_REQUIRED"] == 50303


def test_resource_payloads() -> None:
    assert encode_utf8("a.md", "# A") == {"path": "a.md", "content": "# A", "encoding": "utf-8"}
    assert encode_utf8("run.sh", "x", mime_type="text/x-sh", is_executable=True) == {
        "path": "run.sh", "content": "x", "encoding": "utf-8", "mime_type": "text/x-sh", "is_executable": True,
    }  # fmt: skip
    raw = encode_base64("b.bin", BLOB)
    assert raw == {"path": "b.bin", "content": base64.b64encode(BLOB).decode(), "encoding": "base64"}
    assert encode_base64("b.bin", bytearray(BLOB)) == raw == encode_base64("b.bin", raw["content"])


@KINDS
def test_local_checks_send_nothing(kind: type[Client]) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        bare = kind("http://127.0.0.1:9", GATEWAY_KEY, SERVICE, transport=recorder)
        with pytest.raises(ParamError, match="extract requires at least one message"):
            await settle(bare.extract([], team_id="t", agent_id="a", user_id="u"))
        with pytest.raises(ParamError, match="extract requires non-empty user_id, team_id, agent_id"):
            await settle(bare.extract([{"role": "user", "content": "hi"}]))
        partly = bare.with_defaults(team_id="t", user_id="u")
        with pytest.raises(ParamError, match="extract requires non-empty agent_id"):
            await settle(partly.extract([{"role": "user", "content": "hi"}]))
        with pytest.raises(ParamError, match="get_by_name requires non-empty agent_id"):
            await settle(partly.get_by_name("py-tips"))
        assert recorder.sent == []
        await settle(bare.close())

    asyncio.run(scenario())
    with pytest.raises(ParamError, match="service_id must be provided"):
        kind("http://127.0.0.1:9", GATEWAY_KEY, None)
    with pytest.raises(ParamError, match="team_id must be a string"):
        kind("http://127.0.0.1:9", GATEWAY_KEY, SERVICE, team_id=7)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- against the gateway


async def crud(kind: type[Client], endpoint: str) -> None:
    recorder = Recorder()
    skills = connect(kind, endpoint, recorder)
    files = [encode_utf8("scripts/run.sh", "echo hi\n", is_executable=True), encode_base64("data/blob.bin", BLOB)]
    made = await settle(skills.create(name="py-tips", content=SKILL_MD, resources=files, metadata={"by": "sdk"}))
    sid = made["skill_id"]
    assert sid.startswith("skl-") and made["version"] == 1 and made["is_head"] is True
    assert (made["name"], made["description"], made["status"]) == ("py-tips", "Python tips for the team", "active")
    assert (made["team_id"], made["owner_agent_id"], made["metadata"]) == ("team-1", "agent-1", {"by": "sdk"})

    got = await settle(skills.get(sid))
    assert got["content"] == SKILL_MD and got["version"] == 1
    manifest = {f["path"]: f for f in got["manifest"]}
    assert set(manifest) == {"scripts/run.sh", "data/blob.bin"}
    assert manifest["scripts/run.sh"]["is_executable"] is True and manifest["data/blob.bin"]["size_bytes"] == len(BLOB)
    bare = await settle(skills.get(sid, include_content=False, include_manifest=False))
    assert "content" not in bare and "manifest" not in bare and bare["skill_id"] == sid
    by_name = await settle(skills.get_by_name("py-tips"))
    assert by_name["skill_id"] == sid and by_name["content"] == SKILL_MD
    listed = await settle(skills.list(filters={"name_prefix": "py"}, pagination={"limit": 10}))
    assert [s["skill_id"] for s in listed["items"]] == [sid] and listed["total"] == 1

    patched = await settle(skills.patch(sid, expected_version=1, old_string="Use pathlib", new_string="Prefer pathlib"))
    assert patched["version"] == 2
    with pytest.raises(TDAMError) as stale:
        await settle(skills.update(sid, expected_version=1, content=SKILL_MD))
    assert stale.value.code == SKILL_ERROR_CODE["VERSION_STALE"] and stale.value.data["current_version"] == 2
    assert stale.value.request_id.startswith("req-") and stale.value.details == stale.value.data
    updated = await settle(skills.update(sid, expected_version=2, content=SKILL_MD + "\nAlso: f-strings.\n"))
    assert updated["version"] == 3
    written = await settle(skills.write_files(sid, expected_version=3, files=[encode_utf8("docs/notes.md", "# N\n")]))
    assert written["version"] == 4
    blob = await settle(skills.read_file(sid, "data/blob.bin", encoding="base64"))
    assert base64.b64decode(blob["content"]) == BLOB and blob["encoding"] == "base64"
    notes = await settle(skills.read_file(sid, "docs/notes.md", version=4))
    assert notes["content"] == "# N\n" and notes["version"] == 4
    removed = await settle(skills.remove_files(sid, expected_version=4, paths=["docs/notes.md"]))
    assert removed["version"] == 5
    history = await settle(skills.versions(sid, pagination={"limit": 2}))
    assert [v["version"] for v in history["items"]] == [5, 4] and history["total"] == 5
    first = await settle(skills.get(sid, version=1))
    assert first["content"] == SKILL_MD and first["is_head"] is False

    exported = await settle(skills.export(sid))
    assert isinstance(exported, bytes)
    with zipfile.ZipFile(io.BytesIO(exported)) as archive:
        assert set(archive.namelist()) == {"py-tips/SKILL.md", "py-tips/scripts/run.sh", "py-tips/data/blob.bin"}
        assert archive.read("py-tips/data/blob.bin") == BLOB
    raw = await settle(skills.export(sid, version=1, raw=True))
    assert (raw["version"], raw["filename"], raw["name"]) == (1, "py-tips.zip", "py-tips")
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(raw["zip_base64"]))) as archive:
        assert archive.read("py-tips/SKILL.md").decode() == SKILL_MD

    published = await settle(skills.publish(sid, expected_version=5))
    assert published["status"] == "active" and published["changed"] is False  # only candidates change
    with pytest.raises(TDAMError) as duplicate:
        await settle(skills.create(name="py-tips", content=SKILL_MD))
    assert duplicate.value.code == SKILL_ERROR_CODE["NAME_DUPLICATE"]
    await settle(skills.delete(sid, expected_version=5))
    with pytest.raises(TDAMError) as gone:
        await settle(skills.get(sid))
    assert gone.value.code == SKILL_ERROR_CODE["NOT_FOUND"] and gone.value.request_id.startswith("req-")

    v3 = "/v3/skill/"
    assert recorder.calls == [
        (v3 + "create", {**ISO, "name": "py-tips", "content": SKILL_MD, "resources": files, "metadata": {"by": "sdk"}}),
        (v3 + "get", {**ISO, "skill_id": sid}),
        (v3 + "get", {**ISO, "skill_id": sid, "include_content": False, "include_manifest": False}),
        (v3 + "get-by-name", {**ISO, "skill_name": "py-tips"}),
        (v3 + "list", {**ISO, "filters": {"name_prefix": "py"}, "pagination": {"limit": 10}}),
        (v3 + "patch", {**ISO, "skill_id": sid, "expected_version": 1, "old_string": "Use pathlib",
                        "new_string": "Prefer pathlib"}),
        (v3 + "update", {**ISO, "skill_id": sid, "expected_version": 1, "content": SKILL_MD}),
        (v3 + "update", {**ISO, "skill_id": sid, "expected_version": 2, "content": SKILL_MD + "\nAlso: f-strings.\n"}),
        (v3 + "files/write", {**ISO, "skill_id": sid, "expected_version": 3, "files": [
            {"path": "docs/notes.md", "content": "# N\n", "encoding": "utf-8"}]}),
        (v3 + "files/read", {**ISO, "skill_id": sid, "path": "data/blob.bin", "encoding": "base64"}),
        (v3 + "files/read", {**ISO, "skill_id": sid, "version": 4, "path": "docs/notes.md"}),
        (v3 + "files/remove", {**ISO, "skill_id": sid, "expected_version": 4, "paths": ["docs/notes.md"]}),
        (v3 + "versions", {**ISO, "skill_id": sid, "pagination": {"limit": 2}}),
        (v3 + "get", {**ISO, "skill_id": sid, "version": 1}),
        (v3 + "export", {**ISO, "skill_id": sid}),
        (v3 + "export", {**ISO, "skill_id": sid, "version": 1}),
        (v3 + "publish", {**ISO, "skill_id": sid, "expected_version": 5}),
        (v3 + "create", {**ISO, "name": "py-tips", "content": SKILL_MD}),
        (v3 + "delete", {**ISO, "skill_id": sid, "expected_version": 5}),
        (v3 + "get", {**ISO, "skill_id": sid}),
    ]  # fmt: skip
    headers = recorder.sent[0].headers
    assert headers["authorization"] == f"Bearer {GATEWAY_KEY}" and headers["x-tdai-service-id"] == SERVICE
    await settle(skills.close())


@KINDS
def test_crud_files_versions_export_and_errors(kind: type[Client], endpoint: str) -> None:
    asyncio.run(crud(kind, endpoint))


async def defaults(kind: type[Client], endpoint: str) -> None:
    recorder = Recorder()
    skills = connect(kind, endpoint, recorder)
    other_agent = skills.with_defaults(agent_id="agent-2")
    assert other_agent.defaults.agent_id == "agent-2" and skills.defaults.agent_id == "agent-1"
    assert other_agent.defaults.team_id == "team-1" and other_agent.defaults.user_id == "user-1"
    made = await settle(other_agent.create(name="py-tips", content=SKILL_MD))
    assert made["owner_agent_id"] == "agent-2"
    # a call's ids win over the defaults; the clone sent through the same connection
    mine = await settle(skills.create(name="py-tips", content=SKILL_MD, user_id="user-9"))
    assert mine["owner_agent_id"] == "agent-1" and mine["owner_user_id"] == "user-9"
    # an agent lists its own skills; without an agent the team's (None keeps a default: it never clears one)
    assert [s["skill_id"] for s in (await settle(skills.list()))["items"]] == [mine["skill_id"]]
    team = connect(kind, endpoint, recorder, team_id="team-1", user_id="user-1")
    listed = await settle(team.list(pagination={"limit": 5}))
    assert {s["skill_id"] for s in listed["items"]} == {made["skill_id"], mine["skill_id"]}
    # a write through another agent than the owner is refused
    with pytest.raises(TDAMError) as not_owner:
        await settle(skills.delete(made["skill_id"], expected_version=1))
    assert not_owner.value.code == SKILL_ERROR_CODE["NOT_OWNER"]
    assert [body for _, body in recorder.calls[:2]] == [
        {**ISO, "agent_id": "agent-2", "name": "py-tips", "content": SKILL_MD},
        {**ISO, "user_id": "user-9", "name": "py-tips", "content": SKILL_MD},
    ]
    assert recorder.calls[3][1] == {"team_id": "team-1", "user_id": "user-1", "pagination": {"limit": 5}}
    await settle(skills.close())
    await settle(team.close())


@KINDS
def test_with_defaults_and_per_call_ids(kind: type[Client], endpoint: str) -> None:
    asyncio.run(defaults(kind, endpoint))


async def search_and_listing(kind: type[Client], endpoint: str) -> None:
    recorder = Recorder()
    skills = connect(kind, endpoint, recorder)
    made = await settle(skills.create(name="py-tips", content=SKILL_MD))
    other = "---\nname: sql-review\ndescription: Reviewing SQL migrations\n---\n# SQL\n\nCheck the locks.\n"
    await settle(skills.create(name="sql-review", content=other))
    found = await settle(skills.search("pathlib", top_k=5, mode="bm25"))
    assert found["items"][0]["skill_id"] == made["skill_id"]
    team = await settle(skills.search("migrations", scope="team"))
    assert team["items"][0]["name"] == "sql-review"
    listing = await settle(skills.listing(query="python paths", char_budget=2000))
    assert listing["listing"].startswith("<available_skills>") and listing["listing"].endswith("</available_skills>")
    assert "- py-tips: Python tips for the team" in listing["listing"]
    assert listing["hits"][0] == {
        "skill_id": made["skill_id"],
        "version": 1,
        "name": "py-tips",
        "author_user_id": made["owner_user_id"],
    }
    everything = await settle(skills.listing())
    assert {h["name"] for h in everything["hits"]} == {"py-tips", "sql-review"}
    assert recorder.calls[2:] == [
        ("/v3/skill/search", {**ISO, "query": "pathlib", "top_k": 5, "mode": "bm25"}),
        ("/v3/skill/search", {**ISO, "query": "migrations", "scope": "team"}),
        ("/v3/skill/listing", {**ISO, "query": "python paths", "char_budget": 2000}),
        ("/v3/skill/listing", ISO),
    ]
    await settle(skills.close())


@KINDS
def test_search_and_listing(kind: type[Client], endpoint: str) -> None:
    asyncio.run(search_and_listing(kind, endpoint))


TURN = [
    {"role": "user", "content": "Deploy the docs site"},
    {"role": "tool_call", "content": '{"cmd": "make docs"}', "tool_name": "shell", "tool_call_id": "c1"},
    {"role": "tool_result", "content": "built 12 pages", "tool_call_id": "c1"},
    {"role": "assistant", "content": "The docs are built and deployed."},
]


async def mining(kind: type[Client], endpoint: str) -> None:
    recorder = Recorder()
    # Defaults that the conversation calls must NOT use: their ids are their own arguments.
    skills = connect(kind, endpoint, recorder, team_id="team-x", agent_id="agent-x", user_id="user-x", task_id="t-x")
    ids = {"user_id": "user-1", "team_id": "team-1", "agent_id": "agent-1"}
    added = await settle(skills.conversation_add(session_id="s-1", messages=TURN, **ids))
    assert added["status"] == "ok" and "archived" not in added
    archived = await settle(skills.conversation_force_archive(session_id="s-1", reason="end of task", **ids))
    assert archived["status"] == "archived" and archived["task_id"] and archived["archive_key"]
    assert isinstance(archived["archived_at_ms"], int)
    empty = await settle(skills.conversation_force_archive(session_id="s-1", **ids))
    assert empty["status"] == "empty" and empty["message"]
    extracted = await settle(skills.with_defaults(**ids).extract(TURN, session_id="s-2", reason="worth keeping"))
    assert extracted["task_id"] and extracted["archive_key"] and isinstance(extracted["archived_at_ms"], int)
    with pytest.raises(TDAMError) as bad:
        await settle(skills.conversation_add(session_id="s|1", messages=TURN, **ids))
    assert bad.value.code == SKILL_ERROR_CODE["BAD_REQUEST"] and "session_id" in bad.value.message
    assert recorder.calls == [
        ("/v3/skill/conversation/add", {"session_id": "s-1", **ids, "messages": TURN}),
        ("/v3/skill/conversation/force-archive", {"session_id": "s-1", **ids, "reason": "end of task"}),
        ("/v3/skill/conversation/force-archive", {"session_id": "s-1", **ids}),
        ("/v3/skill/extract", {**ids, "task_id": "t-x", "session_id": "s-2", "messages": TURN,
                               "reason": "worth keeping"}),
        ("/v3/skill/conversation/add", {"session_id": "s|1", **ids, "messages": TURN}),
    ]  # fmt: skip
    await settle(skills.close())


@KINDS
def test_conversation_add_force_archive_and_extract(kind: type[Client], endpoint: str) -> None:
    asyncio.run(mining(kind, endpoint))
