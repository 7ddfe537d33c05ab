"""Agent hooks: Claude Code's SessionStart, UserPromptSubmit, Stop and PreCompact, run as `memhub hooks run`."""
