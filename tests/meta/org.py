"""Test helpers for the management plane: an instance with its admin, users, teams and agents.

Everything goes through the real HTTP app (tests/conftest.py build_gateway); nothing is mocked.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from memhub.store.sqlite.store import DB_FILENAME
from tests.conftest import Gateway


@dataclass
class Member:
    """A user of the instance and their default key."""

    user_id: str
    key: str
    username: str


@dataclass
class Org:
    """One service id with its system admin; helpers to create users, teams and agents as someone."""

    gw: Gateway
    service: str = "svc-a"
    admin: Member = field(init=False)
    team_id: str = field(init=False)  # the default team made by init-admin
    admin_agent_id: str = field(init=False)

    def __post_init__(self) -> None:
        response = self.gw.client.post(
            "/v3/internal/meta/user/init-admin",
            json={"username": "root"},
            headers={"authorization": f"Bearer {self.gw.key}", "x-tdai-service-id": self.service},
        )
        data = response.json()["data"]
        self.admin = Member(data["user_id"], data["user_key"], "root")
        self.team_id = data["team_id"]
        self.admin_agent_id = data["agent_id"]

    def headers(self, who: Member | str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Gateway Bearer + service id + the user's key (None: no user key)."""
        h = {"authorization": f"Bearer {self.gw.key}", "x-tdai-service-id": self.service}
        if who is not None:
            h["x-tdai-user-key"] = who if isinstance(who, str) else who.key
        h.update(extra or {})
        return h

    def call(self, who: Member | str | None, path: str, body: dict[str, Any] | None = None) -> Any:
        """POST as a user; returns the httpx response."""
        return self.gw.client.post(path, json=body if body is not None else {}, headers=self.headers(who))

    def ok(self, who: Member | str | None, path: str, body: dict[str, Any] | None = None) -> Any:
        """POST as a user and assert success; returns `data`."""
        response = self.call(who, path, body)
        envelope = response.json()
        assert response.status_code == 200 and envelope["code"] == 0, (path, envelope)
        return envelope.get("data")

    def fails(self, who: Member | str | None, path: str, body: dict[str, Any] | None, code: int) -> dict[str, Any]:
        """POST as a user and assert an error envelope with this code and HTTP status; returns the envelope."""
        response = self.call(who, path, body)
        envelope = response.json()
        assert envelope["code"] == code, (path, envelope)
        assert response.status_code == code
        return envelope

    def user(self, username: str) -> Member:
        """A new normal user, created by the system admin."""
        data = self.ok(self.admin, "/v3/meta/user/create", {"username": username})
        return Member(data["user_id"], data["default_user_key"], username)

    def team(self, owner: Member, name: str = "team") -> str:
        """A new team owned by `owner`."""
        return self.ok(owner, "/v3/meta/team/create", {"name": name, "owner_user_id": owner.user_id})["team_id"]

    def users(self, *usernames: str) -> tuple[Member, ...]:
        """New normal users, created in this order."""
        return tuple(self.user(name) for name in usernames)

    def staffed_team(self, owner: Member, name: str, *joins: tuple[Member, str]) -> str:
        """A new team owned by `owner`, who then adds each (user, role) in this order."""
        team_id = self.team(owner, name)
        for user, role in joins:
            self.join(team_id, owner, user, role)
        return team_id

    def join(self, team_id: str, admin: Member, user: Member, role: str = "member") -> None:
        """`admin` adds `user` to the team with this role."""
        self.ok(admin, "/v3/meta/team-member/add", {"team_id": team_id, "user_id": user.user_id, "role": role})

    def agent(self, owner: Member, team_id: str, name: str = "agent", visibility: str = "team") -> str:
        """A new agent of `owner` in the team."""
        body = {"team_id": team_id, "owner_user_id": owner.user_id, "name": name, "visibility": visibility}
        return self.ok(owner, "/v3/meta/agent/create", body)["agent_id"]

    def default_agent(self, team_id: str, user: Member) -> str:
        """The private default agent a member got when added to the team."""
        items = self.ok(user, "/v3/meta/agent/list", {"team_id": team_id, "owner_user_id": user.user_id})["items"]
        (agent,) = [a for a in items if a["name"] == f"default-agent-{user.username}"]
        return agent["agent_id"]


def rows(source: Org | Gateway, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """The rows of a read-only query on the store, as tuples."""
    gw = source.gw if isinstance(source, Org) else source
    return [tuple(r) for r in gw.store._reader().execute(sql, args)]


def lapse_key(source: Org | Gateway, key_id: str, expired_at: str = "2001-01-01T00:00:00Z") -> None:
    """Let a user key's expiry pass: the API refuses expiries in the past, so time passing is written directly."""
    gw = source.gw if isinstance(source, Org) else source
    with sqlite3.connect(gw.data_dir / DB_FILENAME) as db:
        changed = db.execute("UPDATE meta_user_keys SET expires_at = ? WHERE key_id = ?", (expired_at, key_id))
        assert changed.rowcount == 1, key_id
    db.close()


def table_snapshot(gw: Gateway) -> dict[str, list[str]]:
    """Every row of every management and memory table (audit log included), to prove nothing changed.

    A key's `last_used_at` is left out: authenticating a request may refresh it, by design.
    """
    con = gw.store._reader()
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'meta_%'")]
    tables += ["knowledge_registry", "l0_messages", "l1_atomic", "profile_documents"]
    snapshot = {}
    for table in tables:
        cursor = con.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cursor.description]
        rows = [{k: v for k, v in zip(names, row, strict=True) if k != "last_used_at"} for row in cursor]
        snapshot[table] = sorted(repr(sorted(r.items())) for r in rows)
    return snapshot


def refused(
    org: Org, who: Member | str | None, path: str, body: dict[str, Any] | None, code: int, message: str | None = None
) -> dict[str, Any]:
    """`org.fails` (this code and HTTP status) that also proves nothing changed (every management and memory table).

    `message` is compared exactly unless it ends with "…", then as a prefix.
    """
    before = table_snapshot(org.gw)
    envelope = org.fails(who, path, body, code)
    if message is not None:
        if message.endswith("…"):
            assert envelope["message"].startswith(message[:-1]), envelope
        else:
            assert envelope["message"] == message, envelope
    assert table_snapshot(org.gw) == before, f"{path} changed stored state although refused"
    return envelope
