"""The `memhub` command (memhub.cli.app); `memhub.cli.integrations` holds `memhub mcp` and `memhub hooks`."""

from memhub.cli.app import app

__all__ = ["app"]
