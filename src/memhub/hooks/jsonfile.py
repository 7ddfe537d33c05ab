"""The JSON config files of agent hosts, read and written without losing what others put there.

A file that exists but is not a JSON object is never overwritten: the user's config comes first, and a command
that cannot merge into it stops with an error naming the file. Writes go to a file beside it that is then
renamed over it, so an interrupted write leaves the old file whole; a file holding a secret is created 0600.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any


class ConfigFileError(ValueError):
    """A config file that cannot be merged into (unreadable or not a JSON object)."""


def load(path: Path) -> dict[str, Any]:
    """The file's object; `{}` when it does not exist or is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror})") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigFileError(f"{path}: not valid JSON ({exc}); fix or move it, nothing was changed") from exc
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: must hold a JSON object; nothing was changed")
    return data


def save(path: Path, data: dict[str, Any], *, private: bool = False) -> None:
    """Write `data` as indented JSON; `private` files are readable by their owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".memhub-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    if path.exists() and not private:
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """`data[key]` as an object (created when absent); ConfigFileError when it is something else."""
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigFileError(f"{path}: {key!r} must be a JSON object; nothing was changed")
    return value


def memhub_command() -> list[str]:
    """How a host should start memhub: `memhub` when it is on PATH (portable, fit for a committed file), else the
    `memhub` script of this environment by its absolute path (a host started outside it still finds it), else
    this Python running the CLI module."""
    if shutil.which("memhub"):
        return ["memhub"]
    script = Path(sys.executable).parent / "memhub"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "memhub.cli"]


def shell_command(argv: list[str]) -> str:
    """`argv` as one shell command line (Claude Code runs hook commands through a shell)."""
    return shlex.join(argv)
