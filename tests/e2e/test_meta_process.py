"""The management plane with `memhub init` / `memhub serve` as real processes: keys, crashes, replicas."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import SERVICE, Api, Launcher, run_cli

USER_KEY = re.compile(r"sk-mem-[A-Za-z0-9_\-]{32}")


def _files_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _admin_of(stdout: str) -> dict[str, str]:
    fields = dict(re.findall(r"^\s*(user_id|user_key|team_id|agent_id):\s*(\S+)\s*$", stdout, re.MULTILINE))
    assert set(fields) == {"user_id", "user_key", "team_id", "agent_id"}, stdout
    return fields


def _as(api: Api, key: str) -> dict[str, str]:
    return {"x-tdai-user-key": key}


def test_init_prints_the_admin_key_once_and_stores_only_a_keyed_hash(launcher: Launcher, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = run_cli("init", "--data-dir", str(data_dir), "--service-id", SERVICE, "--admin", "boss")
    assert first.returncode == 0, first.stderr
    admin = _admin_of(first.stdout)
    assert USER_KEY.findall(first.stdout) == [admin["user_key"]]

    again = run_cli("init", "--data-dir", str(data_dir), "--service-id", SERVICE)
    assert again.returncode == 0, again.stderr
    assert "already has its system admin" in again.stdout
    assert USER_KEY.findall(again.stdout + again.stderr) == []

    gateway_key = re.findall(r"mh-gw-[A-Za-z0-9_\-]+", first.stdout)[0]
    server = launcher.start(
        ["serve", "--host", "127.0.0.1", "--port", "{port}", "--data-dir", str(data_dir)],
        data_dir=data_dir,
        key=gateway_key,
    )
    with server.api() as api:
        verified = api.ok("/v3/meta/auth/verify", {"user_key": admin["user_key"]})
        assert verified["valid"] is True and verified["user"]["username"] == "boss"
        assert verified["user"]["user_type"] == "system_admin"
        scope = {"team_id": admin["team_id"], "agent_id": admin["agent_id"], "session_id": "s1"}
        message = {"role": "user", "content": "stored through the admin's key"}
        api.ok("/v3/conversation/add", {**scope, "messages": [message]}, headers=_as(api, admin["user_key"]))
    # The user key alone, as the Bearer token, opens the management plane.
    with server.api(key=admin["user_key"]) as api:
        teams = api.ok("/v3/meta/team/list", {"user_id": admin["user_id"]})
        assert [t["team_id"] for t in teams["items"]] == [admin["team_id"]]
    server.kill()  # no checkpoint: the WAL holds the latest writes
    files = _files_bytes(data_dir)
    assert any(b"stored through the admin's key" in c for c in files.values()), "the scan missed stored data"
    for name, content in files.items():
        assert admin["user_key"].encode() not in content, f"clear user key found in {name}"


@dataclass
class Created:
    users: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None


def _create_until_failure(api: Api, admin_key: str, created: Created, round_no: int) -> None:
    try:
        for i in range(100_000):
            created.users.append(
                api.ok("/v3/meta/user/create", {"username": f"u{round_no}-{i}"}, headers=_as(api, admin_key))
            )
    except (httpx.HTTPError, OSError, AssertionError) as exc:  # the server was killed under us
        created.error = exc


def test_sigkill_during_user_creation_loses_no_acknowledged_user_or_key(launcher: Launcher, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = launcher.serve(data_dir)
    with server.api() as api:
        admin = api.ok("/v3/internal/meta/user/init-admin", {"username": "root"})
    acknowledged: list[dict[str, Any]] = []
    for round_no in range(2):
        created = Created()
        with server.api() as api:
            writer = threading.Thread(
                target=_create_until_failure, args=(api, admin["user_key"], created, round_no), daemon=True
            )
            writer.start()
            deadline = time.monotonic() + 120
            while len(created.users) < 25 and time.monotonic() < deadline:
                assert writer.is_alive(), created.error
                time.sleep(0.01)
            assert writer.is_alive(), "the writer must still be sending when the server is killed"
            server.kill()
            writer.join(timeout=15)
        assert created.error is not None
        acknowledged += created.users
        server = launcher.serve(data_dir)

    with server.api() as api:
        listed: list[dict[str, Any]] = []
        while True:
            page = api.ok(
                "/v3/internal/meta/user/list-by-instance", {"user_type": "normal", "limit": 100, "offset": len(listed)}
            )
            listed += page["items"]
            if len(listed) >= page["total"]:
                break
        stored = [u["user_id"] for u in listed]
        assert len(set(stored)) == len(stored)
        assert {u["user_id"] for u in acknowledged} <= set(stored), "an acknowledged user was lost"
        # Only the request in flight at each kill may have committed without an acknowledgement.
        assert len(stored) - len(acknowledged) <= 2
        for user in acknowledged[:: max(1, len(acknowledged) // 10)]:
            verified = api.ok("/v3/meta/auth/verify", {"user_key": user["default_user_key"]})
            assert verified["valid"] and verified["user"]["user_id"] == user["user_id"]


def test_two_gateways_on_one_data_dir_share_users_and_revocations(launcher: Launcher, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = launcher.serve(data_dir)
    second = launcher.serve(data_dir)
    with first.api() as a, second.api() as b:
        admin = a.ok("/v3/internal/meta/user/init-admin", {"username": "root"})
        root = _as(a, admin["user_key"])
        alice = a.ok("/v3/meta/user/create", {"username": "alice"}, headers=root)
        spare = b.ok("/v3/meta/user-key/create", {"name": "spare"}, headers=_as(b, alice["default_user_key"]))
        assert a.ok("/v3/meta/auth/verify", {"user_key": spare["key_value"]})["valid"] is True
        a.ok("/v3/meta/user-key/revoke", {"key_id": spare["key_id"]}, headers=_as(a, alice["default_user_key"]))
        # Refused at once by the other process too: no cache outlives a revocation.
        refused = b.post("/v3/meta/team/list", {"user_id": alice["user_id"]}, headers=_as(b, spare["key_value"]))
        assert refused.status_code == 401
        assert refused.json()["message"] == "unauthorized: invalid_user_key"
        assert b.ok("/v3/meta/auth/verify", {"user_key": spare["key_value"]}) == {"valid": False, "user": None}
