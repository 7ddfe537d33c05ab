"""Instance quotas (the original's defaults: 500 users, 100 teams, 20 active keys per user)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Quotas:
    """Limits per instance (service id) and per user."""

    max_users: int = 500
    max_teams: int = 100
    max_active_keys: int = 20
