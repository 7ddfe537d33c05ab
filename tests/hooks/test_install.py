"""`memhub hooks install|uninstall claude-code` and `memhub mcp install <host>` on existing config files: merged,
never clobbering, idempotent, no key in a file meant to be committed, uninstall removing exactly what was added."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.hooks.conftest import clean_env, memhub

KEY = "mh-gw-install-test-key-0123456789"
CONNECTION = ["--url", "http://127.0.0.1:8420", "--key", KEY, "--service-id", "svc-1"]
THEIR_HOOKS = {
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./scripts/lint-prompt.sh"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/guard.sh"}]}],
    },
    "permissions": {"allow": ["Bash(npm test)"]},
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def cli(home: Path, project: Path, *args: str) -> Any:
    env = clean_env({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")})
    return memhub(*args, "--project-dir", str(project), env=env, cwd=project)


def write(path: Path, data: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_project_install_merges_keeps_the_key_out_and_uninstall_restores(home: Path, project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    original = write(settings, THEIR_HOOKS)

    done = cli(home, project, "hooks", "install", "claude-code", "--project", *CONNECTION, "--command", "memhub")
    assert done.returncode == 0, done.stderr
    merged = read(settings)
    assert commands(merged, "UserPromptSubmit") == [
        "./scripts/lint-prompt.sh",
        "memhub hooks run user-prompt-submit",
    ]
    assert commands(merged, "PreToolUse") == ["./scripts/guard.sh"]
    for event, hook in [("SessionStart", "session-start"), ("Stop", "stop"), ("SessionEnd", "stop")]:
        assert commands(merged, event) == [f"memhub hooks run {hook}"]
    assert commands(merged, "PreCompact") == ["memhub hooks run pre-compact"]
    assert merged["permissions"] == THEIR_HOOKS["permissions"]
    assert KEY not in settings.read_text(encoding="utf-8")
    local = project / ".claude" / "settings.local.json"
    assert read(local)["env"] == {
        "MEMHUB_URL": "http://127.0.0.1:8420",
        "MEMHUB_API_KEY": KEY,
        "MEMHUB_SERVICE_ID": "svc-1",
    }
    assert stat.S_IMODE(local.stat().st_mode) == 0o600
    assert "settings.local.json" in done.stdout

    # Installing again changes nothing.
    before = settings.read_text(encoding="utf-8")
    again = cli(home, project, "hooks", "install", "claude-code", "--project", *CONNECTION, "--command", "memhub")
    assert again.returncode == 0 and "already installed" in again.stdout
    assert settings.read_text(encoding="utf-8") == before

    removed = cli(home, project, "hooks", "uninstall", "claude-code", "--project")
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text(encoding="utf-8") == original
    assert "env" not in read(local)


def test_a_new_launch_command_replaces_the_old_entry(home: Path, project: Path) -> None:
    cli(home, project, "hooks", "install", "claude-code", "--command", "/old/venv/bin/memhub")
    cli(home, project, "hooks", "install", "claude-code", "--command", "memhub")
    merged = read(project / ".claude" / "settings.json")
    assert commands(merged, "Stop") == ["memhub hooks run stop"]
    assert not (project / ".claude" / "settings.local.json").exists()  # no flags: nothing to keep there


def test_user_install_writes_the_user_settings(home: Path, project: Path) -> None:
    done = cli(home, project, "hooks", "install", "claude-code", "--user", *CONNECTION, "--command", "memhub")
    assert done.returncode == 0, done.stderr
    settings = home / ".claude" / "settings.json"
    data = read(settings)
    assert data["env"]["MEMHUB_API_KEY"] == KEY
    assert commands(data, "UserPromptSubmit") == ["memhub hooks run user-prompt-submit"]
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert not (project / ".claude").exists()

    assert cli(home, project, "hooks", "uninstall", "claude-code", "--user").returncode == 0
    assert read(settings) == {}


def test_a_settings_file_that_is_not_json_is_left_alone(home: Path, project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ broken", encoding="utf-8")
    done = cli(home, project, "hooks", "install", "claude-code")
    assert done.returncode == 2
    assert "settings.json: not valid JSON" in done.stderr
    assert settings.read_text(encoding="utf-8") == "{ broken"


OTHER_SERVER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}


@pytest.mark.parametrize(
    ("host", "relative", "servers_key", "reference"),
    [
        ("claude-code", ".mcp.json", "mcpServers", "${MEMHUB_API_KEY}"),
        ("cursor", ".cursor/mcp.json", "mcpServers", "${env:MEMHUB_API_KEY}"),
        ("vscode", ".vscode/mcp.json", "servers", "${input:memhub-api-key}"),
    ],
)
def test_mcp_install_project_scope(
    home: Path, project: Path, host: str, relative: str, servers_key: str, reference: str
) -> None:
    config = project / relative
    original = write(config, {servers_key: {"files": OTHER_SERVER}})

    done = cli(home, project, "mcp", "install", host, *CONNECTION, "--command", "memhub")
    assert done.returncode == 0, done.stderr
    data = read(config)
    assert data[servers_key]["files"] == OTHER_SERVER
    entry = data[servers_key]["memhub"]
    assert (entry["command"], entry["args"]) == ("memhub", ["mcp"])
    assert entry["env"] == {
        "MEMHUB_URL": "http://127.0.0.1:8420",
        "MEMHUB_API_KEY": reference,
        "MEMHUB_SERVICE_ID": "svc-1",
    }
    assert KEY not in config.read_text(encoding="utf-8")
    if host in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"
    if host == "vscode":
        assert data["inputs"] == [
            {"type": "promptString", "id": "memhub-api-key", "description": "memhub key", "password": True}
        ]

    assert cli(home, project, "mcp", "uninstall", host).returncode == 0
    assert config.read_text(encoding="utf-8") == original


def test_mcp_install_http_for_claude_code_user_scope(home: Path, project: Path) -> None:
    config = home / ".claude.json"
    write(config, {"numStartups": 3, "mcpServers": {"files": OTHER_SERVER}})

    done = cli(home, project, "mcp", "install", "claude-code", "--user", "--http", *CONNECTION)
    assert done.returncode == 0, done.stderr
    data = read(config)
    assert data["numStartups"] == 3 and data["mcpServers"]["files"] == OTHER_SERVER
    assert data["mcpServers"]["memhub"] == {
        "type": "http",
        "url": "http://127.0.0.1:8420/mcp",
        "headers": {"Authorization": f"Bearer {KEY}", "x-tdai-service-id": "svc-1"},
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_mcp_install_claude_desktop(home: Path, project: Path) -> None:
    done = cli(home, project, "mcp", "install", "claude-desktop", "--user", *CONNECTION, "--command", "memhub")
    assert done.returncode == 0, done.stderr
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    entry = read(config)["mcpServers"]["memhub"]
    assert entry == {
        "command": "memhub",
        "args": ["mcp"],
        "env": {"MEMHUB_URL": "http://127.0.0.1:8420", "MEMHUB_API_KEY": KEY, "MEMHUB_SERVICE_ID": "svc-1"},
    }

    for refused, message in [
        (["--project"], "--project: Claude Desktop has no project config"),
        (["--user", "--http"], "--http: Claude Desktop runs local servers only"),
    ]:
        before = config.read_text(encoding="utf-8")
        bad = cli(home, project, "mcp", "install", "claude-desktop", *refused, *CONNECTION)
        assert bad.returncode == 2 and message in bad.stderr
        assert config.read_text(encoding="utf-8") == before


def test_mcp_install_refuses_bad_input_and_writes_nothing(home: Path, project: Path) -> None:
    unknown = cli(home, project, "mcp", "install", "emacs")
    assert unknown.returncode == 2 and "host: must be one of" in unknown.stderr
    no_key = cli(home, project, "mcp", "install", "cursor", "--http", "--url", "http://127.0.0.1:8420")
    assert no_key.returncode == 2 and "--key: required with --http" in no_key.stderr
    assert list(project.iterdir()) == []
