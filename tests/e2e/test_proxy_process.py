"""`memhub proxy` as a real process: the proxy, its memory bridge and /health alone, over the gateway's data."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import openai

from tests.e2e.conftest import GATEWAY_KEY, HOST, PORT_PLACEHOLDER, Launcher, run_cli
from tests.proxy.fake_upstream import FakeUpstream

SPACE = "svc-proxy-e2e"


def test_memhub_proxy_serves_the_proxy_alone(launcher: Launcher, data_dir: Path) -> None:
    env = {"MEMHUB_GATEWAY_API_KEY": GATEWAY_KEY}
    init = run_cli("init", "--data-dir", str(data_dir), "--service-id", SPACE, env=env)
    assert init.returncode == 0, init.stderr
    user_key = re.search(r"user_key: (\S+)", init.stdout).group(1)  # type: ignore[union-attr]
    with FakeUpstream() as upstream:
        args = ["proxy", "--host", HOST, "--port", PORT_PLACEHOLDER, "--data-dir", str(data_dir)]
        server = launcher.start(
            args,
            env={**env, "MEMHUB_PROXY_OPENAI_BASE_URL": upstream.base_url, "MEMHUB_PROXY_OPENAI_API_KEY": "sk-up"},
            data_dir=data_dir,
        )
        client = openai.OpenAI(api_key=user_key, base_url=f"{server.url}/proxy/{SPACE}/v1", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "hello"}]
        )
        assert raw.parse().choices[0].message.content == "ok from upstream"
        # The admin's only team and agent are the turn's scope: the memory tools are in the prompt.
        assert raw.headers["x-memhub-memory"] == "injected; recall=none"  # per-turn recall found nothing yet
        [sent] = upstream.turns("/v1/chat/completions")
        assert "<tdai_memory_tools>" in sent.json["messages"][0]["content"]
        assert sent.headers["authorization"] == "Bearer sk-up"
        with httpx.Client(base_url=server.url) as http:
            assert http.get("/health").status_code == 200
            data_plane = http.post("/v3/conversation/add", json={}, headers={"authorization": f"Bearer {GATEWAY_KEY}"})
            assert data_plane.status_code == 404  # the gateway's own routes are not served here
            bridge = http.post("/memory-bridge/v3/atomic/search", json={"query": "x"})
            assert bridge.status_code == 401  # mounted, and it wants a session token
        server.stop()
        assert "Application shutdown complete" in server.stderr  # the proxy's connections closed in order
