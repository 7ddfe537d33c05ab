"""Where the `<knowledge_tools>` block may send an agent's key: only this gateway's origin or an allow-listed one.

The block's recipes send `authorization: Bearer ${MEMHUB_USER_KEY}` to each resource's URL, so a registry row
pointing anywhere else would hand every teammate's key to whoever runs that host. The registry refuses such URLs
(tests/meta/test_config_knowledge.py); here rows are forced into the store behind its back, as an older version
or a hand edit could have left them, and must never reach `knowledge/tools-block` or `context/compose`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memhub.meta.knowledge import register
from tests.conftest import Gateway, build_gateway
from tests.knowledge.tools_kit import knowledge_tags
from tests.meta.org import Member, Org

PUBLIC = "https://memhub.example/v3"
PARTNER = "https://kb.partner.example"
CREDENTIAL_LINE = '  -H "authorization: Bearer ${MEMHUB_USER_KEY}" \\'
# Each differs from a trusted origin in one way a string-prefix or host-only comparison would miss.
FOREIGN = {
    "evil-plain": "https://evil.example/v3",
    "evil-suffix": "https://memhub.example.evil.com/v3",
    "evil-userinfo": "https://memhub.example@evil.example/v3",
    "evil-port": "https://memhub.example:8443/v3",
    "evil-scheme": "http://memhub.example/v3",
    "evil-partner-port": "https://kb.partner.example:444/v3",
    "evil-partner-prefix": "https://kb.partner.example.evil.com/v3",
}


@dataclass
class Team:
    """alice owns the team; bob and dave are plain members. bob registered one entry on each trusted origin."""

    gw: Gateway
    org: Org
    team: str
    alice: Member
    bob: Member
    dave: Member

    def block(self, who: Member | None, **body: Any) -> dict[str, Any]:
        data: dict[str, Any] = self.org.ok(who, "/v3/knowledge/tools-block", {"team_id": self.team, **body})
        return data

    def compose(self, who: Member | None) -> dict[str, Any]:
        body = {"query": "Why is the ledger append-only?", "team_id": self.team}
        data: dict[str, Any] = self.org.ok(who, "/v3/context/compose", body)
        return data

    def force(self, knowledge_id: str, url: str) -> None:
        """Write a registry row with this URL straight into the store, past the registry's checks."""
        with self.gw.store.meta.writing(self.org.service) as w:
            fields = {"knowledge_id": knowledge_id, "type": "wiki", "service_url": url, "name": knowledge_id}
            register(w, {**fields, "team_id": self.team, "user_id": self.bob.user_id})


def team_of(gw: Gateway) -> Team:
    org = Org(gw)
    alice, bob, dave = org.users("alice", "bob", "dave")
    team = org.staffed_team(alice, "docs", (bob, "member"), (dave, "member"))
    crew = Team(gw, org, team, alice, bob, dave)
    for knowledge_id, url in (("kb-own", PUBLIC), ("kb-partner", f"{PARTNER}/v3")):
        entry = {"knowledge_id": knowledge_id, "type": "wiki", "service_url": url, "name": knowledge_id}
        org.ok(bob, "/v3/knowledge/create", {**entry, "team_id": team})
    return crew


@pytest.fixture
def crew(tmp_path: Path) -> Iterator[Team]:
    gw = build_gateway(tmp_path / "data", knowledge_public_url=PUBLIC, knowledge_url_allowlist=[PARTNER])
    yield team_of(gw)
    gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    gw.close()


def assert_only_trusted(text: str, *, keyed: bool = True) -> None:
    """The block offers exactly the two trusted entries, with curl recipes that verify TLS."""
    assert [(t["id"], t["url"]) for t in knowledge_tags(text)] == [("kb-own", PUBLIC), ("kb-partner", f"{PARTNER}/v3")]
    assert "evil" not in text and ":8443" not in text and ":444" not in text and "http://memhub" not in text
    assert text.count(CREDENTIAL_LINE) == (2 if keyed else 0)
    assert text.count("curl -sS -X POST <url>/tools/") == 2
    assert "-sSk" not in text and " -k" not in text and "--insecure" not in text


