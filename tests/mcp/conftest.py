"""A real gateway for the MCP tests: the app `memhub serve` runs (with `/mcp` mounted), served by uvicorn with its
lifespan on a real socket, and two users on it: `alice` (the system admin: her default team and agent, and a built
wiki) and `bob` (his own team and agent, nothing of alice's). Everything goes over HTTP; nothing is mocked."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from memhub.api import create_app
from memhub.gateway_key import ensure_gateway_key
from memhub.mcp.http import mount
from memhub.runtime import build_hub, open_store
from memhub.settings import Settings
from tests.conftest import GATEWAY_KEY
from tests.knowledge.tools_kit import WikiApi, fixture_files
from tests.served import serve

SERVICE = "svc-mcp"
SCENE_PATH = "release-steps.md"
SCENE_TEXT = "# Releases\n\nTag, build, then upload from a clean tree."
SKILL_NAME = "rotate-relay-certs"
SKILL_MD = (
    "---\nname: rotate-relay-certs\ndescription: Rotate the relay's TLS certificates before they expire\n---\n"
    "# Steps\n1. Run scripts/rotate.sh on the relay host.\n2. Check the expiry date.\n"
)
SKILL_SCRIPT = "#!/bin/sh\nrelayctl certs rotate --all\n"
SRC = str(Path(__file__).resolve().parents[2] / "src")


@dataclass
class User:
    user_id: str
    key: str
    team_id: str
    agent_id: str


@dataclass
class Gateway:
    """The served gateway, its users and alice's built wiki."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread
    http: httpx.Client
    alice: User
    bob: User
    wiki_id: str
    skill_id: str = ""

    def post(self, path: str, body: dict[str, Any], key: str) -> Any:
        """A data-plane or management-plane POST as the user holding `key`; returns `data`."""
        response = self.http.post(
            self.url + path, json=body, headers={"authorization": f"Bearer {key}", "x-tdai-service-id": SERVICE}
        )
        envelope = response.json()
        assert response.status_code in (200, 201) and envelope["code"] == 0, (path, envelope)
        return envelope["data"]

    def stdio_env(self, **extra: str) -> dict[str, str]:
        """The environment `memhub mcp` runs with: this checkout's source first, no MEMHUB_* of the developer."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "TDAI_"))}
        env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
        env.update(extra)
        return env

    def stdio_args(self, key: str, url: str | None = None) -> list[str]:
        return ["-m", "memhub.cli", "mcp", "--url", url or self.url, "--key", key, "--service-id", SERVICE]


def _user_of(gw: Gateway, admin_key: str, username: str) -> User:
    """A normal user with a team and an agent of their own (so their key implies all three ids)."""
    created = gw.post("/v3/meta/user/create", {"username": username}, admin_key)
    key, user_id = created["default_user_key"], created["user_id"]
    team_id = gw.post("/v3/meta/team/create", {"name": f"{username}-team", "owner_user_id": user_id}, key)["team_id"]
    agent = gw.post(
        "/v3/meta/agent/create", {"team_id": team_id, "owner_user_id": user_id, "name": f"{username}-agent"}, key
    )
    return User(user_id, key, team_id, agent["agent_id"])


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data = tmp_path_factory.mktemp("mcp-gateway")
    with pytest.MonkeyPatch.context() as mp:  # module scope: clear MEMHUB_* like tests/conftest._clean_env
        for name in [n for n in os.environ if n.startswith(("MEMHUB_", "TDAI_"))]:
            mp.delenv(name)
        settings = Settings(data_dir=data, gateway_api_key=GATEWAY_KEY, pipeline_enabled=False)
    store = open_store(settings)
    key = ensure_gateway_key(store, settings.gateway_api_key).key
    app = create_app(build_hub(settings, store), key, run_pipeline=False)
    mount(app)
    # Lifespan on: the MCP session manager runs inside the app's lifespan, as under `memhub serve`.
    served = serve(app, lifespan="on", name="mcp-uvicorn")
    server, thread, port = served.server, served.thread, served.port
    http = httpx.Client(timeout=120)
    url = f"http://127.0.0.1:{port}"
    admin = http.post(
        url + "/v3/internal/meta/user/init-admin",
        json={"username": "alice"},
        headers={"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SERVICE},
    ).json()["data"]
    alice = User(admin["user_id"], admin["user_key"], admin["team_id"], admin["agent_id"])
    gw = Gateway(url, server, thread, http, alice, alice, "")
    gw.bob = _user_of(gw, alice.key, "bob")
    ids = {"team_id": alice.team_id, "agent_id": alice.agent_id, "user_id": alice.user_id}
    scene = {"path": SCENE_PATH, "content": SCENE_TEXT, "summary": "how releases are cut"}
    gw.post("/v3/scenario/create", {**ids, **scene}, alice.key)
    wiki = WikiApi(http, {"authorization": f"Bearer {alice.key}", "x-tdai-service-id": SERVICE}, base=url)
    gw.wiki_id = wiki.make(alice.team_id, "handbook", fixture_files())
    script = {"path": "scripts/rotate.sh", "content": SKILL_SCRIPT, "encoding": "utf-8", "is_executable": True}
    skill = {**ids, "name": SKILL_NAME, "content": SKILL_MD, "resources": [script]}
    gw.skill_id = gw.post("/v3/skill/create", skill, alice.key)["skill_id"]
    try:
        yield gw
    finally:
        http.close()
        server.should_exit = True
        thread.join(timeout=30)


def python() -> str:
    return sys.executable
