"""The management-plane store contract (memhub.store.meta), on the SQLite backend.

Written against the interface so that another backend can run the same tests.
"""

from __future__ import annotations

import pytest

from memhub.model.meta import DuplicateEntry, MetaKind
from memhub.store import MemoryStore
from memhub.store.meta import MetaStore


@pytest.fixture
def meta(store: MemoryStore) -> MetaStore:
    return store.meta


def _team(team_id: str, name: str = "t", created_at: str = "2026-01-01T00:00:00.000Z") -> dict[str, str]:
    return {
        "team_id": team_id,
        "name": name,
        "owner_user_id": "usr-1",
        "status": "active",
        "created_at": created_at,
        "updated_at": created_at,
    }


def test_rows_round_trip_in_the_wire_shape_without_the_tenant(meta: MetaStore) -> None:
    with meta.writing("svc") as w:
        w.insert(MetaKind.TEAM, _team("team-a"))
    with meta.reading("svc") as r:
        row = r.get(MetaKind.TEAM, "team-a")
    assert row == {**_team("team-a"), "description": None, "metadata_json": "{}"}


def test_tenants_never_see_each_other(meta: MetaStore) -> None:
    with meta.writing("svc-a") as w:
        w.insert(MetaKind.TEAM, _team("team-x", "a's"))
    with meta.writing("svc-b") as w:
        w.insert(MetaKind.TEAM, _team("team-x", "b's"))  # the same id in another tenant is another row
        assert w.delete(MetaKind.TEAM, {"team_id": "team-x"}) == 1
    with meta.reading("svc-a") as r:
        assert r.get(MetaKind.TEAM, "team-x")["name"] == "a's"
        assert r.count(MetaKind.TEAM) == 1
    with meta.reading("svc-b") as r:
        assert r.get(MetaKind.TEAM, "team-x") is None


def test_where_operators_order_and_pages(meta: MetaStore) -> None:
    with meta.writing("svc") as w:
        for n in range(5):
            w.insert(MetaKind.TEAM, _team(f"team-{n}", name=f"n{n % 2}", created_at=f"2026-01-0{n + 1}T00:00:00.000Z"))
    with meta.reading("svc") as r:
        newest = r.find(MetaKind.TEAM, order_by=["-created_at"], limit=2, offset=1)
        assert [t["team_id"] for t in newest] == ["team-3", "team-2"]
        assert r.count(MetaKind.TEAM, {"name": "n0"}) == 3
        assert r.count(MetaKind.TEAM, {"name !=": "n0"}) == 2
        assert r.count(MetaKind.TEAM, {"team_id": ["team-1", "team-4", "nope"]}) == 2
        assert r.count(MetaKind.TEAM, {"team_id !=": ["team-1", "team-4"]}) == 3
        assert r.count(MetaKind.TEAM, {"team_id": []}) == 0
        assert r.count(MetaKind.TEAM, {"created_at >=": "2026-01-03T00:00:00.000Z"}) == 3
        assert r.count(MetaKind.TEAM, {"created_at <": "2026-01-03T00:00:00.000Z"}) == 2
        assert r.count(MetaKind.TEAM, {"description": None}) == 5
    with pytest.raises(ValueError, match="operator"), meta.reading("svc") as r:
        r.count(MetaKind.TEAM, {"name LIKE": "n%"})
    with pytest.raises(ValueError, match="field name"), meta.reading("svc") as r:
        r.count(MetaKind.TEAM, {"name;drop_table": "x"})


def test_unique_rules_raise_duplicate_entry_and_roll_back_the_transaction(meta: MetaStore) -> None:
    with meta.writing("svc") as w:
        w.insert(MetaKind.TEAM, _team("team-a"))
    with pytest.raises(DuplicateEntry), meta.writing("svc") as w:
        w.insert(MetaKind.TEAM, _team("team-b"))
        w.insert(MetaKind.TEAM, _team("team-a"))
    with meta.reading("svc") as r:
        assert [t["team_id"] for t in r.find(MetaKind.TEAM)] == ["team-a"]  # team-b went with the failure


def test_one_system_admin_per_tenant(meta: MetaStore) -> None:
    def admin(user_id: str) -> dict[str, str]:
        return {
            "user_id": user_id,
            "username": user_id,
            "status": "active",
            "user_type": "system_admin",
            "created_at": "x",
            "updated_at": "x",
        }

    with meta.writing("svc") as w:
        w.insert(MetaKind.USER, admin("usr-1"))
    with pytest.raises(DuplicateEntry), meta.writing("svc") as w:
        w.insert(MetaKind.USER, admin("usr-2"))
    with meta.writing("other") as w:
        w.insert(MetaKind.USER, admin("usr-2"))


def test_update_delete_and_booleans(meta: MetaStore) -> None:
    key = {
        "key_id": "uky-1",
        "user_id": "usr-1",
        "key_hash": "h",
        "key_last4": "abcd",
        "status": "active",
        "is_default": True,
        "created_at": "x",
    }
    with meta.writing("svc") as w:
        w.insert(MetaKind.USER_KEY, key)
        assert w.update(MetaKind.USER_KEY, "uky-1", {"is_default": False, "name": "k"}) is True
        assert w.update(MetaKind.USER_KEY, "uky-missing", {"name": "k"}) is False
    with meta.reading("svc") as r:
        row = r.get(MetaKind.USER_KEY, "uky-1")
        assert row["is_default"] is False and row["name"] == "k"
    with meta.writing("svc") as w:
        with pytest.raises(ValueError, match="every row"):
            w.delete(MetaKind.USER_KEY, {})
        assert w.delete(MetaKind.USER_KEY, {"user_id": "usr-1"}) == 1


def test_the_audit_table_is_append_only(meta: MetaStore) -> None:
    entry = {
        "id": "maudit-1",
        "action": "team/create",
        "actor_user_id": "usr-1",
        "actor_kind": "normal",
        "target_ids": "[]",
        "request_id": "req-1",
        "created_at": "x",
    }
    with meta.writing("svc") as w:
        w.insert(MetaKind.AUDIT, entry)
    with pytest.raises(Exception, match="append-only"), meta.writing("svc") as w:
        w.update(MetaKind.AUDIT, "maudit-1", {"action": "forged"})
    with pytest.raises(Exception, match="append-only"), meta.writing("svc") as w:
        w.delete(MetaKind.AUDIT, {"id": "maudit-1"})
    with meta.reading("svc") as r:
        assert r.get(MetaKind.AUDIT, "maudit-1")["action"] == "team/create"
