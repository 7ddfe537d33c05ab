"""Hooks as Claude Code runs them: `python -m memhub.cli hooks run <event>` as a subprocess, its JSON on stdin,
against a real gateway served over HTTP (uvicorn on a loopback socket), with a transcript JSONL written the way
Claude Code writes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GATEWAY_KEY, SERVICE, Gateway, build_gateway
from tests.served import Served, serve

SCOPE = {"team_id": "team-h", "agent_id": "agent-h", "user_id": "user-h"}
CLI_TIMEOUT = 120.0  # a failure bound only: a healthy hook takes well under a second


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without memhub settings (a developer's shell may carry some), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "CLAUDE_"))}
    env.update(extra or {})
    return env


def memhub(
    *args: str, stdin: str = "", env: Mapping[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """One `memhub` command through the interpreter running the tests."""
    return subprocess.run(
        [sys.executable, "-m", "memhub.cli", *args],
        input=stdin,
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )


@dataclass
class HookRig:
    """A served gateway, the environment the hooks get (as Claude Code's settings `env` would give it), and the
    hooks' state dir."""

    gateway: Gateway
    served: Served
    state_dir: Path
    env: dict[str, str]

    def run(self, event: str, payload: Mapping[str, Any]) -> subprocess.CompletedProcess[str]:
        return memhub("hooks", "run", event, stdin=json.dumps(payload), env=self.env)

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's L0 messages as the gateway stores them, oldest first."""
        body = {**SCOPE, "session_id": session_id, "limit": 100}
        return list(self.gateway.ok("/v3/conversation/query", body)["messages"])

    def log(self) -> str:
        path = self.state_dir / "hooks.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[HookRig]:
    gateway = build_gateway(tmp_path / "data")
    served = serve(gateway.client.app)
    state_dir = tmp_path / "hooks-state"
    env = clean_env(
        {
            "MEMHUB_URL": served.url,
            "MEMHUB_API_KEY": GATEWAY_KEY,
            "MEMHUB_SERVICE_ID": SERVICE,
            "MEMHUB_TEAM_ID": SCOPE["team_id"],
            "MEMHUB_AGENT_ID": SCOPE["agent_id"],
            "MEMHUB_USER_ID": SCOPE["user_id"],
            "MEMHUB_HOOKS_DIR": str(state_dir),
        }
    )
    yield HookRig(gateway, served, state_dir, env)
    served.stop()
    gateway.close()


class Transcript:
    """A Claude Code session transcript: one JSON entry per line, appended as the session goes."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.count = 0
        path.write_text("", encoding="utf-8")

    def _entry(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        self.count += 1
        return {
            "parentUuid": None,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/project",
            "sessionId": self.session_id,
            "version": "2.1.0",
            "type": kind,
            "message": message,
            "uuid": f"uuid-{self.count}",
            "timestamp": f"2026-11-20T10:{self.count // 60:02d}:{self.count % 60:02d}.000Z",
            **extra,
        }

    def append(self, *entries: dict[str, Any], partial: str = "") -> None:
        with self.path.open("a", encoding="utf-8") as f:
            for entry in entries:
                f.write(json.dumps(entry) + "\n")
            f.write(partial)

    def user(self, text: str, **extra: Any) -> dict[str, Any]:
        return self._entry("user", {"role": "user", "content": text}, **extra)

    def tool_result(self, tool_use_id: str, text: str) -> dict[str, Any]:
        content = [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}]
        return self._entry("user", {"role": "user", "content": content}, toolUseResult={"stdout": text})

    def assistant(self, message_id: str, block: dict[str, Any], **extra: Any) -> dict[str, Any]:
        message = {"id": message_id, "type": "message", "role": "assistant", "model": "claude", "content": [block]}
        return self._entry("assistant", message, requestId=f"req-{message_id}", **extra)

    def payload(self, event: str, **extra: Any) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "transcript_path": str(self.path),
            "cwd": "/work/project",
            "permission_mode": "default",
            "hook_event_name": event,
            **extra,
        }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": "sig"}


def tool_use(tool_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
