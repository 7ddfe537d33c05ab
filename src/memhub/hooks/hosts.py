"""`memhub mcp install <host>`: the memhub MCP server merged into an agent host's MCP config.

| host | `--project` file | `--user` file | servers key | a secret in a project file |
|---|---|---|---|---|
| claude-code | `.mcp.json` | `~/.claude.json` | `mcpServers` | `${MEMHUB_API_KEY}` (Claude Code expands it) |
| cursor | `.cursor/mcp.json` | `~/.cursor/mcp.json` | `mcpServers` | `${env:MEMHUB_API_KEY}` |
| vscode | `.vscode/mcp.json` | the profile's `mcp.json` | `servers` | `${input:memhub-api-key}` (VS Code asks once) |
| claude-desktop | — | `claude_desktop_config.json` | `mcpServers` | — |

By default the host launches `memhub mcp` (stdio) with the connection settings in its `env`; `--http` points it at
the gateway's `/mcp` with the key in an `Authorization` header (Claude Desktop only runs local servers, and
`memhub mcp --url …` already reaches a remote gateway). A user-scope file gets the values; a project file, meant
to be committed, gets a reference to the environment instead of a key. Only the `memhub` entry is written or
removed; every other server and setting stays.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub.hooks import jsonfile
from memhub.sdk.connection import ENVIRONMENT, HEADERS

HOSTS = ("claude-code", "cursor", "vscode", "claude-desktop")
SERVER_NAME = "memhub"
SECRET_VARIABLES = ("MEMHUB_API_KEY", "MEMHUB_USER_KEY")
VSCODE_INPUTS = {"MEMHUB_API_KEY": "memhub-api-key", "MEMHUB_USER_KEY": "memhub-user-key"}


@dataclass(frozen=True, slots=True)
class Target:
    """Where a host keeps its MCP servers, and how it spells an environment reference."""

    path: Path
    servers_key: str
    project: bool


def _config_home() -> Path:
    configured = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(configured) if configured else Path.home() / ".config"


def _app_data(name: str) -> Path:
    """A desktop app's per-user config dir on this platform."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / name
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / name
    return _config_home() / name


def target(host: str, *, user: bool, project_dir: Path) -> Target:
    """The config file `install` writes for a host and scope; ValueError naming what is wrong."""
    if host not in HOSTS:
        raise ValueError(f"host: must be one of {', '.join(HOSTS)} (got {host!r})")
    if host == "claude-desktop":
        if not user:
            raise ValueError("--project: Claude Desktop has no project config; use --user")
        return Target(_app_data("Claude") / "claude_desktop_config.json", "mcpServers", False)
    if host == "claude-code":
        path = Path.home() / ".claude.json" if user else project_dir / ".mcp.json"
        return Target(path, "mcpServers", not user)
    if host == "cursor":
        path = Path.home() / ".cursor" / "mcp.json" if user else project_dir / ".cursor" / "mcp.json"
        return Target(path, "mcpServers", not user)
    path = _app_data("Code") / "User" / "mcp.json" if user else project_dir / ".vscode" / "mcp.json"
    return Target(path, "servers", not user)


def _reference(host: str, variable: str) -> str:
    if host == "cursor":
        return "${env:" + variable + "}"
    if host == "vscode":
        return "${input:" + VSCODE_INPUTS[variable] + "}"
    return "${" + variable + "}"


