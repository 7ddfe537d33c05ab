"""The knowledge service's routes: the management routes of each kind the registry holds under `/v3/<kind>`,
then the agent-facing `/v3/tools` and the `/v3/knowledge` registry. A new registry kind adds its routes module
here (skills, outside the registry, mount their own `/v3/skill/*` routes)."""

from __future__ import annotations

from memhub.api.guarded import GuardedRoute
from memhub.api.routes import code_graph, knowledge, tools, wiki
from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.kinds import REGISTRY_KINDS
from memhub.knowledge.wiki.kind import WIKI

ROUTES_BY_KIND: dict[str, list[GuardedRoute]] = {
    WIKI.name: wiki.ROUTES,
    CODE_GRAPH.name: code_graph.ROUTES,
}


def knowledge_routes() -> list[tuple[str, list[GuardedRoute], str]]:
    """`(prefix, routes, tag)` of every knowledge route group, in mounting order: the kinds in registry order."""
    return [
        *((kind.route_prefix, ROUTES_BY_KIND[kind.name], kind.name) for kind in REGISTRY_KINDS),
        ("/v3/tools", tools.ROUTES, "tools"),
        ("/v3/knowledge", [*knowledge.ROUTES, *knowledge.OFFER_ROUTES], "knowledge"),
    ]
