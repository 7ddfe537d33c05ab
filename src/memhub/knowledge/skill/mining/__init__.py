"""Skill mining: agent work buffered per session, cut into durable archives, reviewed into skills."""
