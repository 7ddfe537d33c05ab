"""`memhub hooks install|uninstall claude-code`: memhub's hook entries merged into Claude Code's settings.

| scope | hooks go to | connection settings (`env`) go to |
|---|---|---|
| `--project` | `.claude/settings.json` (shared, committed) | `.claude/settings.local.json` (personal, git-ignored) |
| `--user` | `~/.claude/settings.json` | the same file |

A key is never written into a file meant to be committed. Existing hooks are kept: memhub's entries are added as
their own matcher groups, recognised later by their command (`… memhub … hooks run <event>`), so installing again
changes nothing and uninstalling removes exactly those entries (and the `MEMHUB_*` connection variables from the
file install writes them to), leaving every other hook and setting as it was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memhub.hooks import jsonfile
from memhub.sdk.connection import ENVIRONMENT

# Claude Code event → (memhub hook event, Claude Code's timeout for it in seconds; each is above the hook's own
# deadline in memhub.hooks.run, so the hook gives up and exits 0 before Claude Code would kill it).
EVENTS: dict[str, tuple[str, int]] = {
    "SessionStart": ("session-start", 10),
    "UserPromptSubmit": ("user-prompt-submit", 8),
    "Stop": ("stop", 30),
    "SessionEnd": ("stop", 30),
    "PreCompact": ("pre-compact", 30),
}
_OURS = re.compile(r"memhub\S*\s.*\bhooks\s+run\s+(session-start|user-prompt-submit|stop|pre-compact)\b")
CONNECTION_VARIABLES = frozenset(ENVIRONMENT.values())


@dataclass
class Change:
    """What an install or uninstall did, file by file, for the command to print."""

    lines: list[str] = field(default_factory=list)

    def note(self, line: str) -> None:
        self.lines.append(line)


def config_dir() -> Path:
    """Claude Code's user config dir (`CLAUDE_CONFIG_DIR`, else `~/.claude`)."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def settings_paths(user: bool, project_dir: Path) -> tuple[Path, Path]:
    """(the file for the hooks, the file for the connection env) of a scope."""
    if user:
        path = config_dir() / "settings.json"
        return path, path
    return project_dir / ".claude" / "settings.json", project_dir / ".claude" / "settings.local.json"


def is_ours(handler: Any) -> bool:
    """Whether a hook handler is one `install` wrote (told by its command)."""
    return (
        isinstance(handler, Mapping)
        and handler.get("type") == "command"
        and isinstance(handler.get("command"), str)
        and _OURS.search(handler["command"]) is not None
    )


def install(
    *, user: bool, project_dir: Path, command: list[str], env: Mapping[str, str], change: Change | None = None
) -> Change:
    """Merge memhub's hooks (and the given connection variables) into the scope's settings."""
    change = change or Change()
    hooks_path, env_path = settings_paths(user, project_dir)
    data = jsonfile.load(hooks_path)
    env_data = data if env_path == hooks_path else jsonfile.load(env_path)
    hooks = jsonfile.section(data, "hooks", hooks_path)
    added, kept = [], []
    for event, (hook_event, timeout) in EVENTS.items():
        wanted = {"type": "command", "command": jsonfile.shell_command([*command, "hooks", "run", hook_event])}
        wanted["timeout"] = timeout
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise jsonfile.ConfigFileError(f"{hooks_path}: hooks.{event} must be a list; nothing was changed")
        mine = [h for g in groups if isinstance(g, Mapping) for h in (g.get("hooks") or []) if is_ours(h)]
        if mine == [wanted]:
            kept.append(event)
            continue
        _remove_ours(groups)
        groups.append({"hooks": [wanted]})
        added.append(event)
    written_env = _merge_env(env_data, env, env_path)
    if added or written_env:
        jsonfile.save(hooks_path, data, private=user and bool(written_env))
        if env_path != hooks_path and written_env:
            jsonfile.save(env_path, env_data, private=True)
    if added:
        change.note(f"{hooks_path}: memhub hooks on {', '.join(added)}")
    if kept:
        change.note(f"{hooks_path}: already installed on {', '.join(kept)}")
    if written_env:
        change.note(f"{env_path}: env {', '.join(written_env)} (owner-only file)")
    elif not env:
        change.note(
            "No connection flags given: the hooks read MEMHUB_URL, MEMHUB_API_KEY, MEMHUB_SERVICE_ID (and the ids) "
            "from Claude Code's environment."
        )
    if not user and env:
        change.note(f"The key and ids went to {env_path.name}, not the shared {hooks_path.name}: never commit it.")
    return change


def uninstall(*, user: bool, project_dir: Path, change: Change | None = None) -> Change:
    """Remove memhub's hook entries and connection variables from the scope's settings; nothing else."""
    change = change or Change()
    hooks_path, env_path = settings_paths(user, project_dir)
    data = jsonfile.load(hooks_path)
    hooks = data.get("hooks")
    removed: list[str] = []
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if isinstance(groups, list) and _remove_ours(groups):
                removed.append(event)
                if not groups:
                    del hooks[event]
        if not hooks:
            del data["hooks"]
    env_data = data if env_path == hooks_path else jsonfile.load(env_path)
    dropped = _drop_env(env_data)
    if removed or (dropped and env_path == hooks_path):
        jsonfile.save(hooks_path, data)
    if dropped and env_path != hooks_path:
        jsonfile.save(env_path, env_data, private=True)
    change.note(
        f"{hooks_path}: removed memhub hooks from {', '.join(removed)}" if removed else f"{hooks_path}: no memhub hooks"
    )
    if dropped:
        change.note(f"{env_path}: removed env {', '.join(dropped)}")
    return change


def _remove_ours(groups: list[Any]) -> bool:
    """Take memhub's handlers out of an event's matcher groups (and the groups left empty); whether any were."""
    found = False
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = [h for h in group["hooks"] if not is_ours(h)]
        if len(kept) != len(group["hooks"]):
            found = True
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
    return found


def _merge_env(data: dict[str, Any], env: Mapping[str, str], path: Path) -> list[str]:
    if not env:
        return []
    section = jsonfile.section(data, "env", path)
    changed = [name for name, value in env.items() if section.get(name) != value]
    section.update(env)
    return changed


def _drop_env(data: dict[str, Any]) -> list[str]:
    section = data.get("env")
    if not isinstance(section, dict):
        return []
    dropped = [name for name in section if name in CONNECTION_VARIABLES]
    for name in dropped:
        del section[name]
    if not section:
        del data["env"]
    return dropped
