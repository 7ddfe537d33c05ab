"""The management plane's route tables: `/v3/meta/*` (55 routes plus audit/list) and `/v3/internal/meta/*`."""

from memhub.api.routes.meta import agents, assets, config, internal, teams, users

META_ROUTES = [*users.ROUTES, *teams.ROUTES, *agents.ROUTES, *assets.ROUTES, *config.ROUTES]
INTERNAL_ROUTES = internal.ROUTES

__all__ = ["INTERNAL_ROUTES", "META_ROUTES"]
