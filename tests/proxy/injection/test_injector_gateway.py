"""The injector over a real hub (tests/conftest.py build_gateway): the blocks carry what the store holds, each user
sees only what they may read, and a session's blocks are computed once and reused byte for byte.

Everything is written through the real HTTP app as the users themselves (their user keys); the injector reads it
in process, as the proxy does. The session token is a plain function here: minting it is the session module's.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memhub.meta.assets import chat_memory_asset_id
from memhub.proxy.injection import BlockInjector, InjectorConfig, build_injector, hub_sources
from memhub.proxy.injection.budget import placement_order
from memhub.proxy.model import Block, ProxyIdentity, RequestKind
from memhub.proxy.session_token import BRIDGE_PATH
from tests.conftest import Gateway, build_gateway
from tests.meta.org import Member, Org
from tests.skills.helpers import skill_md

PROXY_URL = "http://127.0.0.1:8420"
TTL = 600.0
CLAUDE_PROMPT = "You are Claude Code.\n\n# Memory\nFile memory.\n\n# Environment\ncwd: /repo\n"


class Clock:
    """The cache's clock: time moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    """bob owns team T (carol is a member) with agents A (the session's) and B (whose memory A imports)."""

    gw: Gateway
    org: Org
    bob: Member
    carol: Member
    team: str
    other_team: str  # carol's own team
    agent: str
    imported: str
    task: str
    clock: Clock

    @property
    def hub(self) -> Any:
        return self.gw.client.app.state.hub  # type: ignore[attr-defined]

    def as_user(self, who: Member, path: str, body: dict[str, Any], agent: str | None = None) -> Any:
        return self.org.ok(who, path, {"team_id": self.team, "agent_id": agent or self.agent, **body})

    def identity(self, who: Member, session: str = "s-1", **changes: Any) -> ProxyIdentity:
        base = ProxyIdentity(
            service_id=self.org.service,
            user_id=who.user_id,
            key_id=None,
            session_id=session,
            team_id=self.team,
            agent_id=self.agent,
            task_id=self.task,
        )
        return dataclasses.replace(base, **changes)

    def injector(self, **config: Any) -> BlockInjector:
        return build_injector(
            self.hub,
            InjectorConfig(proxy_url=PROXY_URL, session_ttl_seconds=TTL, **config),
            lambda identity: f"tok-{identity.user_id}-{identity.session_id}",
            clock=self.clock,
        )


@pytest.fixture
def w(tmp_path: Path) -> Iterator[World]:
    gw = build_gateway(tmp_path / "data", pipeline_enabled=False)
    org = Org(gw)
    bob, carol = org.users("bob", "carol")
    team = org.staffed_team(bob, "team", (carol, "member"))
    agent = org.agent(bob, team, "coder")
    org.ok(bob, "/v3/meta/agent/update", {"agent_id": agent, "description": "Writes code", "prompt": "Be brief."})
    imported = org.agent(bob, team, "ops")
    task = org.ok(bob, "/v3/meta/task/create", {"team_id": team, "creator_user_id": bob.user_id, "title": "Release"})
    world = World(gw, org, bob, carol, team, org.team(carol, "other"), agent, imported, task["task_id"], Clock())
    yield world
    gw.close()


def seed(w: World) -> None:
    """Bob's and carol's memories with A, bob's with B (imported into A), a skill of A, a wiki of each team."""
    w.as_user(w.bob, "/v3/core/write", {"content": "Bob prefers Python and tabs."})
    w.as_user(w.bob, "/v3/scenario/create", {"path": "work/deploy.md", "content": "Steps.", "summary": "Deploys"})
    w.as_user(w.carol, "/v3/core/write", {"content": "Carol secretly likes Go."})
    w.as_user(w.carol, "/v3/scenario/create", {"path": "private/carol.md", "content": "x", "summary": "Carol only"})
    w.as_user(w.bob, "/v3/core/write", {"content": "Ops runbooks live in /ops."}, agent=w.imported)
    bindings = [
        {"asset_id": chat_memory_asset_id(w.team, a), "asset_type": "chat_memory", "created_by": w.bob.user_id}
        for a in (w.agent, w.imported)
    ]
    w.org.ok(w.bob, "/v3/meta/agent-fixed-asset/set", {"agent_id": w.agent, "bindings": bindings})
    w.as_user(w.bob, "/v3/skill/create", {"name": "deploy-app", "content": skill_md("deploy-app", "Deploy the app")})
    url = w.hub.settings.knowledge_url()
    for who, team, kid in ((w.bob, w.team, "kb-team"), (w.carol, w.other_team, "kb-other")):
        body = {"knowledge_id": kid, "type": "wiki", "service_url": url, "name": f"wiki {kid}", "team_id": team}
        w.org.ok(who, "/v3/knowledge/create", body)


