"""The offline miner end to end (no LLM): real tool-call traces through conversation/add, the pipeline's `skill`
jobs drained in this thread, candidates read back through the skill routes."""

from __future__ import annotations

from tests.conftest import Gateway
from tests.skills.mining_helpers import IDS, active, add, archives, candidates, force, jobs
from tests.skills.traces import chatter, fix_failing_test

STEPS = [
    "bash(command)[pytest]",
    "read_file(path)",
    "edit_file(new,old,path)",
    "bash(command)[pytest]",
    "bash(command)[git commit]",
]


def session(gw: Gateway, name: str, messages: list[dict[str, object]]) -> str:
    """One session's work, buffered and then archived; returns the archive id."""
    add(gw, messages, session=name)
    data = force(gw, session=name)
    assert data["status"] == "archived"
    return str(data["archive_key"])


def mined(gw: Gateway) -> dict[str, object]:
    (only,) = candidates(gw)
    skill = gw.ok("/v3/skill/get", {**IDS, "skill_id": only["skill_id"]}, isolation={})
    return skill


def test_work_done_twice_becomes_exactly_one_unpublished_candidate(gateway: Gateway) -> None:
    first = session(gateway, "monday", chatter("monday", 2) + fix_failing_test("monday", "calc"))
    assert gateway.pipeline.drain() == 1
    assert candidates(gateway) == []  # seen once: nothing recurs yet

    second = session(gateway, "tuesday", fix_failing_test("tuesday", "money", detour=True))
    assert gateway.pipeline.drain() == 1
    assert [j.state for j in jobs(gateway)] == ["done", "done"]

    skill = mined(gateway)
    assert skill["name"] == "run-pytest-then-git-commit" and skill["status"] == "candidate"
    assert skill["version"] == 1 and skill["owner_agent_id"] == IDS["agent_id"]
    provenance = skill["metadata"]["mined"]
    assert provenance["steps"] == STEPS and provenance["seen"] == 2
    assert provenance["archives"] == [second, first]
    content = skill["content"]
    assert "1. `bash`: run `pytest`" in content and "5. `bash`: run `git commit`" in content
    assert "> The tests for money fail since this morning, please fix and commit." in content
    assert '"path": "src/money.py"' in content
    assert "web_search" not in content and "money_old" not in content  # unrelated and failed calls left out
    assert active(gateway) == []  # never published by the miner


def test_the_same_work_again_updates_the_candidate_instead_of_adding_one(gateway: Gateway) -> None:
    session(gateway, "s1", fix_failing_test("s1", "calc"))
    session(gateway, "s2", fix_failing_test("s2", "money"))
    assert gateway.pipeline.drain() == 2
    third = session(gateway, "s3", fix_failing_test("s3", "dates", detour=True))
    assert gateway.pipeline.drain() == 1

    skill = mined(gateway)
    assert skill["version"] == 2 and skill["status"] == "candidate"
    assert skill["metadata"]["mined"]["seen"] == 3 and skill["metadata"]["mined"]["archives"][-1] == third
    assert "3 sessions" in skill["description"]

    # A job run again (a replay) counts nothing twice.
    (job,) = [j for j in jobs(gateway) if j.target == third]
    assert gateway.store.pipeline.replay(job.service_id, [job.seq], job.updated_ms).count == 0  # done, not dead
    assert gateway.store.pipeline.enqueue(job.service_id, "skill", third, dict(job.scope), 0)
    assert gateway.pipeline.drain() == 1
    assert mined(gateway)["version"] == 2


def test_a_published_skill_of_the_same_steps_is_left_alone(gateway: Gateway) -> None:
    session(gateway, "s1", fix_failing_test("s1", "calc"))
    session(gateway, "s2", fix_failing_test("s2", "money"))
    gateway.pipeline.drain()
    (draft,) = candidates(gateway)
    published = gateway.ok(
        "/v3/skill/publish", {**IDS, "skill_id": draft["skill_id"], "expected_version": 1}, isolation={}
    )
    assert published["status"] == "active"

    session(gateway, "s3", fix_failing_test("s3", "dates"))
    assert gateway.pipeline.drain() == 1
    assert candidates(gateway) == []
    (skill,) = active(gateway)
    assert skill["skill_id"] == draft["skill_id"] and skill["version"] == 1


def test_other_agents_work_does_not_count(gateway: Gateway) -> None:
    session(gateway, "s1", fix_failing_test("s1", "calc"))
    other = {**IDS, "agent_id": "agent-other"}
    gateway.ok("/v3/skill/extract", {**other, "messages": fix_failing_test("o1", "calc")}, isolation={})
    assert gateway.pipeline.drain() == 2
    assert candidates(gateway) == [] and len(archives(gateway)) == 1


def test_a_name_held_by_another_skill_gets_a_suffix(gateway: Gateway) -> None:
    content = "---\nname: run-pytest-then-git-commit\ndescription: hand-written\n---\n\n# Mine\n"
    body = {**IDS, "name": "run-pytest-then-git-commit", "content": content}
    gateway.ok("/v3/skill/create", body, isolation={})
    session(gateway, "s1", fix_failing_test("s1", "calc"))
    session(gateway, "s2", fix_failing_test("s2", "money"))
    gateway.pipeline.drain()
    assert [c["name"] for c in candidates(gateway)] == ["run-pytest-then-git-commit-2"]
