"""memhub: a team-level memory hub for AI agents."""

__version__ = "0.1.0"