def run(injector: BlockInjector, identity: ProxyIdentity, kind: RequestKind = RequestKind.MAIN) -> list[Block]:
    return asyncio.run(injector.blocks(identity, kind))


def by_hook(blocks: list[Block]) -> dict[str, str]:
    return {b.hook_id: b.text for b in blocks}


def test_blocks_carry_the_real_data_at_their_slots(w: World) -> None:
    seed(w)
    injector = w.injector()
    blocks = run(injector, w.identity(w.bob))
    texts = by_hook(blocks)
    assert list(texts) == [
        "skill-injector",
        "knowledge-tools-injector",
        "tdai-memory-tools-injector",
        "tdai-profile-memory-injector",
        "session-context",
    ]
    profile = texts["tdai-profile-memory-injector"]
    assert f'<agent name="coder" role="self" agent_id="{w.agent}">' in profile
    assert "<l3_core_memory>\nBob prefers Python and tabs.\n</l3_core_memory>" in profile
    assert "- `work/deploy.md` — Deploys" in profile
    assert f'<agent name="ops" role="imported_from" agent_id="{w.imported}">' in profile
    assert "Ops runbooks live in /ops." in profile
    skill_id = w.org.ok(w.bob, "/v3/skill/listing", {"team_id": w.team, "agent_id": w.agent})["hits"][0]["skill_id"]
    assert f"- deploy-app [{skill_id}]: Deploy the app" in texts["skill-injector"]
    knowledge = texts["knowledge-tools-injector"]
    assert '<knowledge type="wiki" id="kb-team"' in knowledge
    # Every recipe goes through this proxy's bridge with the session's token: the agent needs no key of its own.
    token_line = f"  -H 'x-memhub-session: tok-{w.bob.user_id}-s-1' \\"
    assert f'url="{PROXY_URL}/memory-bridge/v3"' in knowledge and knowledge.count(token_line) == 2
    assert (
        token_line in texts["skill-injector"] and f"{PROXY_URL}/memory-bridge/v3/tools/call" in texts["skill-injector"]
    )
    assert "MEMHUB_USER_KEY" not in knowledge + texts["skill-injector"] and "authorization" not in knowledge
    assert "x-memhub-session: tok-" in texts["tdai-memory-tools-injector"]
    assert texts["session-context"] == "\n".join(
        [
            "<session_context>",
            "[Agent]",
            f"id: {w.agent}",
            "name: coder",
            "description: Writes code",
            "prompt:",
            "Be brief.",
            "",
            "[Task]",
            f"id: {w.task}",
            "name: Release",
            "</session_context>",
        ]
    )
    # No id of the user, the team or the session in any block (the agent's and task's ids are the original's).
    everything = "\n".join(texts.values())
    assert w.bob.user_id not in everything.replace(f"tok-{w.bob.user_id}-s-1", "")
    assert w.team not in everything.replace(chat_memory_asset_id(w.team, w.agent), "")
    (spliced,) = injector.splice([CLAUDE_PROMPT], blocks, "claude-code")
    memory = spliced.index("# Memory")
    assert spliced.index("<tdai_memory_tools>") < memory < spliced.index("<tdai_profile_memory>")
    assert spliced.index("<tdai_profile_memory>") < spliced.index("<knowledge_tools>") < spliced.index("# Environment")
    assert spliced.endswith(texts["session-context"])