def test_rows_on_foreign_origins_are_never_offered_to_any_teammate(
    crew: Team, caplog: pytest.LogCaptureFixture
) -> None:
    for knowledge_id, url in FOREIGN.items():
        crew.force(knowledge_id, url)
    with caplog.at_level(logging.WARNING, logger="memhub.knowledge"):
        for who in (crew.alice, crew.bob, crew.dave, crew.org.admin, None):  # None: the gateway key
            block = crew.block(who)
            assert block["resources"] == ["kb-own", "kb-partner"]
            assert_only_trusted(block["text"])
            assert_only_trusted(crew.compose(who)["knowledge_tools"])
    warned = {r.getMessage().split()[1] for r in caplog.records if "not on a trusted origin" in r.getMessage()}
    assert warned == set(FOREIGN)
    # The registry still lists what it holds: nothing is silently rewritten or dropped from the store.
    listed = crew.org.ok(crew.alice, "/v3/knowledge/list", {"team_id": crew.team})
    assert {i["knowledge_id"] for i in listed["items"]} == {"kb-own", "kb-partner", *FOREIGN}


def test_a_hijacked_entry_drops_out_of_the_block(crew: Team) -> None:
    """An entry whose URL was moved to a foreign host (the attack the registry now refuses) is no longer offered."""
    crew.force("kb-own", "https://evil.example/v3")
    for who in (crew.alice, crew.dave):
        text = crew.block(who)["text"]
        assert [t["id"] for t in knowledge_tags(text)] == ["kb-partner"]
        assert "evil" not in text and text.count(CREDENTIAL_LINE) == 2
    crew.force("kb-partner", "https://kb.partner.example.evil.com/v3")
    assert crew.block(crew.alice) == {
        "text": "",
        "resources": [],
        "cache_key": f"knowledge-tools-injector:team:{crew.team}",
        "chars": 0,
    }
    assert crew.compose(crew.dave)["knowledge_tools"] == ""


def test_open_tools_offer_no_foreign_origin_either(tmp_path: Path) -> None:
    """Without a key in the recipe a foreign host still gets the tenant and user headers and the agent's trust."""
    settings = {"knowledge_public_url": PUBLIC, "knowledge_url_allowlist": [PARTNER], "knowledge_tools_auth": "open"}
    gw = build_gateway(tmp_path / "data", **settings)
    try:
        crew = team_of(gw)
        crew.force("evil-plain", FOREIGN["evil-plain"])
        assert_only_trusted(crew.block(crew.dave)["text"], keyed=False)
    finally:
        gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
        gw.close()


def test_without_an_allow_list_only_the_gateway_s_own_origin_is_offered(tmp_path: Path) -> None:
    """The allow-list is empty by default: a partner entry registered while it was configured is not offered."""
    gw = build_gateway(tmp_path / "data", knowledge_public_url=PUBLIC, knowledge_url_allowlist=[PARTNER])
    crew = team_of(gw)
    gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    gw.close()
    gw = build_gateway(tmp_path / "data", knowledge_public_url=PUBLIC)  # the same data, no allow-list
    try:
        crew.gw = crew.org.gw = gw
        text = crew.block(crew.dave)["text"]
        assert [(t["id"], t["url"]) for t in knowledge_tags(text)] == [("kb-own", PUBLIC)]
        assert "partner" not in text and text.count(CREDENTIAL_LINE) == 2
    finally:
        gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
        gw.close()


def test_older_rows_are_offered_and_shown_in_their_canonical_form(crew: Team, caplog: pytest.LogCaptureFixture) -> None:
    """Rows written before URLs were stored canonical: the block and the registry show what the request really reaches,
    and a row with no canonical form (a query, an `@` in the path) is never offered."""
    crew.force("kb-own", f"{PUBLIC}#@evil.example/v3")
    crew.force("kb-partner", f"{PARTNER}/evil.example/../v3")
    crew.force("kb-query", f"{PUBLIC}?@evil.example")
    crew.force("kb-at", "https://memhub.example/@evil.example/v3")
    with caplog.at_level(logging.WARNING, logger="memhub.knowledge"):
        for who in (crew.alice, crew.dave):
            block = crew.block(who)
            assert block["resources"] == ["kb-own", "kb-partner"]
            assert_only_trusted(block["text"])
            assert "#@" not in block["text"] and "/../" not in block["text"]
            assert_only_trusted(crew.compose(who)["knowledge_tools"])
    warned = {r.getMessage().split()[1] for r in caplog.records if "is not offered" in r.getMessage()}
    assert warned == {"kb-query", "kb-at"}
    shown = crew.org.ok(crew.dave, "/v3/knowledge/list", {"team_id": crew.team})["items"]
    assert {i["knowledge_id"]: i["service_url"] for i in shown} == {
        "kb-own": PUBLIC,
        "kb-partner": f"{PARTNER}/v3",
        "kb-query": f"{PUBLIC}?@evil.example",  # no canonical form: shown as stored, so its owner sees what to fix
        "kb-at": "https://memhub.example/@evil.example/v3",
    }
    assert crew.org.ok(crew.dave, "/v3/knowledge/get", {"knowledge_id": "kb-own"})["service_url"] == PUBLIC
