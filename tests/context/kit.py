"""The composer's test world, built through the real HTTP app, and golden-file comparison.

`build_world` makes an instance with users, teams, agents, wikis (built by the real wiki service), an agent binding
and L0 conversations, all through the gateway's routes. `World.compose` asks `POST /v3/context/compose`.

Golden files: `golden/<case>.txt` holds the composed text (system, user, knowledge_tools) and `golden/<case>.json`
everything else. Random ids (wikis, users, teams, agents) are replaced by stable placeholders first. Tests compare
by default; `MEMHUB_UPDATE_GOLDEN=1 pytest tests/context` rewrites the files (review the diff before committing).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import Gateway, build_gateway
from tests.context import corpus
from tests.knowledge.tools_kit import WikiApi, text_file
from tests.knowledge.wiki_http_kit import WikiHttp
from tests.meta.org import Member, Org

# Read once at import: tests/conftest.py clears every MEMHUB_* variable before each test runs.
UPDATE_GOLDEN = os.environ.get("MEMHUB_UPDATE_GOLDEN") == "1"
GOLDEN_DIR = Path(__file__).parent / "golden"
TEXT_FIELDS = ("system", "user", "knowledge_tools")
# `user_prepend` is `user` without the query (checked on every composition), so the JSON leaves it out.
DERIVED_FIELDS = ("user_prepend",)
ROUTE = "/v3/context/compose"
# Resource tags of a <knowledge_tools> block, separated by blank lines (the renderer's layout).
_TAG_RUN = re.compile(r"<knowledge [^<>]*? />(?:\n\n<knowledge [^<>]*? />)*")
SYSTEM_TEAM = "__system__"


def files(tree: Mapping[str, str]) -> list[dict[str, str]]:
    """raw/write entries for a {relative path: Markdown} tree."""
    return [text_file(name, content) for name, content in tree.items()]


@dataclass
class World:
    """alice owns team `support` (carol is a member), bob owns team `other`; wikis, an agent binding, sessions."""

    gw: Gateway
    org: Org
    alice: Member
    bob: Member
    carol: Member
    team: str
    other_team: str
    agent: str
    private_agent: str
    bob_agent: str
    wikis: dict[str, str] = field(default_factory=dict)  # wiki name → id
    placeholders: dict[str, str] = field(default_factory=dict)  # random id → stable placeholder

    def post(self, who: Member | None, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Any:
        """POST the route as `who` (None: the gateway key alone); the raw response."""
        return self.gw.client.post(ROUTE, json=dict(body), headers=self.org.headers(who, dict(headers or {})))

    def compose(self, who: Member | None, body: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        """A successful composition's `data`, with the `user == user_prepend + query` invariant checked."""
        response = self.post(who, body, **kwargs)
        envelope = response.json()
        assert response.status_code == 200 and envelope["code"] == 0, envelope
        data: dict[str, Any] = envelope["data"]
        assert data["user"] == data["user_prepend"] + body["query"]
        return data

    def fails(self, who: Member | None, body: Mapping[str, Any], code: int, **kwargs: Any) -> dict[str, Any]:
        """An error envelope with this code and HTTP status; the envelope."""
        response = self.post(who, body, **kwargs)
        envelope: dict[str, Any] = response.json()
        assert response.status_code == code and envelope["code"] == code, envelope
        assert envelope["request_id"].startswith("req-")
        return envelope

    def agent_turn(self, query: str, **extra: Any) -> dict[str, Any]:
        """The body of alice's turn with `support-bot` in session s-1."""
        return {"query": query, "team_id": self.team, "agent_id": self.agent, "session_id": corpus.SESSION, **extra}

    def normalise(self, value: Any) -> Any:
        """The value with every random id replaced by its placeholder (longest ids first)."""
        if isinstance(value, str):
            for raw in sorted(self.placeholders, key=len, reverse=True):
                value = value.replace(raw, self.placeholders[raw])
            return value
        if isinstance(value, list):
            return [self.normalise(v) for v in value]
        if isinstance(value, dict):
            return {k: self.normalise(v) for k, v in value.items()}
        return value

    def close(self) -> None:
        """Stop the build workers, then the app and the store."""
        self.gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
        self.gw.close()


def _bind(org: Org, owner: Member, team: str, agent: str, wiki_id: str, name: str) -> None:
    asset = {
        "asset_id": wiki_id,
        "team_id": team,
        "asset_type": "llm_wiki",
        "name": name,
        "owner_user_id": owner.user_id,
        "source_type": "wiki",
        "status": "approved",
    }
    org.ok(owner, "/v3/meta/asset/create", asset)
    binding = {"asset_id": wiki_id, "asset_type": "llm_wiki", "created_by": owner.user_id}
    org.ok(owner, "/v3/meta/agent-fixed-asset/set", {"agent_id": agent, "bindings": [binding]})