def test_a_user_never_gets_what_they_may_not_read(w: World) -> None:
    seed(w)
    texts = by_hook(run(w.injector(), w.identity(w.carol)))
    everything = "\n".join(texts.values())
    # Carol's own profile with A, never bob's; B's section is her own profile with B, which is empty.
    assert "Carol secretly likes Go." in everything and "private/carol.md" in everything
    assert "Bob prefers Python" not in everything and "work/deploy.md" not in everything
    assert "Ops runbooks" not in everything and 'role="imported_from"' not in everything
    # The skill is bob's agent's private asset; the team's wiki is offered, carol's other team's never is.
    assert "skill-injector" not in texts and "deploy-app" not in everything
    assert 'id="kb-team"' in texts["knowledge-tools-injector"] and "kb-other" not in everything
    bobs = "\n".join(by_hook(run(w.injector(), w.identity(w.bob))).values())
    assert "Carol secretly likes Go." not in bobs and "private/carol.md" not in bobs and "kb-other" not in bobs


def test_an_imported_agent_the_user_may_not_see_is_left_out(w: World) -> None:
    seed(w)
    w.as_user(w.carol, "/v3/core/write", {"content": "Carol's ops notes."}, agent=w.imported)
    assert "Carol's ops notes." in by_hook(run(w.injector(), w.identity(w.carol)))["tdai-profile-memory-injector"]
    w.org.ok(w.bob, "/v3/meta/agent/update", {"agent_id": w.imported, "visibility": "private"})
    texts = by_hook(run(w.injector(), w.identity(w.carol)))
    assert "Carol's ops notes." not in texts["tdai-profile-memory-injector"]
    bobs = by_hook(run(w.injector(), w.identity(w.bob)))
    assert "Ops runbooks live in /ops." in bobs["tdai-profile-memory-injector"]


def test_capability_flags_switch_blocks_off(w: World) -> None:
    seed(w)
    params = {"chat_memory.enabled": "0", "skill.enabled": "0", "llm_wiki.enabled": "0"}
    w.org.ok(w.bob, "/v3/meta/config/user/set", {"user_id": w.bob.user_id, "module": "asset_type", "params": params})
    assert list(by_hook(run(w.injector(), w.identity(w.bob)))) == ["session-context"]


def test_no_blocks_for_side_queries_auxiliary_requests_or_without_a_memory_scope(w: World) -> None:
    seed(w)
    injector = w.injector()
    assert run(injector, w.identity(w.bob), RequestKind.SIDE_QUERY) == []
    assert run(injector, w.identity(w.bob), RequestKind.AUXILIARY) == []
    assert run(injector, w.identity(w.bob, agent_id=None)) == []
    assert len(injector.cache) == 0


def test_a_session_gets_the_same_bytes_until_forgotten_or_expired(w: World) -> None:
    seed(w)
    injector = w.injector()
    me = w.identity(w.bob)
    first = run(injector, me)
    w.as_user(w.bob, "/v3/core/write", {"content": "Bob now prefers Rust."})
    second = run(injector, me)
    assert second == first
    assert injector.splice([CLAUDE_PROMPT], second, "claude-code") == injector.splice([CLAUDE_PROMPT], first, "")
    # Another session of the same user computes its own (and sees the new persona).
    assert (
        "Bob now prefers Rust."
        in by_hook(run(injector, w.identity(w.bob, session="s-2")))["tdai-profile-memory-injector"]
    )
    injector.forget_session(me)  # mem:sync
    third = by_hook(run(injector, me))
    assert "Bob now prefers Rust." in third["tdai-profile-memory-injector"]
    w.as_user(w.bob, "/v3/core/write", {"content": "Bob now prefers Zig."})
    w.clock.now += TTL - 1
    assert by_hook(run(injector, me)) == third
    w.clock.now += 1
    assert "Bob now prefers Zig." in by_hook(run(injector, me))["tdai-profile-memory-injector"]


