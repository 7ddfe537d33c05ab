"""The review agent's tools as the miner builds them (the tenant, narrowed to the archive's team, agent and user):
`skill_list` ranks its query with the skill search, and what the agent writes for a member who does not review
the agent's skills is her draft."""

from __future__ import annotations

from memhub.knowledge.skill.access import SkillIds
from memhub.knowledge.skill.mining.miner import MINER_REQUEST
from memhub.knowledge.skill.mining.review_tools import SkillTools
from memhub.meta.caller import Caller
from tests.conftest import SERVICE, Gateway
from tests.meta.org import Org
from tests.skills.helpers import IDS, service
from tests.skills.search_kit import Skills, skill_md


def test_skill_list_ranks_its_query_with_the_skill_search(gw: Gateway) -> None:
    skills = Skills(gw)
    skills.create(
        "fix-flaky-ci", "Stabilise a test that fails now and then", "# Steps\n1. Rerun pytest with -p randomly.\n"
    )
    skills.create("release-notes", "Write the release notes", "# Steps\n1. Collect merged pull requests.\n")
    skills.create("pytest-basics", "Run the test suite", "# Steps\n1. Run pytest -q.\n")
    tools = SkillTools(service(gw), Caller(SERVICE, request_id=MINER_REQUEST), SkillIds(**IDS))
    # A word only the instructions hold still finds the skill (the old filter read names and descriptions only).
    found = tools.call("skill_list", {"query": "pull requests"})
    assert [i["name"] for i in found["items"]] == ["release-notes"] and found["total"] == 1
    # A skill named in the query comes first; the rest by BM25.
    ranked = tools.call("skill_list", {"query": "pytest-basics or a flaky pytest run"})
    assert [i["name"] for i in ranked["items"]][:2] == ["pytest-basics", "fix-flaky-ci"]
    assert tools.call("skill_list", {"query": "kubernetes"}) == {"items": [], "total": 0}
    assert tools.call("skill_list", {})["total"] == 3


def test_what_the_review_agent_writes_for_a_member_is_her_draft(gw: Gateway) -> None:
    org = Org(gw)
    owner, member = org.users("olga", "mia")
    team = org.staffed_team(owner, "ops", (member, "member"))
    agent = org.agent(owner, team, "shared", "team")
    miner = Caller(org.service, request_id=MINER_REQUEST)
    for_member = SkillTools(service(gw), miner, SkillIds(team, agent, member.user_id))
    made = for_member.call("skill_create", {"name": "tidy-logs", "content": skill_md("tidy-logs", "Tidy the logs")})
    assert (made["status"], made["owner_user_id"]) == ("candidate", member.user_id)
    for_owner = SkillTools(service(gw), miner, SkillIds(team, agent, owner.user_id))
    own = for_owner.call("skill_create", {"name": "rotate-logs", "content": skill_md("rotate-logs", "Rotate the logs")})
    assert own["status"] == "active"
    # The owner's prompts list only what is published; the member's own listing offers her draft to try.
    scope = {"team_id": team, "agent_id": agent}
    assert [h["name"] for h in Skills(gw, scope, org, owner).listing()["hits"]] == ["rotate-logs"]
    assert {h["name"] for h in Skills(gw, scope, org, member).listing()["hits"]} == {"tidy-logs"}