def add_messages(world: World, session: str, messages: list[tuple[str, str]]) -> None:
    """alice's L0 messages with support-bot in this session (through /v3/conversation/add)."""
    body = {
        "team_id": world.team,
        "agent_id": world.agent,
        "session_id": session,
        "messages": [
            {"role": role, "content": content, "timestamp": said_at(i)} for i, (role, content) in enumerate(messages)
        ],
    }
    added = world.org.ok(world.alice, "/v3/conversation/add", body)
    assert added["total_count"] == len(messages)
    for i, message_id in enumerate(added["accepted_ids"]):
        world.placeholders[message_id] = f"<msg {session} {i}>"


def said_at(position: int) -> str:
    """A fixed time for the conversation's messages, so the golden files do not change with the day they run."""
    return f"2025-03-01T09:{position // 60:02d}:{position % 60:02d}Z"


def build_world(data_dir: Path) -> World:
    """The composer's world, through the real app (nothing mocked)."""
    gw = build_gateway(data_dir)
    org = Org(gw)
    alice, bob, carol = org.users("alice", "bob", "carol")
    team = org.team(alice, "support")
    org.join(team, alice, carol)
    other_team = org.team(bob, "other")
    world = World(
        gw,
        org,
        alice,
        bob,
        carol,
        team,
        other_team,
        agent=org.agent(alice, team, "support-bot"),
        private_agent=org.agent(alice, team, "alice-private", visibility="private"),
        bob_agent=org.agent(bob, other_team, "bob-bot"),
    )
    as_alice, as_bob = WikiApi(gw.client, org.headers(alice)), WikiApi(gw.client, org.headers(bob))
    world.wikis["Team handbook"] = as_alice.make(team, "Team handbook", files(corpus.TEAM_HANDBOOK))
    world.wikis["Standards library"] = as_alice.make(team, "Standards library", files(corpus.STANDARDS_LIBRARY))
    world.wikis["Support playbook"] = as_alice.make(team, "Support playbook", files(corpus.SUPPORT_PLAYBOOK))
    world.wikis["Bob notes"] = as_bob.make(other_team, "Bob notes", files(corpus.BOB_NOTES))
    # System knowledge: only the gateway key can make wikis in the reserved team.
    world.wikis["Help center"] = WikiHttp(gw, team=SYSTEM_TEAM).built("Help center", corpus.HELP_CENTER)
    _bind(org, alice, team, world.agent, world.wikis["Support playbook"], "Support playbook")
    add_messages(world, corpus.SESSION, corpus.SESSION_MESSAGES)
    add_messages(world, corpus.LONG_SESSION, corpus.LONG_MESSAGES)
    world.placeholders = {
        **world.placeholders,
        **{wiki_id: f"<wiki:{name}>" for name, wiki_id in world.wikis.items()},
        **{m.user_id: f"<user:{m.username}>" for m in (alice, bob, carol, org.admin)},
        team: "<team:support>",
        other_team: "<team:other>",
        world.agent: "<agent:support-bot>",
        world.private_agent: "<agent:alice-private>",
        world.bob_agent: "<agent:bob-bot>",
    }
    return world


def _tags_by_name(block: str, key: Callable[[str], str]) -> str:
    """The block with its resource tags sorted by `key`: they come in id order, and ids are random in each run."""
    return _TAG_RUN.sub(lambda m: "\n\n".join(sorted(m.group(0).split("\n\n"), key=key)), block)


def golden_text(data: Mapping[str, Any]) -> str:
    """The text fields of a composition, one section each."""
    return "".join(f"===== {name} =====\n{data[name]}\n" for name in TEXT_FIELDS)


def check_golden(world: World, case: str, data: Mapping[str, Any]) -> None:
    """Compare a composition with `golden/<case>.txt|json` (or rewrite them with MEMHUB_UPDATE_GOLDEN=1)."""
    normal = world.normalise({**data, "knowledge_tools": _tags_by_name(data["knowledge_tools"], world.normalise)})
    text = golden_text(normal)
    skipped = (*TEXT_FIELDS, *DERIVED_FIELDS)
    rest = json.dumps({k: v for k, v in normal.items() if k not in skipped}, ensure_ascii=False, indent=2) + "\n"
    txt_path, json_path = GOLDEN_DIR / f"{case}.txt", GOLDEN_DIR / f"{case}.json"
    if UPDATE_GOLDEN:
        GOLDEN_DIR.mkdir(exist_ok=True)
        txt_path.write_text(text, encoding="utf-8")
        json_path.write_text(rest, encoding="utf-8")
        return
    assert txt_path.is_file() and json_path.is_file(), f"no golden for {case}; run with MEMHUB_UPDATE_GOLDEN=1"
    assert text == txt_path.read_text(encoding="utf-8"), f"{case}.txt differs (MEMHUB_UPDATE_GOLDEN=1 rewrites it)"
    assert rest == json_path.read_text(encoding="utf-8"), f"{case}.json differs (MEMHUB_UPDATE_GOLDEN=1 rewrites it)"
