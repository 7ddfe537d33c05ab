"""The `memhub` command (memhub.cli.commands); `memhub.cli.integrations` holds `memhub mcp` and `memhub hooks`.

`app` is imported on first use, so `memhub.cli.entry` (the console script) can run a Claude Code hook without
loading the command tree.
"""

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from memhub.cli.commands import app

        return app
    raise AttributeError(f"module 'memhub.cli' has no attribute {name!r}")