def server_entry(
    host: str, *, project: bool, command: list[str], env: Mapping[str, str], http: bool
) -> tuple[dict[str, Any], list[str]]:
    """The host's `memhub` server entry, and the secret variables it references instead of holding."""
    referenced: list[str] = []
    values = dict(env)
    if project:
        for name in SECRET_VARIABLES:
            if name in values:
                values[name] = _reference(host, name)
                referenced.append(name)
    if http:
        if host == "claude-desktop":
            raise ValueError(
                "--http: Claude Desktop runs local servers only; `memhub mcp --url <gateway>` reaches a remote one"
            )
        url = values.get("MEMHUB_URL")
        if not url:
            raise ValueError("--url: required with --http (the gateway whose /mcp the host should call)")
        key = values.get("MEMHUB_API_KEY")
        if not key:
            raise ValueError("--key: required with --http (sent as the Authorization header)")
        headers = {"Authorization": f"Bearer {key}"}
        for variable, header in _HEADERS.items():
            if values.get(variable):
                headers[header] = values[variable]
        entry: dict[str, Any] = {"url": url.rstrip("/") + "/mcp", "headers": headers}
        if host in ("claude-code", "vscode"):
            entry = {"type": "http", **entry}
        return entry, referenced
    entry = {"command": command[0], "args": [*command[1:], "mcp"]}
    if host in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    if values:
        entry["env"] = values
    return entry, referenced


# The identity a `--http` entry sends beside the key, as headers, keyed by the variable that holds each.
_HEADERS = {ENVIRONMENT[name]: HEADERS[name] for name in ("service_id", "team_id", "agent_id", "user_id", "user_key")}


def install(
    host: str, *, user: bool, project_dir: Path, command: list[str], env: Mapping[str, str], http: bool
) -> list[str]:
    """Write (or replace) the `memhub` server in the host's config; the lines to print."""
    where = target(host, user=user, project_dir=project_dir)
    entry, referenced = server_entry(host, project=where.project, command=command, env=env, http=http)
    data = jsonfile.load(where.path)
    servers = jsonfile.section(data, where.servers_key, where.path)
    lines: list[str] = []
    if servers.get(SERVER_NAME) == entry:
        lines.append(f"{where.path}: the memhub server is already configured")
    else:
        verb = "replaced" if SERVER_NAME in servers else "added"
        servers[SERVER_NAME] = entry
        if host == "vscode" and referenced:
            _vscode_inputs(data, referenced, where.path)
        holds_secret = not where.project and any(env.get(name) for name in SECRET_VARIABLES)
        jsonfile.save(where.path, data, private=holds_secret)
        lines.append(f"{where.path}: {verb} the memhub server ({'HTTP' if http else 'stdio'})")
        if holds_secret:
            lines.append(f"{where.path} holds your key: it is readable by you only; do not share it.")
    if referenced:
        lines.append(
            f"This file may be committed: it names {', '.join(referenced)} instead of holding the value; "
            + ("VS Code asks for it once." if host == "vscode" else "set it in the environment the host starts from.")
        )
    return lines


def uninstall(host: str, *, user: bool, project_dir: Path) -> list[str]:
    """Remove the `memhub` server (and the VS Code inputs install added) from the host's config."""
    where = target(host, user=user, project_dir=project_dir)
    data = jsonfile.load(where.path)
    servers = data.get(where.servers_key)
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return [f"{where.path}: no memhub server"]
    del servers[SERVER_NAME]
    inputs = data.get("inputs")
    if host == "vscode" and isinstance(inputs, list):
        ours = set(VSCODE_INPUTS.values())
        data["inputs"] = [i for i in inputs if not (isinstance(i, Mapping) and i.get("id") in ours)]
        if not data["inputs"]:
            del data["inputs"]
    jsonfile.save(where.path, data)
    return [f"{where.path}: removed the memhub server"]


def _vscode_inputs(data: dict[str, Any], referenced: list[str], path: Path) -> None:
    inputs = data.setdefault("inputs", [])
    if not isinstance(inputs, list):
        raise jsonfile.ConfigFileError(f"{path}: 'inputs' must be a list; nothing was changed")
    present = {i.get("id") for i in inputs if isinstance(i, Mapping)}
    for name in referenced:
        if VSCODE_INPUTS[name] not in present:
            description = "memhub key" if name == "MEMHUB_API_KEY" else "memhub user key"
            inputs.append(
                {"type": "promptString", "id": VSCODE_INPUTS[name], "description": description, "password": True}
            )
