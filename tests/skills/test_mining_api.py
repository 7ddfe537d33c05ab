"""The mining routes over the real app and store: body rules, archive thresholds, force-archive, extract,
durability across a restart."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memhub.knowledge.skill.mining.compress import TRUNCATION_MARKER, message_bytes
from memhub.model.skills import SessionKey
from tests.conftest import SERVICE, Gateway, build_gateway
from tests.meta.org import Org
from tests.skills.mining_helpers import (
    ADD,
    EXTRACT,
    FORCE,
    IDS,
    add,
    archives,
    call,
    force,
    jobs,
    key,
    result,
)

OK_MESSAGES = [{"role": "user", "content": "hi"}]


def nothing_written(gw: Gateway) -> None:
    messages, state = gw.store.skills.buffer(key())
    assert messages == [] and state.messages == 0
    assert archives(gw) == [] and jobs(gw) == []


ADD_RULES: list[tuple[dict[str, Any], str]] = [
    ({"session_id": None}, "session_id: is required"),
    ({"session_id": ""}, "session_id: must not be empty"),
    ({"session_id": "s|1"}, "session_id: must not contain '|'"),
    ({"user_id": "u|1"}, "user_id: must not contain '|'"),
    ({"team_id": "t|1"}, "team_id: must not contain '|'"),
    ({"agent_id": "a|1"}, "agent_id: must not contain '|'"),
    ({"agent_id": None}, "agent_id: is required"),
    ({"team_id": None}, "team_id: is required"),
    ({"user_id": None}, "user_id: is required"),
    ({"space_id": "svc|x"}, "space_id: must not contain '|'"),
    ({"space_id": "another-service"}, "space_id: must be the request's service id"),
    ({"task_id": "t" * 129}, "task_id: must be at most 128 characters"),
    ({"messages": []}, "messages: must contain at least 1 items"),
    ({"messages": [{"role": "user", "content": "x"}] * 501}, "messages: must contain at most 500 items"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role: must be one of"),
    ({"messages": [{"role": "user"}]}, "messages[0].content: is required"),
    ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content: must be a string"),
    ({"messages": [OK_MESSAGES[0], {"role": "tool_call", "content": "x"}]}, "messages[1].tool_call_id: tool_call"),
    ({"messages": [{"role": "tool_result", "content": "x", "tool_name": "t"}]}, "messages[0].tool_call_id"),
    ({"messages": [{**call(1), "tool_name": "n" * 129}]}, "messages[0].tool_name: must be at most 128 characters"),
    ({"messages": [{**call(1), "tool_name": ""}]}, "messages[0].tool_name: must not be empty"),
    ({"messages": [{**call(1), "tool_call_id": "i" * 129}]}, "messages[0].tool_call_id: must be at most 128"),
    ({"idempotency_key": ""}, "idempotency_key: must be 1..255 printable ASCII characters"),
    ({"idempotency_key": "k" * 256}, "idempotency_key: must be 1..255 printable ASCII characters"),
]


@pytest.mark.parametrize(("change", "message"), ADD_RULES)
def test_conversation_add_body_rules(gateway: Gateway, change: dict[str, Any], message: str) -> None:
    body: dict[str, Any] = {**IDS, "session_id": "s1", "messages": OK_MESSAGES, **change}
    body = {k: v for k, v in body.items() if v is not None}
    envelope = gateway.fails(ADD, body, 40001, isolation={})
    assert message in envelope["message"], envelope
    nothing_written(gateway)


EXTRACT_RULES: list[tuple[dict[str, Any], str]] = [
    ({"agent_id": None}, "agent_id: is required"),
    ({"session_id": "s|x"}, "session_id: must not contain '|'"),
    ({"messages": []}, "messages: must contain at least 1 items"),
    ({"messages": [{"role": "user", "content": ""}]}, "messages[0].content: must not be empty"),
    ({"messages": [{"role": "user", "content": "x", "timestamp": "yesterday"}]}, "messages[0].timestamp: must be"),
    ({"messages": [{"role": "user", "content": "x"}] * 501}, "messages: must contain at most 500 items"),
    ({"reason": ""}, "reason: must not be empty"),
    ({"reason": "r" * 501}, "reason: must be at most 500 characters"),
    ({"options": {"max_iterations": 0}}, "options.max_iterations: must be >= 1"),
    ({"options": {"max_iterations": 65}}, "options.max_iterations: must be <= 64"),
    ({"options": {"max_iterations": 2.5}}, "options.max_iterations: must be an integer"),
]


@pytest.mark.parametrize(("change", "message"), EXTRACT_RULES)
def test_extract_body_rules(gateway: Gateway, change: dict[str, Any], message: str) -> None:
    body: dict[str, Any] = {**IDS, "messages": OK_MESSAGES, **change}
    body = {k: v for k, v in body.items() if v is not None}
    envelope = gateway.fails(EXTRACT, body, 40001, isolation={})
    assert message in envelope["message"], envelope
    nothing_written(gateway)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"session_id": None}, "session_id: is required"),
        ({"team_id": None}, "team_id: is required"),
        ({"reason": "r" * 2001}, "reason: must be at most 2000 characters"),
        ({"space_id": "another-service"}, "space_id: must be the request's service id"),
    ],
)
def test_force_archive_body_rules(gateway: Gateway, change: dict[str, Any], message: str) -> None:
    add(gateway, OK_MESSAGES)
    body = {k: v for k, v in {**IDS, "session_id": "s1", **change}.items() if v is not None}
    envelope = gateway.fails(FORCE, body, 40001, isolation={})
    assert message in envelope["message"], envelope
    assert gateway.store.skills.buffer(key())[1].messages == 1 and archives(gateway) == []


def test_nine_tool_calls_are_buffered_the_tenth_cuts_an_archive_with_its_job(gateway: Gateway) -> None:
    turn = [{"role": "user", "content": "do it"}] + [m for i in range(9) for m in (call(i), result(i))]
    assert add(gateway, turn, task_id="biz-1") == {"status": "ok"}
    _, state = gateway.store.skills.buffer(key())
    assert (state.tool_calls, state.messages) == (9, 19)
    assert archives(gateway) == []

    data = add(gateway, [call(9), result(9)], task_id="biz-1")
    assert data["status"] == "archived"
    archived = data["archived"]
    assert archived["reason"] == "tool_calls"
    (archive,) = archives(gateway)
    (job,) = jobs(gateway)
    assert archived["archive_key"] == archive.archive_id and archived["task_id"] == str(job.seq)
    assert archived["archived_at_ms"] == archive.created_ms
    assert job.kind == "skill" and job.target == archive.archive_id and job.state == "pending"
    assert len(archive.messages) == 21 and archive.task_ref == "biz-1" and archive.session_id == "s1"
    assert gateway.store.skills.buffer(key())[1].messages == 0


def test_forty_kilobytes_of_turns_cut_an_archive(gateway: Gateway) -> None:
    first = {"role": "assistant", "content": "a" * 30_000}
    # The second turn brings the buffer to one byte short of 40 KB (a message counts as its compact JSON).
    second = {"role": "assistant", "content": ""}
    second["content"] = "b" * (40 * 1024 - 1 - message_bytes(first) - message_bytes(second))
    assert add(gateway, [first]) == {"status": "ok"}
    assert add(gateway, [second]) == {"status": "ok"}
    assert gateway.store.skills.buffer(key())[1].bytes == 40 * 1024 - 1
    data = add(gateway, [{"role": "user", "content": "c"}])
    assert data["status"] == "archived" and data["archived"]["reason"] == "bytes"
    (archive,) = archives(gateway)
    assert [m["content"][0] for m in archive.messages] == ["a", "b", "c"]


def test_one_request_of_forty_kilobytes_is_compressed_and_archived(gateway: Gateway) -> None:
    add(gateway, [{"role": "user", "content": "run the build"}])
    payload = "L" * 1024 + "x" * 50_000 + "T" * 1024
    data = add(gateway, [call(1, payload), result(1, "done")])
    assert data["archived"]["reason"] == "compressed"
    (archive,) = archives(gateway)
    first, compressed, small = archive.messages
    assert first == {"role": "user", "content": "run the build"}
    assert compressed["content"] == "L" * 1024 + TRUNCATION_MARKER + "T" * 1024
    assert compressed["metadata"] == {"truncated": True, "original_bytes": len(payload)}
    assert small["content"] == "done" and "metadata" not in small


def test_sessions_agents_and_tenants_have_their_own_buffers(gateway: Gateway) -> None:
    nine = [call(i) for i in range(9)]
    add(gateway, nine, session="s1")
    add(gateway, nine, session="s2")
    gateway.ok(ADD, {**IDS, "agent_id": "agent-other", "session_id": "s1", "messages": nine}, isolation={})
    gateway.ok(ADD, {**IDS, "session_id": "s1", "messages": nine}, isolation={}, service="svc-b")
    assert archives(gateway) == []
    assert add(gateway, [call(9)], session="s2")["status"] == "archived"
    assert gateway.store.skills.buffer(key("s1"))[1].tool_calls == 9


def test_a_turn_sent_again_with_its_idempotency_key_is_buffered_once(gateway: Gateway) -> None:
    turn = [{"role": "user", "content": "deploy it"}, call(1), result(1)]
    assert add(gateway, turn, idempotency_key="turn-1") == {"status": "ok"}
    assert add(gateway, turn, idempotency_key="turn-1") == {"status": "ok", "replayed": True}
    # The header works as the body field does (as on /v3/conversation/add).
    body = {"session_id": "s1", "messages": turn}
    again = gateway.ok(ADD, body, isolation=IDS, headers={"Idempotency-Key": "turn-1"})
    assert again == {"status": "ok", "replayed": True}
    messages, state = gateway.store.skills.buffer(key())
    assert [m["content"] for m in messages] == ["deploy it", call(1)["content"], "ok"] and state.tool_calls == 1
    # Without a key, the same words are a new turn.
    add(gateway, turn)
    assert gateway.store.skills.buffer(key())[1].messages == 6


def test_a_turn_that_cut_an_archive_cuts_none_when_replayed(gateway: Gateway) -> None:
    turn = [m for i in range(10) for m in (call(i), result(i))]
    first = add(gateway, turn, idempotency_key="big-turn")
    assert first["status"] == "archived"
    assert add(gateway, turn, idempotency_key="big-turn") == {"status": "ok", "replayed": True}
    assert len(archives(gateway)) == 1 and len(jobs(gateway)) == 1
    assert gateway.store.skills.buffer(key())[0] == []


def test_an_idempotency_key_reused_for_other_messages_is_refused_and_writes_nothing(gateway: Gateway) -> None:
    add(gateway, OK_MESSAGES, idempotency_key="turn-1")
    other = {
        "session_id": "s1",
        "messages": [{"role": "user", "content": "something else"}],
        "idempotency_key": "turn-1",
    }
    envelope = gateway.fails(ADD, other, 40001, isolation=IDS)
    assert envelope["message"] == "idempotency_key: was used before in this session for other messages"
    assert [m["content"] for m in gateway.store.skills.buffer(key())[0]] == ["hi"]
    bad_header = gateway.fails(
        ADD, {"session_id": "s1", "messages": OK_MESSAGES}, 40001, isolation=IDS, headers={"Idempotency-Key": "k" * 256}
    )
    assert bad_header["message"] == "Idempotency-Key: must be 1..255 printable ASCII characters"
    assert len(gateway.store.skills.buffer(key())[0]) == 1


def test_force_archive_answers_empty_then_archives_what_is_buffered(gateway: Gateway) -> None:
    assert force(gateway) == {"status": "empty", "message": "No messages in buffer to archive"}
    assert jobs(gateway) == []
    add(gateway, [{"role": "user", "content": "hello"}, call(1), result(1)])
    data = force(gateway, reason="the user asked", task_id="biz-2")
    assert set(data) == {"status", "task_id", "archived_at_ms", "archive_key"} and data["status"] == "archived"
    (archive,) = archives(gateway)
    assert archive.archive_id == data["archive_key"] and archive.reason == "forced"
    assert archive.note == "the user asked" and archive.task_ref == "biz-2" and len(archive.messages) == 3
    assert data["task_id"] == str(jobs(gateway)[0].seq)
    assert force(gateway)["status"] == "empty"  # the buffer was emptied with the cut


def test_force_archive_takes_the_service_from_the_header_when_space_id_is_left_out(gateway: Gateway) -> None:
    add(gateway, OK_MESSAGES)
    body = {**IDS, "session_id": "s1", "space_id": SERVICE}
    assert gateway.ok(FORCE, body, isolation={})["status"] == "archived"


def test_extract_archives_directly_with_its_options(gateway: Gateway) -> None:
    add(gateway, OK_MESSAGES)  # a buffered turn of the same session is left alone
    body = {
        **IDS,
        "session_id": "s1",
        "messages": [{"role": "user", "content": "x", "timestamp": "2026-01-02T03:04:05Z"}, call(1), result(1)],
        "reason": "look at the deploy steps",
        "options": {"max_iterations": 4},
        "task_id": "biz-3",
    }
    data = gateway.ok(EXTRACT, body, isolation={})
    assert data["ok"] is True and set(data) == {"ok", "task_id", "archived_at_ms", "archive_key"}
    (archive,) = archives(gateway)
    assert archive.archive_id == data["archive_key"] and archive.reason == "direct"
    assert archive.max_iterations == 4 and archive.note == "look at the deploy steps"
    assert archive.messages[0]["timestamp"] == "2026-01-02T03:04:05Z"
    assert gateway.store.skills.buffer(key())[1].messages == 1

    data = gateway.ok(EXTRACT, {**IDS, "messages": OK_MESSAGES}, isolation={})
    assert archives(gateway)[0].session_id.startswith("sx-")  # its own session when none is named
    assert len(jobs(gateway)) == 2 and data["task_id"] != ""


def test_extract_compresses_only_from_eighty_kilobytes(gateway: Gateway) -> None:
    big = [call(i, "p" * 30_000) for i in range(3)]
    gateway.ok(EXTRACT, {**IDS, "messages": big}, isolation={})
    assert all(m["metadata"]["truncated"] for m in archives(gateway)[0].messages)
    gateway.ok(EXTRACT, {**IDS, "messages": big[:2]}, isolation={})
    assert all("metadata" not in m for m in archives(gateway)[0].messages)


def test_a_user_key_buffers_only_as_its_own_user_through_an_agent_it_may_use(gateway: Gateway) -> None:
    org = Org(gateway)
    alice = org.user("alice")
    team = org.team(alice)
    agent = org.agent(alice, team)
    mine = {"team_id": team, "agent_id": agent, "user_id": alice.user_id, "session_id": "s1", "messages": OK_MESSAGES}
    assert org.ok(alice, ADD, mine) == {"status": "ok"}
    envelope = org.fails(alice, ADD, {**mine, "user_id": "someone-else"}, 403)
    assert "user_id" in envelope["message"]
    envelope = org.fails(alice, FORCE, {**mine, "agent_id": "not-an-agent"}, 403)
    assert "agent_id" in envelope["message"]
    dave = org.user("dave")  # not a member of alice's team
    for path in (ADD, FORCE, EXTRACT):
        envelope = org.fails(dave, path, {**mine, "user_id": dave.user_id}, 403)
        assert envelope["message"] == "team_id: not a team this user is an active member of"
    own = SessionKey(SERVICE, team, agent, alice.user_id, "s1")
    assert gateway.store.skills.buffer(own)[1].messages == 1
    assert gateway.store.skills.buffer(SessionKey(SERVICE, team, agent, "someone-else", "s1"))[1].messages == 0
    assert archives(gateway) == [] and jobs(gateway) == []


def test_a_buffer_and_an_archive_survive_a_restart_and_the_job_runs_after_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    gw = build_gateway(data_dir)
    add(gw, [call(i) for i in range(9)])
    gw.close()

    gw = build_gateway(data_dir)
    archived = add(gw, [call(9)])["archived"]  # the nine calls buffered before the restart count
    (archive,) = archives(gw)
    assert len(archive.messages) == 10
    gw.close()

    gw = build_gateway(data_dir)
    try:
        (job,) = jobs(gw, "pending")
        assert job.target == archived["archive_key"]
        assert gw.pipeline.drain() == 1
        assert [j.state for j in jobs(gw)] == ["done"]
    finally:
        gw.close()


def test_concurrent_turns_of_one_session_lose_nothing_and_cut_one_archive(gateway: Gateway) -> None:
    mining = gateway.client.app.state.hub.skill_mining  # type: ignore[attr-defined]
    barrier = threading.Barrier(10)

    def turn(i: int) -> str:
        barrier.wait()
        return mining.add(key(), [call(i)], None).status

    with ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(turn, range(10)))
    assert sorted(statuses) == ["archived"] + ["ok"] * 9
    (archive,) = archives(gateway)
    assert sorted(m["tool_call_id"] for m in archive.messages) == sorted(f"c{i}" for i in range(10))
    assert gateway.store.skills.buffer(key())[1].messages == 0
