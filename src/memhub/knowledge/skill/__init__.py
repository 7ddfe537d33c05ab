"""Skills: versioned SKILL.md documents agents share, and the mining that drafts them from agent work."""
