"""Skills: versioned SKILL.md documents with resource files, the fourth memory asset a team's agents share."""