def test_a_fork_reads_the_cache_and_never_fills_it(w: World) -> None:
    seed(w)
    injector = w.injector()
    me = w.identity(w.bob)
    forked = run(injector, me, RequestKind.FORK)
    assert "Bob prefers Python" in by_hook(forked)["tdai-profile-memory-injector"]
    assert len(injector.cache) == 0
    w.as_user(w.bob, "/v3/core/write", {"content": "Bob now prefers Rust."})
    main = run(injector, me)
    w.as_user(w.bob, "/v3/core/write", {"content": "Bob now prefers Zig."})
    assert run(injector, me, RequestKind.FORK) == main
    assert "Bob now prefers Rust." in by_hook(main)["tdai-profile-memory-injector"]


def test_concurrent_first_turns_compute_once(w: World) -> None:
    seed(w)
    injector = w.injector()
    real = injector.sources.profile_memory
    calls: list[str] = []

    def counted(identity: ProxyIdentity) -> Any:
        calls.append(identity.session_id)
        return real(identity)

    injector.sources = dataclasses.replace(injector.sources, profile_memory=counted)
    me = w.identity(w.bob)

    async def two_turns() -> tuple[list[Block], list[Block]]:
        first, second = await asyncio.gather(
            injector.blocks(me, RequestKind.MAIN), injector.blocks(me, RequestKind.MAIN)
        )
        return first, second

    first, second = asyncio.run(two_turns())
    assert first == second and calls == ["s-1"]


def test_a_failing_source_leaves_its_block_out_and_is_asked_again_next_turn(w: World) -> None:
    seed(w)
    sources = hub_sources(w.hub, PROXY_URL + BRIDGE_PATH)
    failures = [RuntimeError("database is locked")]

    def flaky(identity: ProxyIdentity) -> Any:
        if failures:
            raise failures.pop()
        return sources.profile_memory(identity)

    injector = w.injector()
    injector.sources = dataclasses.replace(sources, profile_memory=flaky)
    me = w.identity(w.bob)
    first = by_hook(run(injector, me))
    assert "tdai-profile-memory-injector" not in first and "skill-injector" in first
    second = by_hook(run(injector, me))
    assert "Bob prefers Python" in second["tdai-profile-memory-injector"]
    assert {k: v for k, v in second.items() if k != "tdai-profile-memory-injector"} == first
    assert by_hook(run(injector, me)) == second


def test_the_store_failing_never_fails_the_turn(w: World) -> None:
    seed(w)
    injector = w.injector()
    w.gw.store.close()
    texts = by_hook(run(injector, w.identity(w.bob)))
    # Only the static recipes survive: everything read from the store is left out, nothing raises.
    assert list(texts) == ["tdai-memory-tools-injector"]


def test_the_budget_cuts_the_spliced_blocks(w: World) -> None:
    seed(w)
    injector = w.injector(budget_chars=2_000)
    blocks = run(injector, w.identity(w.bob))
    flat = injector.flat(blocks)
    assert flat.endswith("…[injection budget: truncated]")
    assert len(flat) <= 2_000 + 2 * len(placement_order(blocks))
    assert flat.startswith("## Skills (mandatory)")


def test_a_remembered_splice_is_the_splice_and_cannot_be_changed_by_its_caller(w: World) -> None:
    seed(w)
    injector = w.injector()
    blocks = run(injector, w.identity(w.bob))
    first = injector.splice([CLAUDE_PROMPT], blocks, "claude-code")
    first[0] = "changed by the caller"
    again = injector.splice([CLAUDE_PROMPT], blocks, "claude-code")
    fresh = w.injector().splice([CLAUDE_PROMPT], blocks, "claude-code")
    assert again == fresh and again[0] != "changed by the caller"
    # Another client's profile places the same blocks elsewhere: not served from the first one's memory.
    assert injector.splice([CLAUDE_PROMPT], blocks, "codebuddy") == w.injector().splice(
        [CLAUDE_PROMPT], blocks, "codebuddy"
    )
